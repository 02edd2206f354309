package shard_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/dynashard/dynashard/internal/ddbtest"
	"github.com/dynashard/dynashard/shard"
)

// TestRecordKeyLimit: in a checked layout the base's layout record has
// partition key base + "#dynashard", so a base is at most 2,038 bytes. A
// base of 2,038 bytes is written; one of 2,039 is refused with
// ErrKeyTooLong (as a key over 2,048 bytes is), before any request. An
// Unchecked layout has no record, and takes the longer base.
func TestRecordKeyLimit(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, s *ddbtest.Server) {
		ctx := context.Background()
		l := layoutOf(ddbtest.TableName(), shard.Hash(4))
		in, err := l.CreateTableInput()
		if err != nil {
			t.Fatal(err)
		}
		l.Table = s.CreateTable(t, in)
		c, sent := countingClient(s)
		tbl, err := shard.NewTable[Order](c, l)
		if err != nil {
			t.Fatal(err)
		}
		longest := strings.Repeat("b", shard.MaxKeyBytes-len("#dynashard"))
		if err := tbl.Put(ctx, longest, Order{ID: "x", Amount: 1}); err != nil {
			t.Fatalf("Put under a base of %d bytes: %v", len(longest), err)
		}
		before := sent.Load()
		err = tbl.Put(ctx, longest+"b", Order{ID: "x", Amount: 1})
		var ke *shard.KeyError
		if !errors.Is(err, shard.ErrKeyTooLong) || !errors.Is(err, shard.ErrInvalidKey) || !errors.As(err, &ke) {
			t.Errorf("Put under a base of %d bytes: got %v, want a *KeyError matching ErrKeyTooLong", len(longest)+1, err)
		}
		if n := sent.Load() - before; n != 0 {
			t.Errorf("sent %d requests, want 0", n)
		}
		l.Unchecked = true
		un, err := shard.NewTable[Order](c, l)
		if err != nil {
			t.Fatal(err)
		}
		if err := un.Put(ctx, longest+"b", Order{ID: "x", Amount: 1}); err != nil {
			t.Errorf("Unchecked Put under a base of %d bytes: %v", len(longest)+1, err)
		}
	})
}
