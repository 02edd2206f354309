package repo_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/dynashard/dynashard/chunk"
	"github.com/dynashard/dynashard/internal/ddbtest"
	"github.com/dynashard/dynashard/repo"
	"github.com/dynashard/dynashard/shard"
)

// TestLayoutMismatch: a Repo built with separator "#" over bases written
// with "." fails every call with ErrLayoutMismatch, having sent
// nothing but the read of the base's layout record: no data request, so
// nothing is read from or written to the wrong physical keys.
func TestLayoutMismatch(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, s *ddbtest.Server) {
		ctx := context.Background()
		l16 := newTable(t, s, 16)
		chunks := s.Table(t, "ChunkKey:S")
		store := func(c chunk.Client) *chunk.Store {
			st, err := chunk.New(c, l16.Table, chunks)
			if err != nil {
				t.Fatal(err)
			}
			return st
		}
		// Written with Hash(16): plain items under "d", large ones under "t".
		w := newRepo[Reply](t, s.Client(), l16)
		wl := newRepo[Reply](t, s.Client(), l16, large("body", store(s.Client())))
		for i := range 10 {
			id := fmt.Sprintf("r%02d", i)
			if _, err := w.Put(ctx, "d", Reply{ID: id, Author: "ann"}); err != nil {
				t.Fatal(err)
			}
			if _, err := wl.Put(ctx, "t", Reply{ID: id, Body: bytes.Repeat([]byte("b"), 5000)}); err != nil {
				t.Fatal(err)
			}
		}

		c, sent := countingClient(s)
		l32 := l16 // another layout: not another N, which is the base's own
		l32.Codec = shard.Codec{Sep: "#"}
		big := large("body", store(c))
		r := newRepo[Reply](t, c, l32)
		cached := newRepo[Reply](t, c, l32, func(o *repo.Options) { o.CacheEntries = 10 })
		rl := newRepo[Reply](t, c, l32, big)
		cachedLarge := newRepo[Reply](t, c, l32, big, func(o *repo.Options) { o.CacheEntries = 10 })
		all := func(r *repo.Repo[Reply], base string) func() error {
			return func() error {
				for _, err := range r.All(ctx, base) {
					if err != nil {
						return err
					}
				}
				return errors.New("All yielded no error")
			}
		}
		for _, tc := range []struct {
			name string
			call func() error
		}{
			{"Get", func() error { _, err := r.Get(ctx, "d", "r01"); return err }},
			{"cached Get", func() error { _, err := cached.Get(ctx, "d", "r01"); return err }},
			{"Put", func() error { _, err := r.Put(ctx, "d", Reply{ID: "new"}); return err }},
			{"Create", func() error { _, err := r.Create(ctx, "d", Reply{ID: "new"}); return err }},
			{"Delete", func() error { return r.Delete(ctx, "d", "r01") }},
			{"List", func() error { _, _, err := r.List(ctx, "d", 5, ""); return err }},
			{"All", all(r, "d")},
			{"Count", func() error { _, err := r.Count(ctx, "d"); return err }},
			{"large Put", func() error { _, err := rl.Put(ctx, "t", Reply{ID: "new", Body: []byte("x")}); return err }},
			{"large Create", func() error { _, err := rl.Create(ctx, "t", Reply{ID: "new", Body: []byte("x")}); return err }},
			{"large Get", func() error { _, err := rl.Get(ctx, "t", "r01"); return err }},
			{"cached large Get", func() error { _, err := cachedLarge.Get(ctx, "t", "r01"); return err }},
			{"large Delete", func() error { return rl.Delete(ctx, "t", "r01") }},
			{"large List", func() error { _, _, err := rl.List(ctx, "t", 5, ""); return err }},
			{"large All", all(rl, "t")},
		} {
			t.Run(tc.name, func(t *testing.T) {
				sent.reset()
				err := tc.call()
				var le *shard.LayoutError
				if !errors.Is(err, shard.ErrLayoutMismatch) || !errors.As(err, &le) {
					t.Fatalf("got %v, want a *shard.LayoutError (ErrLayoutMismatch)", err)
				}
				if errors.Is(err, repo.ErrInvalid) {
					t.Errorf("got %v, which matches ErrInvalid; a mismatch is not bad input", err)
				}
				if diff := cmp.Diff([]string{"GetItem"}, sent.sent()); diff != "" {
					t.Errorf("requests sent (-want +got), want only the record's read:\n%s", diff)
				}
			})
		}

		// Nothing changed under either base.
		for _, tc := range []struct {
			r    *repo.Repo[Reply]
			base string
		}{{w, "d"}, {wl, "t"}} {
			if n, err := tc.r.Count(ctx, tc.base, func(o *repo.Options) { o.ConsistentRead = true }); err != nil || n != 10 {
				t.Errorf("base %s after the refused calls: Count %d, %v; want 10", tc.base, n, err)
			}
			if _, err := tc.r.Get(ctx, tc.base, "new", func(o *repo.Options) { o.ConsistentRead = true }); !errors.Is(err, repo.ErrNotFound) {
				t.Errorf("base %s: the refused Put wrote an item: %v", tc.base, err)
			}
		}
		if got, err := wl.Get(ctx, "t", "r01"); err != nil || len(got.Body) != 5000 {
			t.Errorf("large item after the refused calls: %d bytes, %v; want 5000", len(got.Body), err)
		}

		// The other way round: a base first written with "#" is
		// recorded so, and a "." Repo is refused there.
		if _, err := r.Put(ctx, "e", Reply{ID: "a"}); err != nil {
			t.Fatal(err)
		}
		if _, err := w.Get(ctx, "e", "a"); !errors.Is(err, shard.ErrLayoutMismatch) {
			t.Errorf("\".\" Get of a base written with \"#\": got %v, want ErrLayoutMismatch", err)
		}
		if got, err := r.Get(ctx, "e", "a"); err != nil || got.ID != "a" {
			t.Errorf("\"#\" Get of its own base: got %+v, %v", got, err)
		}
	})
}

// TestLayoutCheckCost: the check costs one read of the record per base
// and client in the life of a process; a large-field Put records the
// base's layout, which plain Repos then find.
func TestLayoutCheckCost(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, s *ddbtest.Server) {
		ctx := context.Background()
		l := newTable(t, s, 4)
		c, sent := countingClient(s)
		st := newStore(t, s, c, l)
		rl := newRepo[Reply](t, c, l, large("body", st))
		if _, err := rl.Put(ctx, "t", Reply{ID: "a", Body: []byte("x")}); err != nil {
			t.Fatal(err)
		}
		// The record's read and write, then the store's read and update.
		if diff := cmp.Diff([]string{"GetItem", "PutItem", "GetItem", "UpdateItem"}, sent.sent()); diff != "" {
			t.Errorf("first large Put (-want +got):\n%s", diff)
		}
		sent.reset()
		if _, err := rl.Put(ctx, "t", Reply{ID: "b", Body: []byte("y")}); err != nil {
			t.Fatal(err)
		}
		if _, err := rl.Get(ctx, "t", "a"); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]string{"GetItem", "UpdateItem", "GetItem"}, sent.sent()); diff != "" {
			t.Errorf("later large Put and Get, checked already (-want +got):\n%s", diff)
		}
		// Another layout over that base is refused: the large Put recorded it.
		other := l
		other.Codec = shard.Codec{Sep: "#"}
		if _, err := newRepo[Reply](t, c, other).Get(ctx, "t", "a"); !errors.Is(err, shard.ErrLayoutMismatch) {
			t.Errorf("separator # Get of a base a large Put wrote with \".\": got %v, want ErrLayoutMismatch", err)
		}
	})
}
