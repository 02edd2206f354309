package shard

import (
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

func TestKey(t *testing.T) {
	tests := []struct {
		c      Codec
		base   string
		suffix int
		want   string
	}{
		{Codec{}, "2014-07-09", 7, "2014-07-09.7"},
		{Codec{}, "a.b", 200, "a.b.200"},
		{Codec{Sep: "#"}, "U1", 3, "U1#3"},
		{Codec{Sep: "::"}, "x", MaxN, "x::10000"},
	}
	for _, tt := range tests {
		if got := tt.c.Key(tt.base, tt.suffix); got != tt.want {
			t.Errorf("%+v.Key(%q, %d) = %q, want %q", tt.c, tt.base, tt.suffix, got, tt.want)
		}
	}
	if got, want := Key("2014-07-09", 7), "2014-07-09.7"; got != want {
		t.Errorf("Key = %q, want %q", got, want)
	}
}

func TestParse(t *testing.T) {
	long := strings.Repeat("x", MaxKeyBytes-2) // + ".7" is exactly 2048
	longMB := strings.Repeat("é", (MaxKeyBytes-2)/2)
	tests := []struct {
		c          Codec
		key        string
		base       string
		suffix     int
		reason     string // "" means valid
		tooLongErr bool
	}{
		{c: Codec{}, key: "2014-07-09.7", base: "2014-07-09", suffix: 7},
		{c: Codec{}, key: "a.b.c.200", base: "a.b.c", suffix: 200},
		{c: Codec{}, key: "..1", base: ".", suffix: 1},
		{c: Codec{}, key: "x.10000", base: "x", suffix: MaxN},
		{c: Codec{Sep: "#"}, key: "U1#3", base: "U1", suffix: 3},
		{c: Codec{Sep: "#"}, key: "a.b#3", base: "a.b", suffix: 3},
		{c: Codec{}, key: long + ".7", base: long, suffix: 7},
		{c: Codec{}, key: longMB + ".7", base: longMB, suffix: 7},
		{c: Codec{}, key: "日本.42", base: "日本", suffix: 42},

		{c: Codec{}, key: "", reason: reasonNoSep},
		{c: Codec{}, key: "2014-07-09", reason: reasonNoSep},
		{c: Codec{Sep: "#"}, key: "a.7", reason: reasonNoSep},
		{c: Codec{}, key: ".7", reason: reasonEmptyBase},
		{c: Codec{}, key: "a.", reason: reasonEmptySuffix},
		{c: Codec{}, key: "a.7.", reason: reasonEmptySuffix},
		{c: Codec{}, key: "a.07", reason: reasonNonCanonical},
		{c: Codec{}, key: "a.00", reason: reasonNonCanonical},
		{c: Codec{}, key: "a.0", reason: reasonZero},
		{c: Codec{}, key: "a.+7", reason: reasonNotDigits},
		{c: Codec{}, key: "a.-3", reason: reasonNotDigits},
		{c: Codec{}, key: "a.7x", reason: reasonNotDigits},
		{c: Codec{}, key: "a. 7", reason: reasonNotDigits},
		{c: Codec{}, key: "a.٣", reason: reasonNotDigits}, // Arabic-Indic three
		{c: Codec{}, key: "a.10001", reason: reasonTooBig},
		{c: Codec{}, key: "a.99999999999999999999999", reason: reasonTooBig},
		{c: Codec{}, key: "a\xff.7", reason: reasonUTF8},
		{c: Codec{}, key: long + "x.7", reason: reasonTooLong, tooLongErr: true},
		{c: Codec{}, key: longMB + "é.7", reason: reasonTooLong, tooLongErr: true},
		{c: Codec{Sep: "1"}, key: "a17", reason: reasonBadSep},
		{c: Codec{Sep: "\xff"}, key: "a\xff7", reason: reasonBadSep},
	}
	for _, tt := range tests {
		t.Run(strconv.Quote(tt.key[:min(len(tt.key), 20)]), func(t *testing.T) {
			base, suffix, err := tt.c.Parse(tt.key)
			if tt.reason == "" {
				if err != nil {
					t.Fatalf("Parse(%q) error %v, want nil", tt.key, err)
				}
				if base != tt.base || suffix != tt.suffix {
					t.Errorf("Parse(%q) = %q, %d, want %q, %d", tt.key, base, suffix, tt.base, tt.suffix)
				}
				if got := tt.c.Key(base, suffix); got != tt.key {
					t.Errorf("Key(Parse(%q)) = %q", tt.key, got)
				}
				return
			}
			var ke *KeyError
			if !errors.As(err, &ke) {
				t.Fatalf("Parse(%q) = %q, %d, %v; want *KeyError", tt.key, base, suffix, err)
			}
			if ke.Reason != tt.reason {
				t.Errorf("Parse(%q) reason = %q, want %q", tt.key, ke.Reason, tt.reason)
			}
			if !errors.Is(err, ErrInvalidKey) {
				t.Errorf("Parse(%q) error %v does not match ErrInvalidKey", tt.key, err)
			}
			if got := errors.Is(err, ErrKeyTooLong); got != tt.tooLongErr {
				t.Errorf("errors.Is(%v, ErrKeyTooLong) = %v, want %v", err, got, tt.tooLongErr)
			}
			if !utf8.ValidString(err.Error()) || len(err.Error()) > 200 {
				t.Errorf("error message is %d bytes or invalid UTF-8: %q", len(err.Error()), err.Error())
			}
		})
	}
}

func TestCheck(t *testing.T) {
	tests := []struct {
		base    string
		suffix  int
		wantErr bool
		tooLong bool
	}{
		{"2014-07-09", 7, false, false},
		{strings.Repeat("x", MaxKeyBytes-2), 9, false, false},
		{strings.Repeat("x", MaxKeyBytes-2), 10, true, true}, // the suffix tips it over
		{strings.Repeat("x", MaxKeyBytes-6), MaxN, false, false},
		{"", 1, true, false},
		{"a", 0, true, false},
		{"a", MaxN + 1, true, false},
		{"a\xff", 1, true, false},
	}
	for _, tt := range tests {
		err := Codec{}.Check(tt.base, tt.suffix)
		if (err != nil) != tt.wantErr || errors.Is(err, ErrKeyTooLong) != tt.tooLong {
			t.Errorf("Check(%d-byte base, %d) = %v, want error %v, too long %v", len(tt.base), tt.suffix, err, tt.wantErr, tt.tooLong)
		}
		if err != nil && !errors.Is(err, ErrInvalidKey) {
			t.Errorf("Check error %v does not match ErrInvalidKey", err)
		}
		// Check must agree with Parse on what Key produces.
		_, _, perr := Parse(Key(tt.base, tt.suffix))
		if (perr == nil) != (err == nil) {
			t.Errorf("Check(%d-byte base, %d) = %v but Parse(Key) = %v", len(tt.base), tt.suffix, err, perr)
		}
	}
}

func TestKeys(t *testing.T) {
	tests := []struct {
		c    Codec
		base string
		n    int
		want []string
	}{
		{Codec{}, "d", 3, []string{"d.1", "d.2", "d.3"}},
		{Codec{Sep: "#"}, "d", 2, []string{"d#1", "d#2"}},
		{Codec{}, "d", 0, nil},
		{Codec{}, "d", -1, nil},
	}
	for _, tt := range tests {
		got := slices.Collect(tt.c.Keys(tt.base, tt.n))
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("Keys(%q, %d) mismatch (-want +got):\n%s", tt.base, tt.n, diff)
		}
	}
	// Early break stops the iteration.
	var got []string
	for k := range Keys("d", 200) {
		got = append(got, k)
		if len(got) == 2 {
			break
		}
	}
	if diff := cmp.Diff([]string{"d.1", "d.2"}, got); diff != "" {
		t.Errorf("Keys with break (-want +got):\n%s", diff)
	}
	// Every key Keys yields parses back to its position.
	i := 0
	for k := range Keys("2014-07-09", 200) {
		i++
		if b, s, err := Parse(k); err != nil || b != "2014-07-09" || s != i {
			t.Fatalf("Parse(%q) = %q, %d, %v, want 2014-07-09, %d", k, b, s, err, i)
		}
	}
}

// FuzzParse checks that Parse never panics, accepts exactly what Key makes
// of a valid base and suffix, and round-trips.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"2014-07-09.7", "a.b.200", "a.07", "a.+7", "a.-3", "a.", ".7", "", "a.10000", "a.10001", "日本.3", "a\xff.1"} {
		f.Add(s, "")
		f.Add(s, "#")
	}
	f.Fuzz(func(t *testing.T, key, sep string) {
		c := Codec{Sep: sep}
		base, suffix, err := c.Parse(key)
		if err != nil {
			if !errors.Is(err, ErrInvalidKey) {
				t.Fatalf("Parse(%q) error %v does not match ErrInvalidKey", key, err)
			}
			return
		}
		if base == "" || suffix < 1 || suffix > MaxN || len(key) > MaxKeyBytes || !utf8.ValidString(key) {
			t.Fatalf("Parse(%q) accepted %q, %d", key, base, suffix)
		}
		if got := c.Key(base, suffix); got != key {
			t.Fatalf("Key(Parse(%q)) = %q", key, got)
		}
		if err := c.Check(base, suffix); err != nil {
			t.Fatalf("Check(Parse(%q)) = %v", key, err)
		}
	})
}

// FuzzKeyRoundTrip checks Parse(Key(base, suffix)) == base, suffix for every
// base and suffix Check accepts, and that Check rejects the rest.
func FuzzKeyRoundTrip(f *testing.F) {
	f.Add("2014-07-09", 7, "")
	f.Add("a.b", 1, "#")
	f.Add("x", MaxN, "::")
	f.Add("", 1, "")
	f.Add("a", 0, "")
	f.Fuzz(func(t *testing.T, base string, suffix int, sep string) {
		c := Codec{Sep: sep}
		key := c.Key(base, suffix)
		gb, gs, err := c.Parse(key)
		if cerr := c.Check(base, suffix); cerr != nil {
			if err == nil && gb == base && gs == suffix {
				t.Fatalf("Check(%q, %d) = %v, but Parse round-trips", base, suffix, cerr)
			}
			return
		}
		if err != nil || gb != base || gs != suffix {
			t.Fatalf("Parse(Key(%q, %d)) = %q, %d, %v", base, suffix, gb, gs, err)
		}
	})
}
