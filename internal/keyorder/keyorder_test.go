package keyorder

import (
	"bytes"
	"errors"
	"fmt"
	"math/big"
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

func num(s string) types.AttributeValue { return &types.AttributeValueMemberN{Value: s} }
func str(s string) types.AttributeValue { return &types.AttributeValueMemberS{Value: s} }
func bin(b ...byte) types.AttributeValue {
	return &types.AttributeValueMemberB{Value: b}
}

// ratSign is the reference model for numbers: exact rational comparison.
func ratCompare(t testing.TB, a, b string) int {
	t.Helper()
	ra, ok := new(big.Rat).SetString(a)
	if !ok {
		t.Fatalf("big.Rat cannot parse %q", a)
	}
	rb, ok := new(big.Rat).SetString(b)
	if !ok {
		t.Fatalf("big.Rat cannot parse %q", b)
	}
	return ra.Cmp(rb)
}

var numberSyntax = regexp.MustCompile(`^[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?$`)

// significantDigits counts digits between the first and last non-zero digit
// of the mantissa, the way DynamoDB counts its 38-digit precision.
func significantDigits(s string) int {
	s = strings.TrimLeft(s, "+-")
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		s = s[:i]
	}
	s = strings.ReplaceAll(s, ".", "")
	s = strings.Trim(s, "0")
	return len(s)
}

// expLiteralOK mirrors the parser's bound on a written exponent (|e| < 10^6),
// which also keeps big.Rat's exponent within its range.
func expLiteralOK(s string) bool {
	i := strings.IndexAny(s, "eE")
	if i < 0 {
		return true
	}
	e := strings.TrimLeft(strings.TrimLeft(s[i+1:], "+-"), "0")
	return len(e) <= 6
}

var (
	ratMin = new(big.Rat).SetFrac(big.NewInt(1), new(big.Int).Exp(big.NewInt(10), big.NewInt(130), nil))
	ratMax = new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(126), nil))
)

// inRange reports whether a syntactically valid number is one DynamoDB
// stores: zero, or 1E-130 ≤ |v| < 1E126 with at most 38 significant digits.
func inRange(s string) bool {
	r, ok := new(big.Rat).SetString(s)
	if !ok {
		return false
	}
	if r.Sign() == 0 {
		return true
	}
	r.Abs(r)
	return r.Cmp(ratMin) >= 0 && r.Cmp(ratMax) < 0 && significantDigits(s) <= MaxDigits
}

func TestCompareNumbers(t *testing.T) {
	max38 := "9." + strings.Repeat("9", 37) + "E+125"
	tests := []struct{ a, b string }{
		{"0", "-0"},
		{"0", "0.000e5"},
		{"1", "1.0"},
		{"1", "1e0"},
		{"100", "1E2"},
		{"10.5", "1.05e1"},
		{"0.05", "5e-2"},
		{"-1", "1"},
		{"-2", "-1"},
		{"-1E-130", "1E-130"},
		{"1E-130", "0"},
		{"1E-130", "1.1E-130"},
		{max38, "9.99E+125"},
		{max38, "-" + max38},
		{"1" + strings.Repeat("0", 36) + "1", "1" + strings.Repeat("0", 37)},
		{"12345678901234567890123456789012345678", "12345678901234567890123456789012345679"},
		{"0.1", "0.09999999999999999999999999999999999999"},
		{"9007199254740993", "9007199254740992"}, // differ beyond float64 precision
		{"123.456", "123.4560000"},
		{"-0.001", "-1e-3"},
		{"5", "50e-1"},
		{"1e125", "9.9e124"},
	}
	for _, tt := range tests {
		t.Run(tt.a+"_"+tt.b, func(t *testing.T) {
			want := ratCompare(t, tt.a, tt.b)
			got, err := Compare(num(tt.a), num(tt.b))
			if err != nil {
				t.Fatalf("Compare(%s, %s): %v", tt.a, tt.b, err)
			}
			if got != want {
				t.Errorf("Compare(%s, %s) = %d, want %d", tt.a, tt.b, got, want)
			}
			back, err := Compare(num(tt.b), num(tt.a))
			if err != nil || back != -want {
				t.Errorf("Compare(%s, %s) = %d, %v, want %d", tt.b, tt.a, back, err, -want)
			}
		})
	}
}

func TestCompareStringsAndBinary(t *testing.T) {
	tests := []struct {
		a, b types.AttributeValue
		want int
	}{
		// UTF-8 byte order differs from UTF-16 order above U+FFFF: U+FF61 sorts
		// before U+1F600 in UTF-8 (EF vs F0) but after it in UTF-16 (FF61 vs D83D).
		{str("\uff61"), str("\U0001F600"), -1},
		{str("a"), str("ab"), -1},
		{str("B"), str("a"), -1},
		{str("é"), str("z"), 1},
		{str("x"), str("x"), 0},
		{bin(0x7f), bin(0x80), -1}, // unsigned: 0x80 is not negative
		{bin(0xff), bin(0x00, 0x00), 1},
		{bin(1, 2), bin(1, 2, 0), -1},
		{bin(), bin(), 0},
		// Around the 24 bytes Parse keeps as words: zero padding must not
		// make a shorter value equal to a longer one, and bytes past the
		// words must still decide.
		{bin(make([]byte, 24)...), bin(make([]byte, 25)...), -1},
		{bin(make([]byte, 23)...), bin(make([]byte, 24)...), -1},
		{str(strings.Repeat("a", 24)), str(strings.Repeat("a", 24) + "\x00"), -1},
		{str(strings.Repeat("a", 30) + "c"), str(strings.Repeat("a", 30) + "b"), 1},
		{str(strings.Repeat("a", 30)), str(strings.Repeat("a", 30)), 0},
		{str(strings.Repeat("a", 23) + "b"), str(strings.Repeat("a", 24) + "z"), 1},
		{bin(append(make([]byte, 25), 1)...), bin(append(make([]byte, 25), 2)...), -1},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.a, tt.b), func(t *testing.T) {
			got, err := Compare(tt.a, tt.b)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("got %d, want %d", got, tt.want)
			}
		})
	}
}

func TestCompareErrors(t *testing.T) {
	tests := []struct {
		name string
		a, b types.AttributeValue
	}{
		{"nil", nil, str("a")},
		{"mixed", str("1"), num("1")},
		{"bool", &types.AttributeValueMemberBOOL{Value: true}, str("a")},
		{"set", &types.AttributeValueMemberSS{Value: []string{"a"}}, str("a")},
		{"empty number", num(""), num("1")},
		{"letters", num("1a"), num("1")},
		{"two dots", num("1.2.3"), num("1")},
		{"empty exponent", num("1e"), num("1")},
		{"inf", num("Inf"), num("1")},
		{"nan", num("NaN"), num("1")},
		{"space", num(" 1"), num("1")},
		{"39 digits", num("1" + strings.Repeat("0", 37) + "1"), num("1")},
		{"too small", num("9.9E-131"), num("1")},
		{"too large", num("1E126"), num("1")},
		{"huge exponent", num("1e99999999999999999999999"), num("1")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Compare(tt.a, tt.b)
			if !errors.Is(err, ErrUnordered) {
				t.Errorf("got %v, want ErrUnordered", err)
			}
		})
	}
}

// randomNumber draws numbers across DynamoDB's whole range, many sharing
// prefixes and exponents so that ties and near-ties are common.
func randomNumber(r *rand.Rand) string {
	var b strings.Builder
	if r.IntN(2) == 0 {
		b.WriteByte('-')
	}
	if r.IntN(20) == 0 {
		b.WriteString("0")
		return b.String()
	}
	n := 1 + r.IntN(MaxDigits)
	b.WriteByte(byte('1' + r.IntN(9)))
	for range n - 1 {
		if r.IntN(3) == 0 {
			b.WriteByte('0')
		} else {
			b.WriteByte(byte('0' + r.IntN(10)))
		}
	}
	mant := b.String()
	digits := n
	// Place the point and exponent so that the value stays in range.
	exp := MinExp + r.IntN(MaxExp-MinExp+1) // exponent of the first digit
	switch r.IntN(3) {
	case 0:
		return fmt.Sprintf("%s.%se%d", mant[:len(mant)-digits+1], mant[len(mant)-digits+1:], exp)
	case 1:
		// Small exponents written out plainly.
		e := r.IntN(20) - 10
		lead := mant[:len(mant)-digits]
		ds := mant[len(mant)-digits:]
		if e >= 0 {
			if e+1 < len(ds) {
				return lead + ds[:e+1] + "." + ds[e+1:]
			}
			return lead + ds + strings.Repeat("0", e+1-len(ds))
		}
		return lead + "0." + strings.Repeat("0", -e-1) + ds
	default:
		return fmt.Sprintf("%sE%+d", mant, exp-(digits-1))
	}
}

func TestCompareNumbersAgainstBigRat(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	vals := make([]string, 0, 3000)
	for len(vals) < cap(vals) {
		s := randomNumber(r)
		if !inRange(s) {
			continue
		}
		vals = append(vals, s)
		if r.IntN(4) == 0 { // an equal value written differently
			rat, _ := new(big.Rat).SetString(s)
			if alt := rat.FloatString(170); inRange(alt) {
				vals = append(vals, alt)
			}
		}
	}
	for i := range len(vals) - 1 {
		a, b := vals[i], vals[i+1]
		if r.IntN(2) == 0 {
			b = vals[r.IntN(len(vals))]
		}
		got, err := Compare(num(a), num(b))
		if err != nil {
			t.Fatalf("Compare(%s, %s): %v", a, b, err)
		}
		if want := ratCompare(t, a, b); got != want {
			t.Errorf("Compare(%s, %s) = %d, want %d", a, b, got, want)
		}
	}
	// Sorting by Compare must equal sorting by big.Rat (a total order check).
	got := slices.Clone(vals)
	slices.SortStableFunc(got, func(a, b string) int { c, _ := Compare(num(a), num(b)); return c })
	want := slices.Clone(vals)
	slices.SortStableFunc(want, func(a, b string) int { return ratCompare(t, a, b) })
	for i := range got {
		if ratCompare(t, got[i], want[i]) != 0 {
			t.Fatalf("sorted position %d: got %s, want %s", i, got[i], want[i])
		}
	}
}

func FuzzCompareNumbers(f *testing.F) {
	for _, s := range [][2]string{
		{"0", "-0"}, {"1E-130", "1e-130"}, {"9.99E+125", "-9.99E+125"}, {"1.5", "15e-1"},
		{"12345678901234567890123456789012345678", "1.2345678901234567890123456789012345679E37"},
		{"0.000", "1e"}, {".5", "5."}, {"+1", "-1"}, {"1e1000000", "00000"},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		ka, errA := Parse(num(a))
		kb, errB := Parse(num(b))
		for _, c := range []struct {
			s   string
			err error
		}{{a, errA}, {b, errB}} {
			valid := numberSyntax.MatchString(c.s) && expLiteralOK(c.s) && inRange(c.s)
			if valid != (c.err == nil) {
				t.Fatalf("Parse(%q): err %v, want valid=%v", c.s, c.err, valid)
			}
		}
		if errA != nil || errB != nil {
			return
		}
		if got, want := ka.Compare(&kb), ratCompare(t, a, b); got != want {
			t.Fatalf("Compare(%s, %s) = %d, want %d", a, b, got, want)
		}
	})
}

func FuzzCompareBytes(f *testing.F) {
	f.Add([]byte("a"), []byte("b"))
	f.Add([]byte("\xef\xbd\xa1"), []byte("\xf0\x9f\x98\x80"))
	f.Add([]byte("2014-07-09T12:00:00.000Z#000001"), []byte("2014-07-09T12:00:00.000Z#000002"))
	f.Add(make([]byte, 24), make([]byte, 25))
	f.Fuzz(func(t *testing.T, a, b []byte) {
		want := bytes.Compare(a, b)
		if got, err := Compare(bin(a...), bin(b...)); err != nil || got != want {
			t.Fatalf("B: got %d, %v, want %d", got, err, want)
		}
		if got, err := Compare(str(string(a)), str(string(b))); err != nil || got != want {
			t.Fatalf("S: got %d, %v, want %d", got, err, want)
		}
	})
}

func BenchmarkKeyCompare(b *testing.B) {
	for _, tc := range []struct{ name, x, y string }{
		{"N", "1234567.891", "1234567.892"},
		{"N38", "1." + strings.Repeat("3", 37), "1." + strings.Repeat("3", 36) + "4"},
	} {
		kx, _ := Parse(num(tc.x))
		ky, _ := Parse(num(tc.y))
		b.Run(tc.name+"/key", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if kx.Compare(&ky) >= 0 {
					b.Fatal("order")
				}
			}
		})
		ax, ay := num(tc.x), num(tc.y)
		b.Run(tc.name+"/parse+compare", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if c, _ := Compare(ax, ay); c >= 0 {
					b.Fatal("order")
				}
			}
		})
	}
}

// FuzzWord: for keys sharing their first off bytes, Word never contradicts
// the byte order, and SharedPrefix is the common prefix length.
func FuzzWord(f *testing.F) {
	f.Add([]byte("2014-07-09T12"), []byte("2014-07-09T11"), 3)
	f.Add([]byte("a"), []byte("a\x00"), 0)
	f.Fuzz(func(t *testing.T, a, b []byte, off int) {
		for _, kind := range []func([]byte) types.AttributeValue{
			func(v []byte) types.AttributeValue { return str(string(v)) },
			func(v []byte) types.AttributeValue { return bin(v...) },
		} {
			ka, _ := Parse(kind(a))
			kb, _ := Parse(kind(b))
			p := ka.SharedPrefix(&kb, 1<<30)
			if want := len(commonPrefix(a, b)); p != want {
				t.Fatalf("SharedPrefix = %d, want %d", p, want)
			}
			off := min(max(off, 0), p)
			wa, wb := ka.Word(off), kb.Word(off)
			c := ka.Compare(&kb)
			if wa < wb && c >= 0 || wa > wb && c <= 0 {
				t.Fatalf("Word(%d): %x vs %x, but Compare = %d", off, wa, wb, c)
			}
		}
	})
}

func commonPrefix(a, b []byte) []byte {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	return a[:i]
}

// FuzzParsePrefix: ParsePrefix writes the Key's kind and prefix words, for
// S and B values short and long, and unequal prefixes never contradict
// the byte order (as the merge relies on).
func FuzzParsePrefix(f *testing.F) {
	f.Add([]byte("2014-07-09T12:00:00.000Z#000001"), []byte("2014-07-09T12:00:00.000Z#000002"))
	f.Add([]byte("a"), []byte("a\x00"))
	f.Add(make([]byte, 23), make([]byte, 24))
	var w [3]uint64
	if k, err := ParsePrefix(num("12.5"), &w); k != N || err != nil {
		f.Errorf("ParsePrefix(N 12.5) = %c, %v", k, err)
	}
	if _, err := ParsePrefix(&types.AttributeValueMemberBOOL{Value: true}, &w); !errors.Is(err, ErrUnordered) {
		f.Errorf("ParsePrefix(BOOL) error %v, want ErrUnordered", err)
	}
	f.Fuzz(func(t *testing.T, a, b []byte) {
		for _, kind := range []func([]byte) types.AttributeValue{
			func(v []byte) types.AttributeValue { return str(string(v)) },
			func(v []byte) types.AttributeValue { return bin(v...) },
		} {
			ka, errA := Parse(kind(a))
			var wa, wb [3]uint64
			k, err := ParsePrefix(kind(a), &wa)
			if k != ka.Kind() || wa != ka.Prefix() || (err == nil) != (errA == nil) {
				t.Fatalf("ParsePrefix(%q) = %c %x %v, Parse gives %c %x %v", a, k, wa, err, ka.Kind(), ka.Prefix(), errA)
			}
			ParsePrefix(kind(b), &wb)
			if c := bytes.Compare(a, b); wa != wb && (c < 0) != (slices.Compare(wa[:], wb[:]) < 0) {
				t.Fatalf("%q vs %q: prefixes %x, %x against the byte order %d", a, b, wa, wb, c)
			}
		}
	})
}
