package scatter

import (
	"encoding/base64"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynashard/dynashard/shard"
)

// testPlan reads an index (sort key ts of type N), whose resume key has
// three attributes.
func testPlan(t testing.TB, n int) *plan {
	t.Helper()
	p, err := newPlan(shard.Layout{Table: "t", Index: "gsi", PartitionKey: "day", SortKey: "ts", SortKeyType: types.ScalarAttributeTypeN,
		TableKey: []string{"id", "rk"}, Strategy: shard.Hash(n), Unchecked: true}, "2014-07-09", Options{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// randomPositions draws a cursor's content for p: a default position and
// each shard's, with one type per key attribute, as a real cursor has.
func randomPositions(r *rand.Rand, p *plan) resume {
	kinds := make([]int, len(p.keyAttrs))
	for i := range kinds {
		kinds[i] = r.IntN(3)
	}
	kinds[p.skIndex] = 1 // the layout's SortKeyType, N
	random := func() *position {
		if r.IntN(4) == 0 {
			return nil
		}
		pos := &position{ord: r.IntN(len(p.suffixes)), key: make([]types.AttributeValue, len(p.keyAttrs))}
		for i := range pos.key {
			pos.key[i] = randomKeyValue(r, kinds[i])
		}
		return pos
	}
	res := resume{def: random(), starts: make([]*position, len(p.suffixes))}
	for ord := range res.starts {
		res.starts[ord] = res.def
		if r.IntN(3) == 0 {
			res.starts[ord] = random()
		}
	}
	return res
}

func randomKeyValue(r *rand.Rand, kind int) types.AttributeValue {
	switch kind {
	case 0:
		return &types.AttributeValueMemberS{Value: strings.Repeat("é", 1+r.IntN(5))}
	case 1:
		return &types.AttributeValueMemberN{Value: fmt.Sprintf("%d.%dE%d", r.IntN(100)-50, r.IntN(1000), r.IntN(200)-100)}
	default:
		b := make([]byte, 1+r.IntN(8))
		for i := range b {
			b[i] = byte(r.IntN(256))
		}
		return &types.AttributeValueMemberB{Value: b}
	}
}

func render(res resume) string {
	var b strings.Builder
	one := func(pos *position) {
		if pos == nil {
			b.WriteString("beginning\n")
			return
		}
		fmt.Fprintf(&b, "%d:", pos.ord)
		for _, v := range pos.key {
			switch v := v.(type) {
			case *types.AttributeValueMemberS:
				fmt.Fprintf(&b, " S%q", v.Value)
			case *types.AttributeValueMemberN:
				fmt.Fprintf(&b, " N%s", v.Value)
			case *types.AttributeValueMemberB:
				fmt.Fprintf(&b, " B%x", v.Value)
			}
		}
		b.WriteString("\n")
	}
	one(res.def)
	for _, pos := range res.starts {
		one(pos)
	}
	return b.String()
}

var testKey = []byte("0123456789abcdef")

func TestCursorRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	for trial := range 300 {
		p := testPlan(t, 1+r.IntN(300))
		pos := randomPositions(r, p)
		var key []byte
		if trial%2 == 1 {
			key = testKey
		}
		if trial%3 == 0 {
			pos.digest, pos.hasDigest = r.Uint64(), true
		}
		pos.byKey = trial%5 == 1
		c, err := encodeCursor(p, pos, key)
		if err != nil {
			t.Fatal(err)
		}
		got, err := decodeCursor(p, c, key)
		if err != nil {
			t.Fatalf("trial %d: %v", trial, err)
		}
		if render(got) != render(pos) {
			t.Fatalf("trial %d: got\n%s\nwant\n%s", trial, render(got), render(pos))
		}
		if got.digest != pos.digest || got.hasDigest != pos.hasDigest || got.byKey != pos.byKey {
			t.Fatalf("trial %d: digest %x %v, by key %v, want %x %v, %v", trial, got.digest, got.hasDigest, got.byKey, pos.digest, pos.hasDigest, pos.byKey)
		}
	}
}

// craft builds a raw unsigned cursor for p from body bytes after the header.
func craft(p *plan, body ...byte) Cursor {
	b := append([]byte{cursorVersion, 0}, p.fingerprint[:]...)
	return Cursor(base64.RawURLEncoding.EncodeToString(append(b, body...)))
}

func TestCursorReasons(t *testing.T) {
	p := testPlan(t, 10) // key attributes id, rk (table sort key), ts (index sort key)
	good := func(typ byte, v string) []byte { return append([]byte{typ, byte(len(v))}, v...) }
	key := slices.Concat(good('S', "a"), good('S', "b"), good('N', "1"))
	at3 := slices.Concat([]byte{3}, key) // a position in suffix 3
	long := func(n int) []byte {
		return slices.Concat([]byte{'S', byte(n&0x7f | 0x80), byte(n >> 7)}, make([]byte, n))
	}
	tests := []struct {
		name   string
		c      Cursor
		reason CursorReason
	}{
		{"not base64", "***", CursorMalformed},
		{"non-canonical base64", craft(p, 0, 0) + "B", CursorMalformed},
		{"empty", Cursor(base64.RawURLEncoding.EncodeToString(nil)) + "A", CursorMalformed},
		{"version", Cursor(base64.RawURLEncoding.EncodeToString([]byte{3, 0})), CursorVersion},
		{"version 1", Cursor(base64.RawURLEncoding.EncodeToString([]byte{1, 0})), CursorVersion},
		{"short header", Cursor(base64.RawURLEncoding.EncodeToString([]byte{cursorVersion, 0, 3})), CursorMalformed},
		{"flags", Cursor(base64.RawURLEncoding.EncodeToString(append([]byte{cursorVersion, 8}, p.fingerprint[:]...))), CursorMalformed},
		{"signed without key", Cursor(base64.RawURLEncoding.EncodeToString(append(append([]byte{cursorVersion, 1}, p.fingerprint[:]...), make([]byte, 33)...))), CursorSignature},
		{"foreign", Cursor(base64.RawURLEncoding.EncodeToString(append([]byte{cursorVersion, 0}, make([]byte, 17)...))), CursorForeign},
		{"no default", craft(p), CursorMalformed},
		{"no count", craft(p, 0), CursorMalformed},
		{"count beyond shards", craft(p, 0, 11), CursorMalformed},
		{"missing entries", craft(p, slices.Concat([]byte{0, 2}, []byte{3}, at3)...), CursorMalformed},
		{"default in suffix 11", craft(p, slices.Concat([]byte{11}, key, []byte{0})...), CursorOutOfRange},
		{"suffix 0", craft(p, slices.Concat([]byte{0, 1, 0}, at3)...), CursorOutOfRange},
		{"suffix 11", craft(p, slices.Concat([]byte{0, 1, 11}, at3)...), CursorOutOfRange},
		{"suffix huge", craft(p, slices.Concat([]byte{0, 1, 0xff, 0xff, 0xff, 0xff, 0x0f}, at3)...), CursorOutOfRange},
		{"non-minimal varint", craft(p, slices.Concat([]byte{0, 1, 0x83, 0x00}, at3)...), CursorMalformed},
		{"repeated suffix", craft(p, slices.Concat([]byte{0, 2, 3}, at3, []byte{3}, at3)...), CursorMalformed},
		{"descending suffixes", craft(p, slices.Concat([]byte{0, 2, 4}, at3, []byte{3}, at3)...), CursorMalformed},
		{"listed at the default", craft(p, slices.Concat(at3, []byte{1, 4}, at3)...), CursorMalformed},
		{"truncated key", craft(p, at3[:len(at3)-1]...), CursorMalformed},
		{"trailing bytes", craft(p, 0, 0, 0), CursorMalformed},
		{"key type", craft(p, slices.Concat([]byte{3}, good('X', "a"), good('S', "b"), good('N', "1"), []byte{0})...), CursorMalformed},
		{"empty key value", craft(p, slices.Concat([]byte{3}, good('S', ""), good('S', "b"), good('N', "1"), []byte{0})...), CursorOutOfRange},
		{"bad number", craft(p, slices.Concat([]byte{3}, good('S', "a"), good('S', "b"), good('N', "1e999"), []byte{0})...), CursorOutOfRange},
		{"bad UTF-8", craft(p, slices.Concat([]byte{3}, good('S', "\xff"), good('S', "b"), good('N', "1"), []byte{0})...), CursorOutOfRange},
		{"value too long", craft(p, slices.Concat([]byte{3}, long(2049), good('S', "b"), good('N', "1"), []byte{0})...), CursorOutOfRange},
		{"sort key too long", craft(p, slices.Concat([]byte{3}, good('S', "a"), long(1025), good('N', "1"), []byte{0})...), CursorOutOfRange},
		{"types differ", craft(p, slices.Concat(at3, []byte{1, 4, 3}, good('N', "2"), good('S', "b"), good('N', "1"))...), CursorOutOfRange},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := decodeCursor(p, tt.c, nil)
			var ce *CursorError
			if !errors.As(err, &ce) || !errors.Is(err, ErrInvalidCursor) {
				t.Fatalf("got %v, want a *CursorError", err)
			}
			if ce.Reason != tt.reason {
				t.Errorf("got reason %v (%v), want %v", ce.Reason, err, tt.reason)
			}
		})
	}
	// The well-formed neighbours of those cases decode.
	for _, c := range []Cursor{
		craft(p, slices.Concat(at3, []byte{1, 10, 0})...),
		craft(p, slices.Concat([]byte{0, 2, 3}, at3, []byte{4, 3}, good('S', "b"), good('S', "c"), good('N', "2"))...),
		craft(p, slices.Concat([]byte{3}, long(2048), long(1024), good('N', "1"), []byte{0})...),
	} {
		if _, err := decodeCursor(p, c, nil); err != nil {
			t.Errorf("well-formed cursor: %v", err)
		}
	}
}

// FuzzDecodeCursor: no input panics, and every accepted unsigned cursor is
// the one encoding of what it decodes to, so it cannot be altered without
// changing its meaning or being rejected.
func FuzzDecodeCursor(f *testing.F) {
	p := testPlan(f, 12)
	r := rand.New(rand.NewPCG(2, 2))
	for i := range 8 {
		var key []byte
		if i%4 == 3 {
			key = testKey
		}
		res := randomPositions(r, p)
		// How a cursor names its item: a digest, its key, or neither.
		res.hasDigest, res.digest, res.byKey = i%3 == 1, r.Uint64(), i%3 == 2
		if !res.hasDigest {
			res.digest = 0
		}
		c, err := encodeCursor(p, res, key)
		if err != nil {
			f.Fatal(err)
		}
		raw, _ := base64.RawURLEncoding.DecodeString(string(c))
		f.Add(raw, key != nil)
	}
	f.Add([]byte{}, false)
	f.Add([]byte{1, 0}, false)
	f.Fuzz(func(t *testing.T, raw []byte, signed bool) {
		var key []byte
		if signed {
			key = testKey
		}
		c := Cursor(base64.RawURLEncoding.EncodeToString(raw))
		pos, err := decodeCursor(p, c, key)
		if err != nil {
			if !errors.Is(err, ErrInvalidCursor) {
				t.Fatalf("got %v, want ErrInvalidCursor", err)
			}
			return
		}
		again, err := encodeCursor(p, pos, key)
		if err != nil {
			t.Fatal(err)
		}
		if again != c {
			t.Fatalf("decoded %q and re-encoded it as %q", c, again)
		}
	})
}

// FuzzDecodeCursorText feeds arbitrary text, not only valid base64.
func FuzzDecodeCursorText(f *testing.F) {
	p := testPlan(f, 3)
	c, _ := encodeCursor(p, resume{def: &position{ord: 1, key: []types.AttributeValue{
		&types.AttributeValueMemberS{Value: "a"}, &types.AttributeValueMemberS{Value: "b"}, &types.AttributeValueMemberN{Value: "1"}}}}, nil)
	for _, s := range []string{string(c), "", "A", "AQ", "====", "\x00\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if _, err := decodeCursor(p, Cursor(s), nil); err != nil && !errors.Is(err, ErrInvalidCursor) {
			t.Fatalf("got %v, want ErrInvalidCursor", err)
		}
	})
}

// TestDecodeEarlyAllocation: decoding a cursor before the layout check
// (against every suffix a base may have, 1..shard.MaxN) and fitting it to
// the base's 200 suffixes allocates in proportion to the cursor and the
// base, not to MaxN: a few KB, where two MaxN-slot slices took 160 KB.
func TestDecodeEarlyAllocation(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 4))
	p := testPlan(t, 200)
	c, err := encodeCursor(p, randomPositions(r, p), nil)
	if err != nil {
		t.Fatal(err)
	}
	early := *p
	early.o.Suffixes = nil
	var before, after runtime.MemStats
	const runs = 100
	runtime.ReadMemStats(&before)
	for range runs {
		res, err := decodeEarly(&early, c, nil)
		if err == nil {
			_, err = res.fit(p)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	runtime.ReadMemStats(&after)
	if per := (after.TotalAlloc - before.TotalAlloc) / runs; per > 32<<10 {
		t.Errorf("decoding and fitting a cursor of 200 shards allocates %d bytes, want at most 32 KiB", per)
	}
}

// BenchmarkDecodeEarly reports the bytes and allocations of decoding a
// Page's cursor (200 shards, every one listed) before the layout check.
func BenchmarkDecodeEarly(b *testing.B) {
	r := rand.New(rand.NewPCG(4, 4))
	p := testPlan(b, 200)
	c, err := encodeCursor(p, randomPositions(r, p), nil)
	if err != nil {
		b.Fatal(err)
	}
	early := *p
	b.ReportAllocs()
	for b.Loop() {
		res, err := decodeEarly(&early, c, nil)
		if err == nil {
			_, err = res.fit(p)
		}
		if err != nil {
			b.Fatal(err)
		}
	}
}
