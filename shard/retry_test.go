package shard_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"

	"github.com/dynashard/dynashard/dynashardtest/faultproxy"
	"github.com/dynashard/dynashard/internal/ddbtest"
	"github.com/dynashard/dynashard/shard"
)

// TestRetriedConditionalWrite: through a proxy that resets half the
// PutItem connections after the write was applied, the SDK retries, and
// the retry's condition (only if absent) fails on the write's own result.
// No Put of a fresh id reports a conflict: each either succeeds or says
// its outcome is unknown, and the item is there either way.
func TestRetriedConditionalWrite(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, s *ddbtest.Server) {
		ctx := context.Background()
		c, _ := throttledClient(t, s, faultproxy.Config{ResetAfterRate: 0.5, Ops: []string{"PutItem"}, Seed: 3})
		name := s.Table(t, "pk:S", "sk:S")
		tbl := newOrders(t, c, name, shard.Hash(4))
		reader := newOrders(t, s.Client(), name, shard.Hash(4))
		unknown := 0
		for i := range 40 {
			id := fmt.Sprint("o", i)
			err := tbl.Put(ctx, "day", Order{ID: id, Amount: i}, func(o *shard.Options) {
				o.Condition = expression.AttributeNotExists(expression.Name("sk"))
			})
			switch {
			case errors.Is(err, shard.ErrConflict):
				t.Errorf("Put %s of a fresh id: %v; want success or an unknown outcome", id, err)
			case err != nil:
				unknown++
			}
			if _, err := reader.Get(ctx, "day", id); err != nil {
				t.Errorf("Get %s: %v", id, err)
			}
		}
		if unknown == 0 {
			t.Errorf("no Put met a retried, refused condition: the test tests nothing")
		}
	})
}
