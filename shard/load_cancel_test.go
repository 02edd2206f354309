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
