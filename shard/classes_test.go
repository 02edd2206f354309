package shard_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/dynashard/dynashard/dynashardtest/faultproxy"
	"github.com/dynashard/dynashard/internal/ddbtest"
	"github.com/dynashard/dynashard/scatter"
	"github.com/dynashard/dynashard/shard"
)

// Targeted tests of two of issue 19's classes of lost writes, each the
// outside tester's reproduction: the checker (lin_test.go) finds them too,
// but not on every run.

// TestLoadAcrossRebalance (class 1): a Load whose BatchWriteItems the
// proxy holds 600 ms each runs while another client shrinks the base from
// 8 to 4 shards and rebalances it. Load returns nil and every item it
// loaded is read back by a consistent Get once the history is [4] again:
// no write lands where no reader looks.
func TestLoadAcrossRebalance(t *testing.T) {
	ddbtest.EachTx(t, func(t *testing.T, s *ddbtest.Server) {
		ctx := context.Background()
		name := s.Table(t, "pk:S", "sk:S")
		l := layoutOf(name, shard.Hash(8))
		l.HistoryTTL = 200 * time.Millisecond
		slow, _ := throttledClient(t, s, faultproxy.Config{Latency: 600 * time.Millisecond, Ops: []string{"BatchWriteItem"}})
		loader, err := shard.NewTable[Order](slow, l)
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Record(ctx, s.Client(), "day"); err != nil {
			t.Fatal(err)
		}
		var in []pair
		for i := range 500 {
			in = append(in, pair{"day", Order{ID: fmt.Sprintf("o%03d", i), Amount: i}})
		}
		var wg sync.WaitGroup
		var loadErr error
		wg.Go(func() {
			_, loadErr = loader.Load(ctx, seq2(in), func(o *shard.LoadOptions) { o.MaxConcurrency = 2 })
		})
		time.Sleep(300 * time.Millisecond) // the Load has requests in flight
		if _, err := l.Reshard(ctx, s.Client(), "day", 4); err != nil {
			t.Fatal(err)
		}
		if p, err := shard.Rebalance(ctx, s.Client(), l, "day"); err != nil || p.Retired == nil {
			t.Fatalf("Rebalance: %+v, %v", p, err)
		}
		wg.Wait()
		if loadErr != nil {
			t.Fatal(loadErr)
		}
		// Items the Load wrote after the sweep passed their old suffix are
		// still under the retired count: a second Rebalance finds them.
		if _, err := shard.Rebalance(ctx, s.Client(), l, "day"); err != nil {
			t.Fatal(err)
		}
		reader := newOrders(t, s.Client(), name, shard.Hash(8))
		if h, err := reader.Shards(ctx, "day"); err != nil || !slices.Equal(h, []int{4}) {
			t.Fatalf("history %v, %v; want [4]", h, err)
		}
		lost := 0
		for _, p := range in {
			if _, err := reader.Get(ctx, "day", p.item.ID, func(o *shard.Options) { o.ConsistentRead = true }); err != nil {
				lost++
			}
		}
		if lost > 0 {
			t.Errorf("%d of %d loaded items are read by no Get", lost, len(in))
		}
	})
}

// TestRebalanceKeepsNewest (class 3): Hash(2), 100 ids written, Reshard
// to 4, every id rewritten, Reshard to 8, Rebalance: every id holds its
// second value (a Grower that doubles twice leaves exactly this).
func TestRebalanceKeepsNewest(t *testing.T) {
	ddbtest.EachTx(t, func(t *testing.T, s *ddbtest.Server) {
		ctx := context.Background()
		name := s.Table(t, "pk:S", "sk:S")
		tbl := newOrders(t, s.Client(), name, shard.Hash(2))
		write := func(v int) {
			for i := range 100 {
				if err := tbl.Put(ctx, "day", Order{ID: fmt.Sprint("o", i), Amount: v}); err != nil {
					t.Fatal(err)
				}
			}
		}
		write(1)
		if _, err := tbl.Reshard(ctx, "day", 4); err != nil {
			t.Fatal(err)
		}
		write(2)
		if _, err := tbl.Reshard(ctx, "day", 8); err != nil {
			t.Fatal(err)
		}
		if _, err := shard.Rebalance(ctx, s.Client(), layoutOf(name, shard.Hash(2)), "day"); err != nil {
			t.Fatal(err)
		}
		old := 0
		for i := range 100 {
			o, err := tbl.Get(ctx, "day", fmt.Sprint("o", i), func(o *shard.Options) { o.ConsistentRead = true })
			if err != nil || o.Amount != 2 {
				old++
			}
		}
		if old > 0 {
			t.Errorf("%d of 100 ids lost their second value", old)
		}
	})
}

// pausedWrites is a client whose first item write (PutItem, UpdateItem
// or TransactWriteItems) waits, once reached is closed, until resume is.
type pausedWrites struct {
	*dynamodb.Client
	once            sync.Once
	reached, resume chan struct{}
}

func (c *pausedWrites) pause() {
	c.once.Do(func() {
		close(c.reached)
		<-c.resume
	})
}

func (c *pausedWrites) PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	c.pause()
	return c.Client.PutItem(ctx, in, optFns...)
}

func (c *pausedWrites) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	c.pause()
	return c.Client.UpdateItem(ctx, in, optFns...)
}

func (c *pausedWrites) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, optFns ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	c.pause()
	return c.Client.TransactWriteItems(ctx, in, optFns...)
}

// TestDeleteRacingMove (class 6): a Delete that returns while Rebalance
// is about to move the item (it has read it, its write waits) stays
// deleted: the move does not bring the item back.
func TestDeleteRacingMove(t *testing.T) {
	ddbtest.EachTx(t, func(t *testing.T, s *ddbtest.Server) {
		ctx := context.Background()
		name := s.Table(t, "pk:S", "sk:S")
		l := layoutOf(name, shard.Hash(4))
		tbl := newOrders(t, s.Client(), name, shard.Hash(4))
		id := "o0"
		for i := 0; shard.Hash(4).Pick(id) == shard.Hash(8).Pick(id); i++ {
			id = fmt.Sprint("o", i)
		}
		if err := tbl.Put(ctx, "day", Order{ID: id, Amount: 1}); err != nil {
			t.Fatal(err)
		}
		if _, err := tbl.Reshard(ctx, "day", 8); err != nil {
			t.Fatal(err)
		}
		c := &pausedWrites{Client: s.Client(), reached: make(chan struct{}), resume: make(chan struct{})}
		var wg sync.WaitGroup
		var rerr error
		wg.Go(func() { _, rerr = shard.Rebalance(ctx, c, l, "day") })
		<-c.reached
		if err := tbl.Delete(ctx, "day", id); err != nil {
			t.Fatal(err)
		}
		close(c.resume)
		wg.Wait()
		if rerr != nil {
			t.Fatal(rerr)
		}
		if o, err := tbl.Get(ctx, "day", id, func(o *shard.Options) { o.ConsistentRead = true }); !errors.Is(err, shard.ErrNotFound) {
			t.Errorf("Get after the Delete and the move: %+v, %v; want ErrNotFound", o, err)
		}
	})
}

// TestConditionalWriteRacingDelete (class 2): a conditional Put (only if
// absent) and an Update of an item stored under the older of two counts,
// held just before their first write while a Delete of the item returns,
// end in a state some serial order gives: the write applied after the
// Delete (the item holds the write's value and nothing of the deleted
// one), or, for the conditional Put, refused with the item still deleted.
func TestConditionalWriteRacingDelete(t *testing.T) {
	ddbtest.EachTx(t, func(t *testing.T, s *ddbtest.Server) {
		ctx := context.Background()
		name := s.Table(t, "pk:S", "sk:S")
		tbl := newOrders(t, s.Client(), name, shard.Hash(4))
		for _, op := range []string{"put if absent", "update"} {
			id := fmt.Sprint(op, 0)
			for i := 0; shard.Hash(4).Pick(id) == shard.Hash(8).Pick(id); i++ {
				id = fmt.Sprint(op, i)
			}
			if err := tbl.Put(ctx, "day", Order{ID: id, Amount: 1, Note: "deleted"}); err != nil {
				t.Fatal(err)
			}
			if op == "put if absent" {
				if _, err := tbl.Reshard(ctx, "day", 8); err != nil {
					t.Fatal(err)
				}
			}
			c := &pausedWrites{Client: s.Client(), reached: make(chan struct{}), resume: make(chan struct{})}
			writer := newOrders(t, c, name, shard.Hash(4))
			var wg sync.WaitGroup
			var werr error
			wg.Go(func() {
				if op == "update" {
					_, werr = writer.Update(ctx, "day", id, expression.Set(expression.Name("amount"), expression.Value(2)))
					return
				}
				werr = writer.Put(ctx, "day", Order{ID: id, Amount: 2}, func(o *shard.Options) {
					o.Condition = expression.AttributeNotExists(expression.Name("sk"))
				})
			})
			select {
			case <-c.reached:
			case <-time.After(time.Minute):
				t.Fatalf("%s sent no write", op)
			}
			if err := tbl.Delete(ctx, "day", id); err != nil {
				t.Fatal(err)
			}
			close(c.resume)
			wg.Wait()
			got, err := tbl.Get(ctx, "day", id, func(o *shard.Options) { o.ConsistentRead = true })
			switch {
			case werr == nil && err == nil && got.Amount == 2 && got.Note == "":
			case op == "put if absent" && errors.Is(werr, shard.ErrConflict) && errors.Is(err, shard.ErrNotFound):
			default:
				t.Errorf("%s racing a Delete: the write returned %v, then Get %+v, %v: no serial order gives that", op, werr, got, err)
			}
		}
	})
}

// TestReshardSeenInProcess (class 8): a Reshard made through one client
// is seen at once by a Table and a Scatter on another client of the same
// process (the history is cached per process, not per client): an item
// written after it under the new count is found by Get and scatter.All.
func TestReshardSeenInProcess(t *testing.T) {
	ddbtest.EachTx(t, func(t *testing.T, s *ddbtest.Server) {
		ctx := context.Background()
		name := s.Table(t, "pk:S", "sk:S")
		l := layoutOf(name, shard.Hash(4))
		l.HistoryTTL = 5 * time.Second // long enough for a per-client cache to show
		a, err := shard.NewTable[Order](s.Client(), l)
		if err != nil {
			t.Fatal(err)
		}
		b, err := shard.NewTable[Order](s.Client(), l)
		if err != nil {
			t.Fatal(err)
		}
		sc, err := scatter.New(s.Client(), l)
		if err != nil {
			t.Fatal(err)
		}
		if err := b.Put(ctx, "day", Order{ID: "x"}); err != nil { // b caches [4]
			t.Fatal(err)
		}
		if _, err := a.Reshard(ctx, "day", 8); err != nil {
			t.Fatal(err)
		}
		id := "y0"
		for i := 0; shard.Hash(4).Pick(id) == shard.Hash(8).Pick(id); i++ {
			id = fmt.Sprint("y", i)
		}
		if err := a.Put(ctx, "day", Order{ID: id}); err != nil {
			t.Fatal(err)
		}
		if _, err := b.Get(ctx, "day", id); err != nil {
			t.Errorf("Get through the other client: %v", err)
		}
		var got []string
		for it, err := range sc.All(ctx, "day") {
			var o Order
			if err == nil {
				err = it.Unmarshal(&o)
			}
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, o.ID)
		}
		if want := []string{"x", id}; !slices.Equal(got, want) {
			t.Errorf("scatter through the other client: %v, want %v", got, want)
		}
	})
}
