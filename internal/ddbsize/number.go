package ddbsize

import (
	"fmt"
	"strconv"
	"strings"
)

// Number limits of DynamoDB's N type.
const (
	// MaxNumberDigits is the most significant digits a number may have once
	// leading and trailing zeros are trimmed.
	MaxNumberDigits = 38
	// MinNumberExp and MaxNumberExp bound the decimal exponent of a non-zero
	// number in scientific notation (d.ddd × 10^exp): DynamoDB accepts
	// magnitudes from 1E-130 to 9.9999999999999999999999999999999999999E+125.
	MinNumberExp = -130
	MaxNumberExp = 125
)

// Number is a parsed DynamoDB number: the value is
// 0 when Digits is empty, else ±D.DDD… × 10^Exp where D.DDD… are Digits with
// the decimal point after the first digit.
//
// The zero value is the number 0.
type Number struct {
	Neg    bool   // true for a negative non-zero number
	Digits string // significant digits, no leading or trailing zeros; "" for zero
	Exp    int    // decimal exponent of the first digit
}

// numScan is what ItemSize needs from a number, found without allocating.
type numScan struct {
	neg    bool
	digits int // significant digits; 0 for zero
	exp    int
}

// ParseNumber parses s as DynamoDB does: an optional minus sign, decimal digits with
// at most one point, an optional exponent (e or E, optional sign, digits).
// It returns an error wrapping ErrInvalidNumber for anything else, for more
// than MaxNumberDigits significant digits and for a magnitude outside
// 1E-130..9.99…E+125.
func ParseNumber(s string) (Number, error) {
	sc, err := scanNumber(s)
	if err != nil {
		return Number{}, err
	}
	if sc.digits == 0 {
		return Number{}, nil
	}
	var b strings.Builder
	b.Grow(sc.digits)
	started := false
	for i := 0; i < len(s) && b.Len() < sc.digits; i++ {
		c := s[i]
		if c == 'e' || c == 'E' {
			break
		}
		if c < '0' || c > '9' || (!started && c == '0') {
			continue
		}
		started = true
		b.WriteByte(c)
	}
	return Number{Neg: sc.neg, Digits: b.String(), Exp: sc.exp}, nil
}

// Size is the number of bytes DynamoDB counts for the number: 1 for zero,
// else one exponent byte plus one byte per base-100 digit pair (pairs are
// aligned on the decimal point, so 1.5 takes two pairs, 15 one), plus one byte
// for a negative number.
func (n Number) Size() int {
	return numScan{neg: n.Neg, digits: len(n.Digits), exp: n.Exp}.size()
}

// String returns the canonical form: "0", or the digits in scientific
// notation such as "-1.25E-7" or "3E+2". Equal numbers have equal strings.
func (n Number) String() string {
	if n.Digits == "" {
		return "0"
	}
	var b strings.Builder
	if n.Neg {
		b.WriteByte('-')
	}
	b.WriteByte(n.Digits[0])
	if len(n.Digits) > 1 {
		b.WriteByte('.')
		b.WriteString(n.Digits[1:])
	}
	b.WriteByte('E')
	if n.Exp >= 0 {
		b.WriteByte('+')
	}
	b.WriteString(strconv.Itoa(n.Exp))
	return b.String()
}

func (sc numScan) size() int {
	if sc.digits == 0 {
		return 1
	}
	size := 1 + (sc.digits+1)/2
	// An even digit count starting on the low half of a pair spills into one
	// more pair: 1.5 is 01|50, while 15 is a single pair.
	if sc.digits%2 == 0 && sc.exp&1 == 0 {
		size++
	}
	if sc.neg {
		size++
	}
	return size
}

// expCap keeps exponent arithmetic far from int overflow; anything beyond it
// is out of range anyway.
const expCap = 1 << 30

func scanNumber(s string) (numScan, error) {
	var sc numScan
	i := 0
	// A leading '+' is refused: dynalite, written against the service's
	// answers, rejects it (DynamoDB Local accepts it).
	if i < len(s) && s[i] == '-' {
		sc.neg = true
		i++
	}
	var (
		nDigits   int // digits seen in the mantissa
		point     = -1
		first     = -1 // index (among mantissa digits) of the first non-zero digit
		last      = -1 // index of the last non-zero digit
		intDigits int
	)
	for ; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= '0' && c <= '9':
			if c != '0' {
				if first < 0 {
					first = nDigits
				}
				last = nDigits
			}
			nDigits++
			continue
		case c == '.' && point < 0:
			point = nDigits
			continue
		}
		break
	}
	if nDigits == 0 {
		return sc, numberError(s, "no digits")
	}
	intDigits = nDigits
	if point >= 0 {
		intDigits = point
	}
	exp := 0
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		eneg := false
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			eneg = s[i] == '-'
			i++
		}
		start := i
		for ; i < len(s) && s[i] >= '0' && s[i] <= '9'; i++ {
			if exp < expCap {
				exp = exp*10 + int(s[i]-'0')
			}
		}
		if i == start {
			return sc, numberError(s, "exponent has no digits")
		}
		if eneg {
			exp = -exp
		}
	}
	if i != len(s) {
		return sc, numberError(s, fmt.Sprintf("unexpected %q at offset %d", s[i], i))
	}
	if first < 0 {
		sc.neg = false
		return sc, nil
	}
	sc.digits = last - first + 1
	sc.exp = intDigits - first - 1 + exp
	if sc.digits > MaxNumberDigits {
		return sc, numberError(s, fmt.Sprintf("%d significant digits, limit %d", sc.digits, MaxNumberDigits))
	}
	if sc.exp < MinNumberExp {
		return sc, numberError(s, "magnitude below 1E-130")
	}
	if sc.exp > MaxNumberExp {
		return sc, numberError(s, "magnitude above 9.9999999999999999999999999999999999999E+125")
	}
	return sc, nil
}

func numberError(s, why string) error {
	const show = 64
	if len(s) > show {
		s = s[:show] + "…"
	}
	return fmt.Errorf("%w %q: %s", ErrInvalidNumber, s, why)
}
