package repo_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/dynashard/dynashard/chunk"
	"github.com/dynashard/dynashard/internal/chunkhook"
	"github.com/dynashard/dynashard/internal/ddbtest"
	"github.com/dynashard/dynashard/repo"
	"github.com/dynashard/dynashard/shard"
)

// TestReshard: after shard.Layout.Reshard, a Repo finds items written
// under every count of the base's history (plain and large), writes new
// ones at the newest count, and Delete removes an item wherever it is.
// Each Reshard waits out the default fence (20 s): the two bases' run
// together, and the test beside TestReshardLargeValues.
func TestReshard(t *testing.T) {
	t.Parallel()
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
		var wg sync.WaitGroup
		for _, base := range []string{"d", "t"} {
			tbl := admin(t, s.Client(), l)
			wg.Go(func() {
				if _, err := tbl.Reshard(ctx, base, 8); err != nil {
					t.Errorf("Reshard %s: %v", base, err)
				}
			})
		}
		wg.Wait()
		if t.Failed() {
			t.FailNow()
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
		if h, err := admin(t, s.Client(), l).Shards(ctx, "t"); err != nil || len(h) != 2 {
			t.Errorf("history of t: %v, %v", h, err)
		}
	})
}

// Doc is a versioned item whose body is a large value.
type Doc struct {
	Key  string `dynamodbav:"pk"`
	ID   string `dynamodbav:"sk"`
	Body []byte `dynamodbav:"body"`
	Ver  int64  `dynamodbav:"ver,omitempty"`
}

// TestReshardLargeValues: a large value stays its item's through a
// Reshard, a Rebalance that moves the item and a Sweep run long after, and
// optimistic locking keeps working: a value read after the Reshard can be
// written back (issue 19, classes 4 and 5). It waits out fences, beside
// TestReshard.
func TestReshardLargeValues(t *testing.T) {
	t.Parallel()
	ddbtest.EachTx(t, func(t *testing.T, s *ddbtest.Server) {
		ctx := context.Background()
		c := s.Client()
		l := newTable(t, s, 4)
		st := newStore(t, s, c, l)
		r := newRepo[Doc](t, c, l, large("body", st), func(o *repo.Options) { o.Version = "ver" })
		rng := rand.New(rand.NewPCG(19, 4))
		body := func() []byte { // 20 KB that no compression shrinks: chunks
			b := make([]byte, 20<<10)
			for i := range b {
				b[i] = byte(rng.Uint32())
			}
			return b
		}
		const n = 24
		want := map[string]Doc{}
		for i := range n {
			d, err := r.Put(ctx, "b", Doc{ID: fmt.Sprint("d", i), Body: body()})
			if err != nil {
				t.Fatal(err)
			}
			want[d.ID] = d
		}
		if _, err := admin(t, c, l).Reshard(ctx, "b", 8); err != nil {
			t.Fatal(err)
		}
		// Read and write back half of them under the new history: the
		// version check runs where each item is.
		for i := 0; i < n; i += 2 {
			id := fmt.Sprint("d", i)
			d, err := r.Get(ctx, "b", id)
			if err != nil || d.Ver != 1 {
				t.Fatalf("Get %s after Reshard: version %d, %v", id, d.Ver, err)
			}
			d.Body = body()
			put, err := r.Put(ctx, "b", d)
			if err != nil {
				t.Errorf("Put %s after Reshard: %v", id, err)
				continue
			}
			want[id] = put
		}
		p, err := admin(t, c, l).Rebalance(ctx, "b")
		if err != nil || p.Moved == 0 || p.Retired == nil {
			t.Fatalf("Rebalance: %+v, %v; want items moved and the old count retired", p, err)
		}
		// Long after (past Grace), a Sweep deletes nothing that is current.
		chunkhook.SetClock(st, func() time.Time { return time.Now().Add(2 * chunk.DefaultGrace) })
		if _, err := st.Sweep(ctx); err != nil {
			t.Fatal(err)
		}
		for id, w := range want {
			d, err := r.Get(ctx, "b", id)
			if err != nil || !bytes.Equal(d.Body, w.Body) || d.Ver != w.Ver {
				t.Errorf("Get %s after Rebalance and Sweep: %d bytes, version %d, %v; want version %d", id, len(d.Body), d.Ver, err, w.Ver)
				continue
			}
			if _, err := r.Put(ctx, "b", d); err != nil {
				t.Errorf("Put %s back after Rebalance: %v", id, err)
			}
		}
	})
}

// admin is a Table on l through c, for the per-base operations (Reshard,
// Shards, Rebalance), which a Repo leaves to its layout's Table.
func admin(t *testing.T, c shard.Client, l shard.Layout) *shard.Table[map[string]any] {
	t.Helper()
	tbl, err := shard.NewTable[map[string]any](c, l)
	if err != nil {
		t.Fatal(err)
	}
	return tbl
}
