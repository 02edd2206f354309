package shard_test

import (
	"time"

	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynashard/dynashard/internal/ddbtest"
	"github.com/dynashard/dynashard/shard"
)

// strategyOf is writer i's strategy in TestLayoutRace: two kinds, two Ns
// of each.
func strategyOf(i int) shard.Strategy {
	n := 8 + 8*(i/2%2)
	if i%2 == 0 {
		return shard.Hash(n)
	}
	return shard.CodePointProduct(n)
}

func kindOf(i int) string { return fmt.Sprintf("%T", strategyOf(i)) }

func layoutOf(table string, s shard.Strategy) shard.Layout {
	// A short HistoryTTL keeps a Reshard's fence (about 1 s) short.
	return shard.Layout{Table: table, PartitionKey: "pk", SortKey: "sk", Strategy: s, HistoryTTL: 50 * time.Millisecond}
}

// TestLayoutMismatch: a base written with one layout is refused by every
// entry point built from another, before any data request.
func TestLayoutMismatch(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, s *ddbtest.Server) {
		ctx := context.Background()
		name := s.Table(t, "pk:S", "sk:S")
		writer := newOrders(t, s.Client(), name, shard.Hash(16))
		if err := writer.Put(ctx, "2014-07-09", Order{ID: "ORD-1", Amount: 1}); err != nil {
			t.Fatal(err)
		}
		for _, other := range []shard.Layout{
			layoutOf(name, shard.Random(16)),
			layoutOf(name, shard.CodePointProduct(16)),
			{Table: name, PartitionKey: "pk", SortKey: "sk", Strategy: shard.Hash(16), Codec: shard.Codec{Sep: "#"}},
		} {
			t.Run(other.String(), func(t *testing.T) {
				c, sent := countingClient(s)
				tbl, err := shard.NewTable[Order](c, other)
				if err != nil {
					t.Fatal(err)
				}
				calls := map[string]func() error{
					"Put": func() error { return tbl.Put(ctx, "2014-07-09", Order{ID: "ORD-2"}) },
					"Load": func() error {
						_, err := tbl.Load(ctx, seq2([]pair{{"2014-07-09", Order{ID: "ORD-3"}}}))
						return err
					},
				}
				if other.Strategy != shard.Random(16) { // Random cannot Get by id at all
					calls["Get"] = func() error { _, err := tbl.Get(ctx, "2014-07-09", "ORD-1"); return err }
					calls["Delete"] = func() error { return tbl.Delete(ctx, "2014-07-09", "ORD-1") }
				}
				for op, call := range calls {
					before := sent.Load()
					err := call()
					var le *shard.LayoutError
					if !errors.Is(err, shard.ErrLayoutMismatch) || !errors.As(err, &le) || le.Base != "2014-07-09" {
						t.Errorf("%s: %v, want a *LayoutError for base 2014-07-09", op, err)
					}
					// At most the record read: no data request.
					if n := sent.Load() - before; n > 1 {
						t.Errorf("%s sent %d requests, want at most 1 (the record)", op, n)
					}
				}
			})
		}
		// The writer's own layout still works, and a new base takes any.
		if _, err := writer.Get(ctx, "2014-07-09", "ORD-1"); err != nil {
			t.Errorf("Get with the recorded layout: %v", err)
		}
		if err := newOrders(t, s.Client(), name, shard.Hash(8)).Put(ctx, "2014-07-10", Order{ID: "x"}); err != nil {
			t.Errorf("another base with another layout: %v", err)
		}
	})
}

// TestLayoutOtherN: N is not part of the layout a base is checked
// against: a Layout that differs only in N reads and writes a base written
// before at the base's own recorded N, and starts new bases at its own.
func TestLayoutOtherN(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, s *ddbtest.Server) {
		ctx := context.Background()
		name := s.Table(t, "pk:S", "sk:S")
		writer := newOrders(t, s.Client(), name, shard.Hash(16))
		if err := writer.Put(ctx, "old", Order{ID: "ORD-1", Amount: 1}); err != nil {
			t.Fatal(err)
		}
		other := newOrders(t, s.Client(), name, shard.Hash(8))
		if err := other.Put(ctx, "old", Order{ID: "ORD-2", Amount: 2}); err != nil {
			t.Fatal(err)
		}
		for _, id := range []string{"ORD-1", "ORD-2"} {
			if got, err := other.Get(ctx, "old", id); err != nil || got.ID != id {
				t.Errorf("Get %s through N=8: %+v, %v", id, got, err)
			}
			pk := fmt.Sprintf("old.%d", shard.Hash(16).Pick(id))
			if rawGet(t, s.Client(), name, pk, id) == nil {
				t.Errorf("%s not at %s, the base's recorded N=16 key", id, pk)
			}
		}
		if err := other.Put(ctx, "new", Order{ID: "ORD-3"}); err != nil {
			t.Fatal(err)
		}
		if h, err := writer.Shards(ctx, "new"); err != nil || !slices.Equal(h, []int{8}) {
			t.Errorf("new base written through N=8: history %v, %v, want [8]", h, err)
		}
	})
}

// TestLayoutRace: writers racing on a new base with different layouts
// agree: exactly one layout is recorded, its writers succeed and every
// other writer gets the mismatch. Writers that differ only in N all
// succeed, at the one N recorded.
func TestLayoutRace(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, s *ddbtest.Server) {
		name := s.Table(t, "pk:S", "sk:S")
		const writers = 8
		var wg sync.WaitGroup
		errs := make([]error, writers)
		for i := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				// A client each, so that no writer shares another's cache.
				tbl := newOrders(t, s.Client(), name, strategyOf(i))
				errs[i] = tbl.Put(context.Background(), "day", Order{ID: fmt.Sprint("o", i)})
			}()
		}
		wg.Wait()
		won := map[string]bool{}
		for i, err := range errs {
			kind := kindOf(i)
			switch {
			case err == nil:
				won[kind] = true
			case !errors.Is(err, shard.ErrLayoutMismatch):
				t.Errorf("writer %d (%v): %v, want nil or ErrLayoutMismatch", i, strategyOf(i), err)
			}
		}
		if len(won) != 1 {
			t.Fatalf("layouts that wrote: %v, want exactly one", won)
		}
		for i, err := range errs {
			if won[kindOf(i)] != (err == nil) {
				t.Errorf("writer %d (%v): %v, though %v won", i, strategyOf(i), err, won)
			}
		}
		// The winners wrote at the one N recorded, whatever their own.
		winner := slices.IndexFunc(errs, func(err error) bool { return err == nil })
		h, err := newOrders(t, s.Client(), name, strategyOf(winner)).Shards(context.Background(), "day")
		if err != nil || len(h) != 1 {
			t.Fatalf("history %v, %v, want one count", h, err)
		}
		for i, err := range errs {
			if err != nil {
				continue
			}
			id := fmt.Sprint("o", i)
			s2, _ := strategyOf(i).(shard.Resizable)
			pk := fmt.Sprintf("day.%d", s2.WithN(h[0]).Pick(id))
			if rawGet(t, s.Client(), name, pk, id) == nil {
				t.Errorf("writer %d: %s not at %s", i, id, pk)
			}
		}
	})
}

// TestLayoutRecordCost: the record costs one GetItem per base for a
// client's life (plus one PutItem the first time), and nothing for an
// Unchecked layout.
func TestLayoutRecordCost(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, s *ddbtest.Server) {
		ctx := context.Background()
		name := s.Table(t, "pk:S", "sk:S")
		c, sent := countingClient(s)
		l := layoutOf(name, shard.Hash(4))
		l.HistoryTTL = time.Minute // the cost per HistoryTTL, however slow the machine
		tbl, err := shard.NewTable[Order](c, l)
		if err != nil {
			t.Fatal(err)
		}
		for i := range 5 {
			if err := tbl.Put(ctx, "day", Order{ID: fmt.Sprint(i)}); err != nil {
				t.Fatal(err)
			}
			if _, err := tbl.Get(ctx, "day", fmt.Sprint(i)); err != nil {
				t.Fatal(err)
			}
		}
		// 5 Puts + 5 Gets + the record: one GetItem, one PutItem.
		if got := sent.Load(); got != 12 {
			t.Errorf("%d requests, want 12 (10 data + 2 for the record)", got)
		}
		uc, usent := countingClient(s)
		l = layoutOf(name, shard.Hash(8))
		l.Unchecked = true
		loose, err := shard.NewTable[Order](uc, l)
		if err != nil {
			t.Fatal(err)
		}
		if err := loose.Put(ctx, "day", Order{ID: "u"}); err != nil || usent.Load() != 1 {
			t.Errorf("Unchecked Put: %v after %d requests, want nil after 1", err, usent.Load())
		}
	})
}

// TestLayoutRecordForm: the record is an item at base#dynashard, which no
// physical key can be, and a malformed one is an error, not a match.
func TestLayoutRecordForm(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, s *ddbtest.Server) {
		ctx := context.Background()
		c := s.Client()
		name := s.Table(t, "pk:S", "sk:S")
		if err := newOrders(t, c, name, shard.Hash(4)).Put(ctx, "day", Order{ID: "a"}); err != nil {
			t.Fatal(err)
		}
		rec := rawGet(t, c, name, "day#dynashard", "dynashard#layout")
		if !shard.IsRecord(rec) {
			t.Fatalf("no record at day#dynashard: %v", rec)
		}
		for _, sep := range []string{".", "#", "-", "dyna"} {
			if _, _, err := (shard.Codec{Sep: sep}).Parse("day#dynashard"); err == nil {
				t.Errorf("day#dynashard parses as a physical key with separator %q", sep)
			}
		}
		rec["dynashard:shards"] = &types.AttributeValueMemberL{}
		if _, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(name), Item: rec}); err != nil {
			t.Fatal(err)
		}
		fresh := newOrders(t, s.Client(), name, shard.Hash(4))
		consistent := func(o *shard.Options) { o.ConsistentRead = true } // reads the record, not this process's cache
		if _, err := fresh.Get(ctx, "day", "a", consistent); err == nil || errors.Is(err, shard.ErrLayoutMismatch) || !errors.Is(err, shard.ErrMalformedRecord) {
			t.Errorf("Get with a malformed record: %v, want an error that is not a mismatch", err)
		}
	})
}

func TestLayoutValidate(t *testing.T) {
	ok := layoutOf("t", shard.Hash(2))
	for name, l := range map[string]shard.Layout{
		"no table":            {PartitionKey: "pk", Strategy: shard.Hash(2)},
		"no partition key":    {Table: "t", Strategy: shard.Hash(2)},
		"same keys":           {Table: "t", PartitionKey: "k", SortKey: "k", Strategy: shard.Hash(2)},
		"bad sort type":       {Table: "t", PartitionKey: "pk", SortKey: "sk", SortKeyType: "BOOL", Strategy: shard.Hash(2)},
		"type without key":    {Table: "t", PartitionKey: "pk", SortKeyType: "N", Strategy: shard.Hash(2)},
		"no strategy":         {Table: "t", PartitionKey: "pk"},
		"N too large":         {Table: "t", PartitionKey: "pk", Strategy: shard.Hash(shard.MaxN + 1)},
		"digit separator":     {Table: "t", PartitionKey: "pk", Strategy: shard.Hash(2), Codec: shard.Codec{Sep: "1"}},
		"index without key":   {Table: "t", PartitionKey: "g", Index: "i", Unchecked: true, Strategy: shard.Hash(2)},
		"index checked":       {Table: "t", PartitionKey: "g", Index: "i", TableKey: []string{"id"}, Strategy: shard.Hash(2)},
		"table key no index":  {Table: "t", PartitionKey: "pk", TableKey: []string{"id"}, Strategy: shard.Hash(2)},
		"HistoryTTL too long": {Table: "t", PartitionKey: "pk", Strategy: shard.Hash(2), HistoryTTL: shard.MaxHistoryTTL + time.Millisecond},
	} {
		if err := l.Validate(); !errors.Is(err, shard.ErrInvalidLayout) || !errors.Is(err, shard.ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalidLayout", name, err)
		}
	}
	if err := ok.Validate(); err != nil {
		t.Errorf("valid layout: %v", err)
	}
}

// TestCreateTableInput: the helper's table is usable by the layout.
func TestCreateTableInput(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, s *ddbtest.Server) {
		l := layoutOf(ddbtest.TableName(), shard.Hash(4))
		in, err := l.CreateTableInput()
		if err != nil {
			t.Fatal(err)
		}
		l.Table = s.CreateTable(t, in)
		tbl, err := shard.NewTable[Order](s.Client(), l)
		if err != nil {
			t.Fatal(err)
		}
		if err := tbl.Put(context.Background(), "d", Order{ID: "x", Amount: 3}); err != nil {
			t.Fatal(err)
		}
		if got, err := tbl.Get(context.Background(), "d", "x"); err != nil || got.Amount != 3 {
			t.Errorf("Get = %+v, %v", got, err)
		}
	})
}

// TestLayoutCheckShared: concurrent first writers of one base through one
// client share one check: one GetItem and one PutItem for the record.
func TestLayoutCheckShared(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, s *ddbtest.Server) {
		c, sent := countingClient(s)
		tbl := newOrders(t, c, s.Table(t, "pk:S", "sk:S"), shard.Hash(4))
		const writers = 16
		var wg sync.WaitGroup
		errs := make([]error, writers)
		for i := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[i] = tbl.Put(context.Background(), "busy-day", Order{ID: fmt.Sprint("o", i)})
			}()
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Errorf("writer %d: %v", i, err)
			}
		}
		if got, want := sent.Load(), int64(writers+2); got != want {
			t.Errorf("%d requests, want %d (%d data puts, one record read, one record write)", got, want, writers)
		}
	})
}
