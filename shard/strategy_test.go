package shard

import (
	"errors"
	"fmt"
	"hash/fnv"
	"math/big"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	"github.com/dynashard/dynashard/internal/skew"
)

// Golden vectors: Hash's output is a storage format. If this test fails,
// the change breaks every table written with Hash; revert it.
func TestHashGolden(t *testing.T) {
	tests := []struct {
		id              string
		hash            uint64
		n10, n200, nMax int
	}{
		{"", 0xefd01f60ba992926, 3, 143, 4343},
		{"a", 0x82a2a958a9bece5b, 6, 116, 8316},
		{"ORD-00000001", 0x2e11255992e36557, 6, 16, 9416},
		{"ORD-00000002", 0x5f51b17f71eda81c, 7, 77, 477},
		{"2014-07-09", 0x3c28b3a4d0bbe3eb, 6, 156, 5356},
		{"550e8400-e29b-41d4-a716-446655440000", 0x65023cca21d643bf, 6, 176, 3376},
		{"user12345", 0x0c0763db784c2fb7, 4, 144, 6344},
		{"jane.doe@example.com", 0x3a12c377cbda8022, 9, 139, 1139},
		{"2014-07-09T20:42:54.023Z", 0x2189db1974b9fac1, 4, 114, 2514},
		{"Müller", 0x1b75d2ccd821e9d7, 6, 176, 3576},
		{"日本語", 0xe11518acc326d0e8, 1, 81, 1881},
		{"😀emoji", 0xa9a4df4ad550e1b5, 10, 190, 390},
		{"\xff\xfe", 0x75c9056eb1c4b960, 3, 153, 1553},
	}
	for _, tt := range tests {
		if got := hash64(tt.id); got != tt.hash {
			t.Errorf("hash64(%q) = %#x, want %#x", tt.id, got, tt.hash)
		}
		for _, c := range []struct{ n, want int }{{1, 1}, {10, tt.n10}, {200, tt.n200}, {MaxN, tt.nMax}} {
			if got := Hash(c.n).Pick(tt.id); got != c.want {
				t.Errorf("Hash(%d).Pick(%q) = %d, want %d", c.n, tt.id, got, c.want)
			}
		}
	}
}

// refHash is the documented definition built from the standard library's
// FNV-1a, independent of hash64's hand-written loop.
func refHash(id string) uint64 {
	f := fnv.New64a()
	f.Write([]byte(id))
	h := f.Sum64()
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb9fe1a85ec53
	h ^= h >> 33
	return h
}

func TestHashMatchesDefinition(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		id := randomID(r)
		n := 1 + r.IntN(MaxN)
		want := int(refHash(id)%uint64(n)) + 1
		if got := Hash(n).Pick(id); got != want {
			t.Fatalf("Hash(%d).Pick(%q) = %d, want %d", n, id, got, want)
		}
	}
}

// randomID mixes ASCII, multi-byte, astral and invalid UTF-8.
func randomID(r *rand.Rand) string {
	var b strings.Builder
	for range r.IntN(40) {
		switch r.IntN(5) {
		case 0:
			b.WriteByte(byte(r.IntN(256)))
		case 1:
			b.WriteRune(rune(0x80 + r.IntN(0x800)))
		case 2:
			b.WriteRune(rune(0x10000 + r.IntN(0x100000)))
		default:
			b.WriteByte(byte('0' + r.IntN(75)))
		}
	}
	return b.String()
}

// bigCodePoint is the guide's formula computed literally: the whole product
// as a big integer, then mod n, plus 1. Invalid bytes count as U+FFFD, as
// documented.
func bigCodePoint(id string, n int) int {
	p := big.NewInt(1)
	for _, r := range id {
		p.Mul(p, big.NewInt(int64(r)))
	}
	return int(new(big.Int).Mod(p, big.NewInt(int64(n))).Int64()) + 1
}

func TestCodePointProductGolden(t *testing.T) {
	tests := []struct {
		id                   string
		n1, n10, n200, n9973 int
	}{
		{"", 1, 2, 2, 2},
		{"a", 1, 8, 98, 98},
		{"ORD-00000001", 1, 1, 41, 242},
		{"ORD-00000002", 1, 1, 1, 4114},
		{"2014-07-09", 1, 1, 1, 9211},
		{"550e8400-e29b-41d4-a716-446655440000", 1, 1, 1, 9497},
		{"user12345", 1, 1, 1, 4588},
		{"jane.doe@example.com", 1, 1, 1, 573},
		{"2014-07-09T20:42:54.023Z", 1, 1, 1, 5288},
		{"Müller", 1, 5, 185, 5886},
		{"日本語", 1, 1, 121, 348},
		{"😀emoji", 1, 1, 41, 9869},
		{"\xff\xfe", 1, 10, 90, 830},
	}
	for _, tt := range tests {
		for _, c := range []struct{ n, want int }{{1, tt.n1}, {10, tt.n10}, {200, tt.n200}, {9973, tt.n9973}} {
			// The vector itself is checked against the literal big-integer
			// formula, so a wrong vector cannot be pinned.
			if ref := bigCodePoint(tt.id, c.n); ref != c.want {
				t.Errorf("golden vector (%q, %d) = %d, but big-integer formula gives %d", tt.id, c.n, c.want, ref)
			}
			if got := CodePointProduct(c.n).Pick(tt.id); got != c.want {
				t.Errorf("CodePointProduct(%d).Pick(%q) = %d, want %d", c.n, tt.id, got, c.want)
			}
		}
	}
}

func TestCodePointProductMatchesBigInt(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	long := strings.Repeat("\U0010FFFF語z", 500) // product far beyond 64 bits
	for i := range 2000 {
		id := randomID(r)
		if i == 0 {
			id = long
		}
		n := 1 + r.IntN(MaxN)
		if i%3 == 0 {
			n = MaxN - r.IntN(3)
		}
		if got, want := CodePointProduct(n).Pick(id), bigCodePoint(id, n); got != want {
			t.Fatalf("CodePointProduct(%d).Pick(%q) = %d, want %d", n, id, got, want)
		}
	}
}

func TestRandom(t *testing.T) {
	const n, draws = 7, 70000
	s := Random(n)
	if s.N() != n {
		t.Fatalf("N() = %d, want %d", s.N(), n)
	}
	var mu sync.Mutex
	counts := make([]int, n)
	var wg sync.WaitGroup
	for range 4 { // concurrent use, checked by -race
		wg.Add(1)
		go func() {
			defer wg.Done()
			local := make([]int, n)
			for range draws / 4 {
				k := s.Pick("same id")
				if k < 1 || k > n {
					t.Errorf("Pick = %d, want 1..%d", k, n)
					return
				}
				local[k-1]++
			}
			mu.Lock()
			for i, c := range local {
				counts[i] += c
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	rep := skew.NewReport("random", draws, counts)
	// A correct uniform source fails this with probability 1e-6.
	if rep.PValue < 1e-6 {
		t.Errorf("Random(%d) counts %v: chi-square %v, p = %v, want uniform", n, counts, rep.ChiSquare, rep.PValue)
	}
}

func TestConstructors(t *testing.T) {
	ctors := map[string]func(int) Strategy{"Random": Random, "Hash": Hash, "CodePointProduct": CodePointProduct}
	for name, ctor := range ctors {
		for _, n := range []int{1, 2, 200, MaxN} {
			s := ctor(n)
			if s.N() != n {
				t.Errorf("%s(%d).N() = %d", name, n, s.N())
			}
			if k := s.Pick("x"); k < 1 || k > n {
				t.Errorf("%s(%d).Pick = %d, want 1..%d", name, n, k, n)
			}
			if n == 1 && s.Pick("anything") != 1 {
				t.Errorf("%s(1).Pick != 1", name)
			}
		}
		for _, n := range []int{0, -1, MaxN + 1} {
			// No panic on a bad count: Pick answers 0 and every entry
			// point refuses the strategy.
			s := ctor(n)
			if k := s.Pick("x"); k != 0 {
				t.Errorf("%s(%d).Pick = %d, want 0", name, n, k)
			}
			if err := CheckN(n); !errors.Is(err, ErrInvalidStrategy) || !errors.Is(err, ErrInvalid) {
				t.Errorf("CheckN(%d) = %v, want ErrInvalidStrategy", n, err)
			}
			l := Layout{Table: "t", PartitionKey: "pk", SortKey: "sk", Strategy: s}
			if err := l.Validate(); !errors.Is(err, ErrInvalidStrategy) {
				t.Errorf("Layout with %s(%d): %v, want ErrInvalidStrategy", name, n, err)
			}
		}
	}
	if err := CheckN(1); err != nil {
		t.Errorf("CheckN(1) = %v", err)
	}
}

var sink int

func BenchmarkPick(b *testing.B) {
	ids := []string{"ORD-00000001", "550e8400-e29b-41d4-a716-446655440000", strings.Repeat("日本語", 30)}
	for _, st := range []Strategy{Random(200), Hash(200), CodePointProduct(200)} {
		for _, id := range ids {
			b.Run(fmt.Sprintf("%v/len=%d", st, len(id)), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					sink += st.Pick(id)
				}
			})
		}
	}
}
