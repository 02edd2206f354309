package shard_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/dynashard/dynashard/internal/ddbtest"
	"github.com/dynashard/dynashard/shard"
)

// TestLoadCancelledMidInput: a Load whose ctx is cancelled while its input
// is still arriving never reports success. The items it had not yet read
// from the input were never written, and before the fix the batch engine
// (internal/batch.WriteSeq) returned no error once every item it had read
// was done: a cancelled Load returned nil with thousands of items missing.
func TestLoadCancelledMidInput(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, s *ddbtest.Server) {
		tbl := newOrders(t, s.Client(), s.Table(t, "pk:S", "sk:S"), shard.Hash(4))
		for _, at := range []int{1, 60, 2000} {
			ctx, cancel := context.WithCancel(context.Background())
			items := func(yield func(string, Order) bool) {
				for i := range 5000 {
					if i == at {
						cancel() // the caller gives up while the input still flows
					}
					if !yield("day", Order{ID: fmt.Sprintf("at%d-%05d", at, i), Amount: i}) {
						return
					}
				}
			}
			_, err := tbl.Load(ctx, items, func(o *shard.LoadOptions) { o.BufferItems = 100 })
			cancel()
			if err == nil {
				t.Errorf("cancel at item %d: Load returned nil; not every item can have been written", at)
			} else if !errors.Is(err, context.Canceled) {
				t.Errorf("cancel at item %d: %v, want an error matching context.Canceled", at, err)
			}
		}
	})
}

// TestLoadStopsReadingOnCancel: once ctx is cancelled, Load reads at most
// one more item from its input. Each item's record check then fails with
// the ctx's error (HistoryTTL < 0: every check reads the record), and
// before the fix Load listed that item and went on reading: under load,
// TestLoadCancel read all 1000 items after its cancel at 200 written.
func TestLoadStopsReadingOnCancel(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, s *ddbtest.Server) {
		l := layoutOf(s.Table(t, "pk:S", "sk:S"), shard.Hash(4))
		l.HistoryTTL = -1
		tbl, err := shard.NewTable[Order](s.Client(), l)
		if err != nil {
			t.Fatal(err)
		}
		const at, total = 10, 3000
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		items := func(yield func(string, Order) bool) {
			for i := range total {
				if i == at {
					cancel()
				}
				if !yield("day", Order{ID: fmt.Sprintf("o%05d", i), Amount: i}) {
					return
				}
			}
		}
		stats, err := tbl.Load(ctx, items)
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Load: %v, want an error matching context.Canceled", err)
		}
		if stats.Read > at+1 {
			t.Errorf("read %d items, want at most %d: the load was over", stats.Read, at+1)
		}
	})
}
