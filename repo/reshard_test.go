package repo_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/dynashard/dynashard/internal/ddbtest"
	"github.com/dynashard/dynashard/repo"
)

// TestReshard: after shard.Layout.Reshard, a Repo finds items written
// under every count of the base's history (plain and large), writes new
// ones at the newest count, and Delete removes an item wherever it is.
func TestReshard(t *testing.T) {
	ddbtest.EachTx(t, func(t *testing.T, s *ddbtest.Server) {
		ctx := context.Background()
		l := newTable(t, s, 4)
		plain := newRepo[Reply](t, s.Client(), l)
		big := newRepo[Reply](t, s.Client(), l, large("body", newStore(t, s, s.Client(), l)))
		body := bytes.Repeat([]byte("b"), 3000)
		put := func(from, to int) {
			for i := from; i < to; i++ {
				if _, err := plain.Put(ctx, "d", Reply{ID: fmt.Sprint("p", i), Author: "ann"}); err != nil {
					t.Fatal(err)
				}
				if _, err := big.Put(ctx, "t", Reply{ID: fmt.Sprint("l", i), Body: body}); err != nil {
					t.Fatal(err)
				}
			}
		}
		put(0, 12)
		for _, base := range []string{"d", "t"} {
			if _, err := l.Reshard(ctx, s.Client(), base, 8); err != nil {
				t.Fatal(err)
			}
		}
		put(12, 20)
		// A Repo in another process (its own client and cache) reads both.
		other := newRepo[Reply](t, s.Client(), l)
		otherBig := newRepo[Reply](t, s.Client(), l, large("body", newStore(t, s, s.Client(), l)))
		for i := range 20 {
			if got, err := other.Get(ctx, "d", fmt.Sprint("p", i)); err != nil || got.Author != "ann" {
				t.Errorf("Get p%d: %+v, %v", i, got, err)
			}
			if got, err := otherBig.Get(ctx, "t", fmt.Sprint("l", i)); err != nil || !bytes.Equal(got.Body, body) {
				t.Errorf("large Get l%d: %d bytes, %v", i, len(got.Body), err)
			}
		}
		if n, err := other.Count(ctx, "d"); err != nil || n != 20 {
			t.Errorf("Count: %d, %v, want 20", n, err)
		}
		for _, tc := range []struct {
			r    *repo.Repo[Reply]
			base string
			id   string
		}{{plain, "d", "p0"}, {big, "t", "l0"}} {
			if err := tc.r.Delete(ctx, tc.base, tc.id); err != nil {
				t.Fatal(err)
			}
			if _, err := tc.r.Get(ctx, tc.base, tc.id); !errors.Is(err, repo.ErrNotFound) {
				t.Errorf("Get %s after Delete: %v, want ErrNotFound", tc.id, err)
			}
		}
		if h, err := l.Shards(ctx, s.Client(), "t"); err != nil || len(h) != 2 {
			t.Errorf("history of t: %v, %v", h, err)
		}
	})
}
