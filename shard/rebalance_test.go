package shard_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/dynashard/dynashard/internal/ddbtest"
	"github.com/dynashard/dynashard/scatter"
	"github.com/dynashard/dynashard/shard"
)

// crashingClient wraps the real client and makes its k-th PutItem,
// DeleteItem or TransactWriteItems fail, before sending it or after it was applied (a crash, or
// a reply lost), to interrupt a Rebalance at that point.
type crashingClient struct {
	*dynamodb.Client
	k     int64
	after bool
	sent  atomic.Int64
}

var errCrash = errors.New("injected crash")

func (c *crashingClient) crash(apply func() error) error {
	if c.sent.Add(1) != c.k {
		return apply()
	}
	if c.after {
		if err := apply(); err != nil {
			return err
		}
	}
	return errCrash
}

func (c *crashingClient) PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	var out *dynamodb.PutItemOutput
	err := c.crash(func() (err error) { out, err = c.Client.PutItem(ctx, in, optFns...); return err })
	return out, err
}

func (c *crashingClient) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, optFns ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	var out *dynamodb.TransactWriteItemsOutput
	err := c.crash(func() (err error) { out, err = c.Client.TransactWriteItems(ctx, in, optFns...); return err })
	return out, err
}

func (c *crashingClient) DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	var out *dynamodb.DeleteItemOutput
	err := c.crash(func() (err error) { out, err = c.Client.DeleteItem(ctx, in, optFns...); return err })
	return out, err
}

// grown writes items under [4], grows to 8, writes more and rewrites some
// under 8 (in place: a write never leaves a second copy), and returns what each id must read as.
func grown(t *testing.T, tbl *shard.Table[Order]) map[string]int {
	t.Helper()
	ctx := context.Background()
	want := map[string]int{}
	put := func(from, to, amount int) {
		for i := from; i < to; i++ {
			id := fmt.Sprintf("o%02d", i)
			if err := tbl.Put(ctx, "day", Order{ID: id, Amount: amount + i}); err != nil {
				t.Fatal(err)
			}
			want[id] = amount + i
		}
	}
	put(0, 24, 0)
	if _, err := tbl.Reshard(ctx, "day", 8); err != nil {
		t.Fatal(err)
	}
	put(24, 36, 0)
	for i := 0; i < 24; i += 4 {
		put(i, i+1, 100)
	}
	return want
}

// checkOnce reads the base through scatter (All) and Get: every id once,
// with its newest value.
func checkOnce(t *testing.T, c *dynamodb.Client, tbl *shard.Table[Order], want map[string]int) {
	t.Helper()
	ctx := context.Background()
	l := tbl.Layout()
	l.HistoryTTL = -1
	sc, err := scatter.New(c, l)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for it, err := range sc.All(ctx, "day") {
		if err != nil {
			t.Fatal(err)
		}
		var o Order
		if err := it.Unmarshal(&o); err != nil {
			t.Fatal(err)
		}
		if _, dup := got[o.ID]; dup {
			t.Errorf("All returned %s twice", o.ID)
		}
		got[o.ID] = o.Amount
	}
	for id, amount := range want {
		if got[id] != amount {
			t.Errorf("All: %s = %d, want %d", id, got[id], amount)
		}
		if o, err := tbl.Get(ctx, "day", id, func(o *shard.Options) { o.ConsistentRead = true }); err != nil || o.Amount != amount {
			t.Errorf("Get %s: %+v, %v, want amount %d", id, o, err, amount)
		}
	}
	if len(got) != len(want) {
		t.Errorf("All returned %d ids, want %d", len(got), len(want))
	}
}

// checkSettled: after a complete Rebalance every item is stored once, at
// its key under the newest count, and the history is that count alone.
func checkSettled(t *testing.T, c *dynamodb.Client, tbl *shard.Table[Order], want map[string]int, n int) {
	t.Helper()
	if h, err := tbl.Shards(context.Background(), "day"); err != nil || !slices.Equal(h, []int{n}) {
		t.Errorf("history %v, %v, want [%d]", h, err, n)
	}
	stored := scanAll(t, c, tbl.Layout().Table)
	for id, amount := range want {
		pk := shard.Key("day", shard.Hash(n).Pick(id))
		if o, ok := stored[pk+"/"+id]; !ok || o.Amount != amount {
			t.Errorf("%s at %s: %+v, %v, want amount %d", id, pk, o, ok, amount)
		}
	}
	if len(stored) != len(want) {
		t.Errorf("%d items stored, want %d (one per id)", len(stored), len(want))
	}
}

// TestRebalance: Rebalance moves every item to its key under the newest
// count, drops older copies, reports its progress, and retires the older
// counts; a second run has nothing to do.
func TestRebalance(t *testing.T) {
	ddbtest.EachTx(t, func(t *testing.T, s *ddbtest.Server) {
		ctx := context.Background()
		c := s.Client()
		l := layoutOf(s.Table(t, "pk:S", "sk:S"), shard.Hash(4))
		l.HistoryTTL = -1
		tbl, err := shard.NewTable[Order](c, l)
		if err != nil {
			t.Fatal(err)
		}
		want := grown(t, tbl)
		var reports []shard.RebalanceProgress
		p, err := shard.Rebalance(ctx, c, l, "day", func(o *shard.RebalanceOptions) {
			o.OnProgress = func(p shard.RebalanceProgress) { reports = append(reports, p) }
		})
		if err != nil {
			t.Fatal(err)
		}
		moving, copies := 0, 0
		for id := range want {
			if shard.Hash(4).Pick(id) != shard.Hash(8).Pick(id) {
				var n int
				fmt.Sscanf(id, "o%d", &n)
				switch {
				case n >= 24:
				case n%4 == 0:
					copies++
				default:
					moving++
				}
			}
		}
		// A rewritten item was rewritten in place: it moves like the
		// others, and no older copy is left to drop.
		if p.Moved != moving+copies || p.Dropped != 0 || !slices.Equal(p.Retired, []int{4, 8}) || p.Suffix != 8 || p.Suffixes != 8 {
			t.Errorf("progress %+v, want Moved %d, Dropped 0, Retired [4 8], Suffix 8 of 8", p, moving+copies)
		}
		if len(reports) != 8 || reports[7].Scanned != p.Scanned {
			t.Errorf("%d progress reports (last %+v), want 8", len(reports), reports)
		}
		checkSettled(t, c, tbl, want, 8)
		checkOnce(t, c, tbl, want)
		if p, err := shard.Rebalance(ctx, c, l, "day"); err != nil || p.Moved+p.Scanned != 0 {
			t.Errorf("second Rebalance: %+v, %v, want nothing done", p, err)
		}
	})
}

// TestRebalancePending: a Rebalance of a base whose newest count is still
// pending (as a Grower's grow is until a write finishes it) fails with
// ErrConflict and moves nothing; a Reshard to that count finishes it, and
// the Rebalance then does its work.
func TestRebalancePending(t *testing.T) {
	ddbtest.EachTx(t, func(t *testing.T, s *ddbtest.Server) {
		ctx := context.Background()
		c := s.Client()
		l := layoutOf(s.Table(t, "pk:S", "sk:S"), shard.Hash(4))
		l.HistoryTTL = -1
		tbl, err := shard.NewTable[Order](c, l)
		if err != nil {
			t.Fatal(err)
		}
		want := grown(t, tbl)
		if err := l.Announce(ctx, c, "day", 16); err != nil {
			t.Fatal(err)
		}
		p, err := tbl.Rebalance(ctx, "day")
		if !errors.Is(err, shard.ErrConflict) || !strings.Contains(err.Error(), "Reshard to 16") || p.Scanned != 0 {
			t.Fatalf("Rebalance with 16 pending: %+v, %v; want ErrConflict naming Reshard to 16, nothing scanned", p, err)
		}
		if h, err := tbl.Reshard(ctx, "day", 16); err != nil || !slices.Equal(h, []int{4, 8, 16}) {
			t.Fatalf("Reshard to the pending 16: %v, %v; want [4 8 16]", h, err)
		}
		if _, err := tbl.Rebalance(ctx, "day"); err != nil {
			t.Fatal(err)
		}
		checkSettled(t, c, tbl, want, 16)
		checkOnce(t, c, tbl, want)
	})
}

// TestRebalanceInterrupted: a Rebalance stopped at its k-th write (before
// or after the write is applied), for every k, leaves every item readable
// exactly once with its newest value, and a re-run (from the start, or
// from the last suffix it reported) finishes the job.
func TestRebalanceInterrupted(t *testing.T) {
	ddbtest.EachTx(t, func(t *testing.T, s *ddbtest.Server) {
		ctx := context.Background()
		for _, after := range []bool{false, true} {
			for k := int64(1); ; k++ {
				c := s.Client()
				l := layoutOf(s.Table(t, "pk:S", "sk:S"), shard.Hash(4))
				l.HistoryTTL = -1
				tbl, err := shard.NewTable[Order](c, l)
				if err != nil {
					t.Fatal(err)
				}
				want := grown(t, tbl)
				cc := &crashingClient{Client: c, k: k, after: after}
				var last shard.RebalanceProgress
				_, err = shard.Rebalance(ctx, cc, l, "day", func(o *shard.RebalanceOptions) {
					o.OnProgress = func(p shard.RebalanceProgress) { last = p }
				})
				if err == nil {
					if k < 4 {
						t.Fatalf("Rebalance finished with only %d writes", k-1)
					}
					checkSettled(t, c, tbl, want, 8)
					break // k is past the last write: every point was tried
				}
				if !errors.Is(err, errCrash) {
					t.Fatalf("k=%d: %v, want the injected crash", k, err)
				}
				checkOnce(t, c, tbl, want)
				resume := func(o *shard.RebalanceOptions) {}
				if k%2 == 0 {
					resume = func(o *shard.RebalanceOptions) { o.After = last.Suffix }
				}
				if _, err := shard.Rebalance(ctx, c, l, "day", resume); err != nil {
					t.Fatalf("k=%d: re-run: %v", k, err)
				}
				checkSettled(t, c, tbl, want, 8)
				checkOnce(t, c, tbl, want)
			}
		}
	})
}

// TestRebalanceRandom: shrinking a Random base moves the items of the
// retired suffixes into the new range, each once.
func TestRebalanceRandom(t *testing.T) {
	ddbtest.EachTx(t, func(t *testing.T, s *ddbtest.Server) {
		ctx := context.Background()
		c := s.Client()
		l := layoutOf(s.Table(t, "pk:S", "sk:S"), shard.Random(8))
		l.HistoryTTL = -1
		tbl, err := shard.NewTable[Order](c, l)
		if err != nil {
			t.Fatal(err)
		}
		for i := range 40 {
			if err := tbl.Put(ctx, "day", Order{ID: fmt.Sprint("r", i), Amount: i}); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := tbl.Reshard(ctx, "day", 2); err != nil {
			t.Fatal(err)
		}
		if _, err := shard.Rebalance(ctx, c, l, "day"); err != nil {
			t.Fatal(err)
		}
		stored := scanAll(t, c, l.Table)
		ids := map[string]bool{}
		for key, o := range stored {
			if o.Day != "day.1" && o.Day != "day.2" {
				t.Errorf("%s outside day.1..day.2", key)
			}
			ids[o.ID] = true
		}
		if len(stored) != 40 || len(ids) != 40 {
			t.Errorf("%d items, %d ids stored, want 40 of each", len(stored), len(ids))
		}
	})
}
