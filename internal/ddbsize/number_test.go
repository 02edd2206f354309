package ddbsize

import (
	"errors"
	"math/big"
	"math/rand/v2"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// refNumber is an independent model of DynamoDB numbers: syntax by regular
// expression, value by math/big, size by writing the plain decimal out and
// counting base-100 pairs aligned on the decimal point.
type refNumber struct {
	ok   bool
	size int
	val  *big.Rat
}

var numberSyntax = regexp.MustCompile(`^-?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?$`)

func refParse(s string) refNumber {
	if !numberSyntax.MatchString(s) {
		return refNumber{}
	}
	// big.Rat would happily build 1e999999999; reject absurd exponents
	// before asking it (they are out of range anyway).
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		e, err := strconv.Atoi(strings.TrimLeft(s[i+1:], "+"))
		if err != nil || e > 100000 || e < -100000 {
			if strings.Trim(s[:i], "+-0.") == "" {
				return refNumber{ok: true, size: 1, val: new(big.Rat)}
			}
			return refNumber{}
		}
	}
	r, ok := new(big.Rat).SetString(s)
	if !ok {
		return refNumber{}
	}
	neg := r.Sign() < 0
	abs := new(big.Rat).Abs(r)
	if abs.Sign() == 0 {
		return refNumber{ok: true, size: 1, val: r}
	}
	lo := new(big.Rat).SetFrac(big.NewInt(1), new(big.Int).Exp(big.NewInt(10), big.NewInt(130), nil))
	hi := new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(126), nil))
	if abs.Cmp(lo) < 0 || abs.Cmp(hi) >= 0 {
		return refNumber{}
	}
	plain := abs.FloatString(200)
	ip, fp, _ := strings.Cut(plain, ".")
	ip = strings.TrimLeft(ip, "0")
	fp = strings.TrimRight(fp, "0")
	sig := strings.Trim(ip+fp, "0")
	if len(sig) > MaxNumberDigits {
		return refNumber{}
	}
	if len(ip)%2 == 1 {
		ip = "0" + ip
	}
	if len(fp)%2 == 1 {
		fp += "0"
	}
	all := ip + fp
	pairs := len(all) / 2
	for len(all) >= 2 && all[:2] == "00" {
		all, pairs = all[2:], pairs-1
	}
	for len(all) >= 2 && all[len(all)-2:] == "00" {
		all, pairs = all[:len(all)-2], pairs-1
	}
	size := 1 + pairs
	if neg {
		size++
	}
	return refNumber{ok: true, size: size, val: r}
}

func checkAgainstModel(t *testing.T, s string) {
	t.Helper()
	ref := refParse(s)
	n, err := ParseNumber(s)
	if (err == nil) != ref.ok {
		t.Fatalf("ParseNumber(%q): got err %v, want ok=%v", s, err, ref.ok)
	}
	if err != nil {
		if !errors.Is(err, ErrInvalidNumber) {
			t.Fatalf("ParseNumber(%q): got %v, want ErrInvalidNumber", s, err)
		}
		return
	}
	if got := n.Size(); got != ref.size {
		t.Errorf("ParseNumber(%q).Size(): got %d, want %d", s, got, ref.size)
	}
	canon, ok := new(big.Rat).SetString(n.String())
	if !ok || canon.Cmp(ref.val) != 0 {
		t.Errorf("ParseNumber(%q).String() = %q: not the same value", s, n.String())
	}
	again, err := ParseNumber(n.String())
	if err != nil || again != n {
		t.Errorf("ParseNumber(%q) round trip: got %+v, %v, want %+v", n.String(), again, err, n)
	}
}

func TestParseNumberEdges(t *testing.T) {
	nines38 := strings.Repeat("9", 38)
	for _, s := range []string{
		"0", "-0", "+0", "0.000", "00", ".0", "0.", "0e999999999999",
		"1", "-1", "+1", "10", "100", "1000", "12", "123", "1234", "0.1", "0.01", ".5", "5.", "1.5", "15", "-1.5",
		"1E-130", "1e-130", "0.1E-129", "10E-131", "9.9E-131", "1E-131",
		"9." + nines38[1:] + "E+125", nines38 + "E+88", "1E+126", "1E126", "1E+125", "10E+124",
		nines38, nines38 + "9", "1" + strings.Repeat("0", 60), "1" + strings.Repeat("0", 125), "1" + strings.Repeat("0", 126),
		"0." + strings.Repeat("0", 40) + "1", "1." + strings.Repeat("0", 36) + "1", "1." + strings.Repeat("0", 37) + "1",
		"", "-", "+", ".", "e5", "1e", "1e+", "1.2.3", "1-", "--1", " 1", "1 ", "0x10", "Infinity", "NaN", "1_000", "١",
		"1e99999999999999999999", "1e-99999999999999999999",
	} {
		t.Run(s, func(t *testing.T) { checkAgainstModel(t, s) })
	}
}

func TestNumberFields(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Number
	}{
		{"0", Number{}},
		{"-0.00", Number{}},
		{"123", Number{Digits: "123", Exp: 2}},
		{"-0.0120", Number{Neg: true, Digits: "12", Exp: -2}},
		{"1002e3", Number{Digits: "1002", Exp: 6}},
		{"7.5E-3", Number{Digits: "75", Exp: -3}},
	} {
		got, err := ParseNumber(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("ParseNumber(%q): got %+v, %v, want %+v", tc.in, got, err, tc.want)
		}
	}
}

func TestParseNumberRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		checkAgainstModel(t, randomNumber(r))
	}
}

func randomNumber(r *rand.Rand) string {
	var b strings.Builder
	switch r.IntN(3) {
	case 0:
		b.WriteByte('-')
	case 1:
		if r.IntN(4) == 0 {
			b.WriteByte('+')
		}
	}
	for range r.IntN(4) {
		b.WriteByte('0')
	}
	nd := r.IntN(42)
	point := -1
	if r.IntN(2) == 0 {
		point = r.IntN(nd + 1)
	}
	for i := range nd {
		if i == point {
			b.WriteByte('.')
		}
		if r.IntN(3) == 0 {
			b.WriteByte('0')
		} else {
			b.WriteByte(byte('0' + r.IntN(10)))
		}
	}
	if point == nd {
		b.WriteByte('.')
	}
	if r.IntN(2) == 0 {
		b.WriteString([]string{"e", "E", "e+", "e-", "E-"}[r.IntN(5)])
		b.WriteString(strconv.Itoa(r.IntN(140)))
	}
	return b.String()
}

func FuzzParseNumber(f *testing.F) {
	for _, s := range []string{"0", "-1.5", "1E-130", "9.9E+125", "12345678901234567890123456789012345678", ".5", "5.", "1e", "--1", "1.2.3"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		checkAgainstModel(t, s)
	})
}
