package scatter

import (
	"encoding/base64"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynashard/dynashard/shard"
)

// testPlan is an index query, whose resume key has three attributes.
func testPlan(t testing.TB, n int) *plan {
	t.Helper()
	p, err := newPlan(Query{Table: "t", Index: "gsi", PartitionKey: "day", SortKey: "ts", TableKey: []string{"id", "rk"},
		Base: "2014-07-09", Strategy: shard.Hash(n)})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func randomKeyValue(r *rand.Rand) types.AttributeValue {
	switch r.IntN(3) {
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

func randomPositions(r *rand.Rand, p *plan) []position {
	var pos []position
	for ord := range p.suffixes {
		switch r.IntN(3) {
		case 0: // not moved
		case 1:
			pos = append(pos, position{ord: ord, done: true})
		default:
			key := make([]types.AttributeValue, len(p.keyAttrs))
			for i := range key {
				key[i] = randomKeyValue(r)
			}
			pos = append(pos, position{ord: ord, key: key})
		}
	}
	return pos
}

func render(pos []position) string {
	var b strings.Builder
	for _, ps := range pos {
		fmt.Fprintf(&b, "%d:%v", ps.ord, ps.done)
		for _, v := range ps.key {
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
	return b.String()
}

func TestCursorRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	for trial := range 300 {
		p := testPlan(t, 1+r.IntN(300))
		pos := randomPositions(r, p)
		var key []byte
		if trial%2 == 1 {
			key = []byte("k")
		}
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
	}
}

// craft builds a raw unsigned cursor for p from body bytes after the header.
func craft(p *plan, body ...byte) Cursor {
	b := append([]byte{cursorVersion, 0}, p.fingerprint[:]...)
	return Cursor(base64.RawURLEncoding.EncodeToString(append(b, body...)))
}

func TestCursorReasons(t *testing.T) {
	p := testPlan(t, 10)
	good := func(typ byte, v string) []byte { return append([]byte{typ, byte(len(v))}, v...) }
	key := slices.Concat(good('S', "a"), good('S', "b"), good('N', "1"))
	tests := []struct {
		name   string
		c      Cursor
		reason CursorReason
	}{
		{"not base64", "***", CursorMalformed},
		{"non-canonical base64", craft(p, 1, 3, stateDone) + "B", CursorMalformed},
		{"empty", Cursor(base64.RawURLEncoding.EncodeToString(nil)) + "A", CursorMalformed},
		{"version", Cursor(base64.RawURLEncoding.EncodeToString([]byte{2, 0})), CursorVersion},
		{"short header", Cursor(base64.RawURLEncoding.EncodeToString([]byte{1, 0, 3})), CursorMalformed},
		{"flags", Cursor(base64.RawURLEncoding.EncodeToString(append([]byte{1, 4}, p.fingerprint[:]...))), CursorMalformed},
		{"signed without key", Cursor(base64.RawURLEncoding.EncodeToString(append(append([]byte{1, 1}, p.fingerprint[:]...), make([]byte, 33)...))), CursorSignature},
		{"foreign", Cursor(base64.RawURLEncoding.EncodeToString(append([]byte{1, 0}, make([]byte, 17)...))), CursorForeign},
		{"no count", craft(p), CursorMalformed},
		{"count beyond shards", craft(p, 11), CursorMalformed},
		{"missing entries", craft(p, 2, 3, stateDone), CursorMalformed},
		{"suffix 0", craft(p, 1, 0, stateDone), CursorOutOfRange},
		{"suffix 11", craft(p, 1, 11, stateDone), CursorOutOfRange},
		{"suffix huge", craft(p, 1, 0xff, 0xff, 0xff, 0xff, 0x0f, stateDone), CursorOutOfRange},
		{"non-minimal varint", craft(p, 1, 0x83, 0x00, stateDone), CursorMalformed},
		{"repeated suffix", craft(p, 2, 3, stateDone, 3, stateDone), CursorMalformed},
		{"descending suffixes", craft(p, 2, 4, stateDone, 3, stateDone), CursorMalformed},
		{"unknown state", craft(p, 1, 3, 9), CursorMalformed},
		{"truncated key", craft(p, slices.Concat([]byte{1, 3, stateAfter}, key[:len(key)-1])...), CursorMalformed},
		{"trailing bytes", craft(p, slices.Concat([]byte{1, 3, stateAfter}, key, []byte{0})...), CursorMalformed},
		{"key type", craft(p, slices.Concat([]byte{1, 3, stateAfter}, good('X', "a"), good('S', "b"), good('N', "1"))...), CursorMalformed},
		{"empty key value", craft(p, slices.Concat([]byte{1, 3, stateAfter}, good('S', ""), good('S', "b"), good('N', "1"))...), CursorOutOfRange},
		{"bad number", craft(p, slices.Concat([]byte{1, 3, stateAfter}, good('S', "a"), good('S', "b"), good('N', "1e999"))...), CursorOutOfRange},
		{"bad UTF-8", craft(p, slices.Concat([]byte{1, 3, stateAfter}, good('S', "\xff"), good('S', "b"), good('N', "1"))...), CursorOutOfRange},
		{"value too long", craft(p, slices.Concat([]byte{1, 3, stateAfter, 'S', 0x81, 0x10}, make([]byte, 2049))...), CursorOutOfRange},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := decodeCursor(p, tt.c, nil)
			var ce *CursorError
			if !errors.As(err, &ce) || !errors.Is(err, ErrBadCursor) {
				t.Fatalf("got %v, want a *CursorError", err)
			}
			if ce.Reason != tt.reason {
				t.Errorf("got reason %v (%v), want %v", ce.Reason, err, tt.reason)
			}
		})
	}
	// The well-formed neighbour of those cases decodes.
	if _, err := decodeCursor(p, craft(p, slices.Concat([]byte{2, 3, stateAfter}, key, []byte{10, stateDone})...), nil); err != nil {
		t.Errorf("well-formed cursor: %v", err)
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
			key = []byte("k")
		}
		c, err := encodeCursor(p, randomPositions(r, p), key)
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
			key = []byte("k")
		}
		c := Cursor(base64.RawURLEncoding.EncodeToString(raw))
		pos, err := decodeCursor(p, c, key)
		if err != nil {
			if !errors.Is(err, ErrBadCursor) {
				t.Fatalf("got %v, want ErrBadCursor", err)
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
	c, _ := encodeCursor(p, []position{{ord: 1, done: true}}, nil)
	for _, s := range []string{string(c), "", "A", "AQ", "====", "\x00\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if _, err := decodeCursor(p, Cursor(s), nil); err != nil && !errors.Is(err, ErrBadCursor) {
			t.Fatalf("got %v, want ErrBadCursor", err)
		}
	})
}
