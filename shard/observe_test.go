package shard_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynashard/dynashard"
	"github.com/dynashard/dynashard/dynashardtest/faultproxy"
	"github.com/dynashard/dynashard/internal/ddbsize"
	"github.com/dynashard/dynashard/internal/ddbtest"
	"github.com/dynashard/dynashard/internal/observe/observetest"
	"github.com/dynashard/dynashard/shard"
)

// The capacity figures below follow from the sizes of the items involved
// (ddbsize.ItemSize of the item as stored, which is DynamoDB's measure),
// by DynamoDB's rules: a write costs 1 unit per started KB (at least 1:
// deleting an absent item costs 1; an update costs the larger of the item
// before and after), a strongly consistent read 1 unit per started 4 KB
// (at least 1: reading an absent item costs 1), an eventually consistent
// one half that, and a Query 1 (or 0.5) unit per started 4 KB of all the
// items it read together (both local servers charge nothing for a Query
// that reads nothing). A TransactGetItems costs 2 read units per started
// 4 KB of each item (absent items count as one unit). Transactional
// writes are where DynamoDB Local departs from DynamoDB: see localTx.

// wcu and rcu are the units of a write and of a read of an item of size
// bytes, by the rules above.
var wcu, rcu = observetest.WriteUnits, observetest.ReadUnits

// localTx is what DynamoDB Local 1.25.1 reports for a TransactWriteItems
// whose actions (Put, Update, Delete, ConditionCheck) each write units
// (wcu of the item the action writes, deletes or checks; 1 for an absent
// one). DynamoDB documents 2 units per started KB for each action, a
// ConditionCheck included: sum(2·units). DynamoDB Local reports 4 units
// per started KB, and counts actions of equal units once: 4·sum of the
// distinct units. Measured: one 10-byte Put, one ConditionCheck, a
// 10-byte Put with one or two ConditionChecks and three 10-byte Puts all
// 4; one 1.5 KB Put 8 (and two of them 8); a 1.5 KB Put with one or two
// ConditionChecks 12; a 2.5 KB Put 12, with a ConditionCheck 16. So a
// multi-key write of an item of up to 1 KB costs 4 units there as in
// DynamoDB (2 + 2), and a one-action transaction (Options.ExactlyOnce)
// twice DynamoDB's figure.
func localTx(units ...float64) float64 {
	var distinct []float64
	for _, u := range units {
		if !slices.Contains(distinct, u) {
			distinct = append(distinct, u)
		}
	}
	var sum float64
	for _, u := range distinct {
		sum += 4 * u
	}
	return sum
}

// cost is what a call reported through its Usage.
type cost struct {
	Read, Write float64
	Requests    int64
}

// measure runs call with a fresh Usage and returns what it reported for
// table; other tables must not appear.
func measure(t *testing.T, table string, call func(ctx context.Context) error) cost {
	t.Helper()
	var u dynashard.Usage
	if err := call(dynashard.WithUsage(context.Background(), &u)); err != nil {
		t.Fatal(err)
	}
	for name := range u.Tables() {
		if name != table {
			t.Errorf("capacity reported for table %s, want only %s", name, table)
		}
	}
	c := u.Table(table)
	if tot := u.Total(); tot != c {
		t.Errorf("Usage.Total %+v, want the table's %+v", tot, c)
	}
	return cost{Read: c.Read, Write: c.Write, Requests: u.Requests()}
}

func checkCost(t *testing.T, what string, got, want cost) {
	t.Helper()
	t.Logf("%s: %+v", what, got)
	if got != want {
		t.Errorf("%s: got %+v, want %+v", what, got, want)
	}
}

// sizeAt is the size of the item stored at (pk, sk), 0 if there is none.
func sizeAt(t *testing.T, c *dynamodb.Client, table, pk, sk string) int {
	t.Helper()
	item := rawGet(t, c, table, pk, sk)
	if item == nil {
		return 0
	}
	n, err := ddbsize.ItemSize(item)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// recordSize is the size of base's layout record (see shard.IsRecord).
func recordSize(t *testing.T, c *dynamodb.Client, table, base string) int {
	t.Helper()
	n := sizeAt(t, c, table, base+"#dynashard", "dynashard#layout")
	if n == 0 {
		t.Fatalf("base %q has no record", base)
	}
	return n
}

// cached is a layout whose view of a base, once read, is kept for the
// whole test: no call re-reads the record unless it must (a consistent
// Get), so every figure is exact.
func cached(table string, s shard.Strategy) shard.Layout {
	l := layoutOf(table, s)
	l.HistoryTTL = time.Hour
	return l
}

// TestUsageItems: Put, Get, Update and Delete of a base whose history has
// one count report the units their item sizes cost, and a base's first
// write what its layout record costs.
func TestUsageItems(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, s *ddbtest.Server) {
		c := s.Client()
		name := s.Table(t, "pk:S", "sk:S")
		tbl, err := shard.NewTable[Order](c, cached(name, shard.Hash(4)))
		if err != nil {
			t.Fatal(err)
		}
		const base = "2014-07-09"
		small := Order{ID: "small", Amount: 1, Note: strings.Repeat("s", 1500)} // 2 KB started
		large := Order{ID: "large", Amount: 2, Note: strings.Repeat("l", 5000)} // 5 KB, 2 × 4 KB started
		at := func(o Order) int {
			pk, err := tbl.Key(base, o.ID)
			if err != nil {
				t.Fatal(err)
			}
			return sizeAt(t, c, name, pk, o.ID)
		}
		put := func(o Order) func(context.Context) error {
			return func(ctx context.Context) error { return tbl.Put(ctx, base, o) }
		}
		get := func(id string, consistent bool) func(context.Context) error {
			return func(ctx context.Context) error {
				_, err := tbl.Get(ctx, base, id, func(o *shard.Options) { o.ConsistentRead = consistent })
				if id == "absent" && errors.Is(err, shard.ErrNotFound) {
					return nil
				}
				return err
			}
		}

		// The first write of a base reads its record (a consistent
		// GetItem of an absent item: 1 unit), writes it (a PutItem of the
		// record) and then the item.
		got := measure(t, name, put(small))
		rec := recordSize(t, c, name, base)
		checkCost(t, "first Put", got, cost{Read: rcu(0, true), Write: wcu(rec) + wcu(at(small)), Requests: 3})
		// The record is cached now: a Put is one PutItem.
		checkCost(t, "Put", measure(t, name, put(large)), cost{Write: wcu(at(large)), Requests: 1})
		// A replacing Put costs the larger of the two items.
		before := at(small)
		checkCost(t, "Put again", measure(t, name, put(small)), cost{Write: wcu(max(before, at(small))), Requests: 1})
		// Shards answers from the cache.
		checkCost(t, "Shards (cached)", measure(t, name, func(ctx context.Context) error { _, err := tbl.Shards(ctx, base); return err }), cost{})

		for _, o := range []Order{small, large} {
			checkCost(t, "Get "+o.ID, measure(t, name, get(o.ID, false)), cost{Read: rcu(at(o), false), Requests: 1})
			// A consistent Get reads the record again, then the item.
			checkCost(t, "consistent Get "+o.ID, measure(t, name, get(o.ID, true)), cost{Read: rcu(rec, true) + rcu(at(o), true), Requests: 2})
		}
		checkCost(t, "Get absent", measure(t, name, get("absent", false)), cost{Read: rcu(0, false), Requests: 1})
		checkCost(t, "consistent Get absent", measure(t, name, get("absent", true)), cost{Read: rcu(rec, true) + rcu(0, true), Requests: 2})

		// An Update costs the larger of the item before and after.
		before = at(large)
		got = measure(t, name, func(ctx context.Context) error {
			_, err := tbl.Update(ctx, base, large.ID, expression.Set(expression.Name("note"), expression.Value(strings.Repeat("u", 3000))))
			return err
		})
		checkCost(t, "Update", got, cost{Write: wcu(max(before, at(large))), Requests: 1})

		// A Delete costs the item deleted; an absent one 1 unit.
		before = at(large)
		checkCost(t, "Delete", measure(t, name, func(ctx context.Context) error { return tbl.Delete(ctx, base, large.ID) }), cost{Write: wcu(before), Requests: 1})
		checkCost(t, "Delete absent", measure(t, name, func(ctx context.Context) error { return tbl.Delete(ctx, base, large.ID) }), cost{Write: wcu(0), Requests: 1})

		// Shards of a base without a record reads it (absent) every time.
		for range 2 {
			got = measure(t, name, func(ctx context.Context) error { _, err := tbl.Shards(ctx, "unwritten"); return err })
			checkCost(t, "Shards of a base without a record", got, cost{Read: rcu(0, true), Requests: 1})
		}
	})
}

// TestUsageTransactions: on DynamoDB Local, the writes of an item whose
// keys differ between the counts of its base's history are transactions
// (the write and a ConditionCheck of the other key), a consistent Get
// reads every key in one TransactGetItems, and Options.ExactlyOnce makes
// a one-key write a one-action transaction; each reports localTx's
// figure (DynamoDB's would be 2 units per KB per action).
func TestUsageTransactions(t *testing.T) {
	ddbtest.EachTx(t, func(t *testing.T, s *ddbtest.Server) {
		ctx := context.Background()
		c := s.Client()
		name := s.Table(t, "pk:S", "sk:S")
		l := cached(name, shard.Hash(4))
		tbl, err := shard.NewTable[Order](c, l)
		if err != nil {
			t.Fatal(err)
		}
		const base = "day"
		id := txID(4, 8)
		// History [4, 8], 8 pending: writers use 4, and every id whose
		// keys differ is written with a transaction.
		if err := tbl.Put(ctx, base, Order{ID: "first"}); err != nil { // records [4]
			t.Fatal(err)
		}
		if err := l.Announce(ctx, c, base, 8); err != nil {
			t.Fatal(err)
		}
		rec := recordSize(t, c, name, base)
		pk4, pk8 := shard.Key(base, shard.Hash(4).Pick(id)), shard.Key(base, shard.Hash(8).Pick(id))
		item := Order{ID: id, Amount: 1, Note: strings.Repeat("t", 1500)}

		got := measure(t, name, func(ctx context.Context) error { return tbl.Put(ctx, base, item) })
		size := sizeAt(t, c, name, pk4, id) // with the token every transactional write sets
		if sizeAt(t, c, name, pk8, id) != 0 {
			t.Fatalf("item at %s too", pk8)
		}
		// The Put at 4's key and a check that 8's key (absent) does not hold it.
		checkCost(t, "transactional Put", got, cost{Write: localTx(wcu(size), wcu(0)), Requests: 1})

		checkCost(t, "Get", measure(t, name, func(ctx context.Context) error { _, err := tbl.Get(ctx, base, id); return err }),
			cost{Read: rcu(size, false), Requests: 1}) // found at the writers' key, the first tried
		got = measure(t, name, func(ctx context.Context) error {
			_, err := tbl.Get(ctx, base, id, func(o *shard.Options) { o.ConsistentRead = true })
			return err
		})
		// The record, then both keys in one TransactGetItems.
		checkCost(t, "consistent Get", got, cost{Read: rcu(rec, true) + 2*rcu(size, true) + 2*rcu(0, true), Requests: 2})

		before := size
		got = measure(t, name, func(ctx context.Context) error {
			_, err := tbl.Update(ctx, base, id, expression.Set(expression.Name("amount"), expression.Value(2)))
			return err
		})
		size = sizeAt(t, c, name, pk4, id)
		// The Update and the check, then the consistent GetItem that reads
		// the item updated.
		checkCost(t, "transactional Update", got, cost{Read: rcu(size, true), Write: localTx(wcu(max(before, size)), wcu(0)), Requests: 2})

		got = measure(t, name, func(ctx context.Context) error { return tbl.Delete(ctx, base, id) })
		checkCost(t, "transactional Delete", got, cost{Write: localTx(wcu(size), wcu(0)), Requests: 1})

		// ExactlyOnce on a base of one count: a one-action transaction.
		once, err := shard.NewTable[Order](c, cached(name, shard.Hash(4)), func(o *shard.Options) { o.ExactlyOnce = true })
		if err != nil {
			t.Fatal(err)
		}
		if err := once.Put(ctx, "other", Order{ID: "o", Note: "first"}); err != nil { // writes the record
			t.Fatal(err)
		}
		pk, _ := once.Key("other", "o")
		before = sizeAt(t, c, name, pk, "o")
		got = measure(t, name, func(ctx context.Context) error {
			return once.Put(ctx, "other", Order{ID: "o", Note: strings.Repeat("e", 1500)})
		})
		checkCost(t, "ExactlyOnce Put", got, cost{Write: localTx(wcu(max(before, sizeAt(t, c, name, pk, "o")))), Requests: 1})
	})
}

// TestUsageReshardRebalance: a Reshard reports its record requests, and a
// Rebalance its record read, one consistent Query per suffix (the items
// each read, moved ones included), one transaction per item moved and
// the record's update.
func TestUsageReshardRebalance(t *testing.T) {
	ddbtest.EachTx(t, func(t *testing.T, s *ddbtest.Server) {
		ctx := context.Background()
		c := s.Client()
		name := s.Table(t, "pk:S", "sk:S")
		tbl := newOrders(t, c, name, shard.Hash(2)) // HistoryTTL 50 ms: a short fence
		const base = "day"
		suffix := map[string]int{} // where each item is
		size := map[string]int{}
		for i := range 8 {
			o := Order{ID: fmt.Sprintf("o%d", i), Amount: i, Note: strings.Repeat("r", 1000*i)}
			if err := tbl.Put(ctx, base, o); err != nil {
				t.Fatal(err)
			}
			suffix[o.ID] = shard.Hash(2).Pick(o.ID)
			size[o.ID] = sizeAt(t, c, name, shard.Key(base, suffix[o.ID]), o.ID)
		}

		rec := recordSize(t, c, name, base)
		got := measure(t, name, func(ctx context.Context) error { _, err := tbl.Reshard(ctx, base, 4); return err })
		after := recordSize(t, c, name, base) // the pending record has the size of the active one
		// TransactGetItems of the record (the probe for transactions), its
		// read, the update that announces 4, and after the fence the update
		// that activates it and the read that checks it.
		checkCost(t, "Reshard", got, cost{
			Read:     2*rcu(rec, true) + rcu(rec, true) + rcu(after, true),
			Write:    wcu(max(rec, after)) + wcu(after),
			Requests: 5,
		})

		// The sweep reads suffixes 1..4 in order; an item moved from 1 or
		// 2 to 3 or 4 is read again there.
		var want cost
		want.Read, want.Requests = rcu(after, true), 1 // the record
		for sfx := 1; sfx <= 4; sfx++ {
			read := 0
			for id, at := range suffix {
				if at == sfx {
					read += size[id]
				}
			}
			if read > 0 {
				want.Read += rcu(read, true)
			}
			want.Requests++
			for id, at := range suffix {
				if to := shard.Hash(4).Pick(id); at == sfx && to != sfx {
					// Put at the new key, Delete at the old (the same
					// size), and the check of the record's revision.
					want.Write += localTx(wcu(size[id]), wcu(size[id]), wcu(after))
					want.Requests++
					suffix[id] = to
				}
			}
		}
		var p shard.RebalanceProgress
		got = measure(t, name, func(ctx context.Context) error {
			var err error
			p, err = tbl.Rebalance(ctx, base, func(o *shard.RebalanceOptions) { o.Wait = -1 })
			return err
		})
		want.Write += wcu(max(after, recordSize(t, c, name, base))) // the history retired
		want.Requests++
		if p.Moved == 0 || p.Scanned != 8+p.Moved {
			t.Fatalf("Rebalance %+v: want some moved, and each moved item scanned twice", p)
		}
		checkCost(t, fmt.Sprintf("Rebalance (%d moved)", p.Moved), got, want)
		checkCost(t, "Rebalance again", measure(t, name, func(ctx context.Context) error {
			_, err := tbl.Rebalance(ctx, base, func(o *shard.RebalanceOptions) { o.Wait = -1 })
			return err
		}), cost{Read: rcu(recordSize(t, c, name, base), true), Requests: 1}) // history [4]: nothing to do
	})
}

// TestUsageLoad: a Load of a new base reports its record's read and
// write and one write unit per started KB of each item, in its
// BatchWriteItems.
func TestUsageLoad(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, s *ddbtest.Server) {
		var a observetest.Asks
		c := s.Client(a.Option)
		name := s.Table(t, "pk:S", "sk:S")
		tbl, err := shard.NewTable[Order](c, cached(name, shard.Hash(4)))
		if err != nil {
			t.Fatal(err)
		}
		var in []pair
		for i := range 60 {
			in = append(in, pair{"load", Order{ID: fmt.Sprintf("L%02d", i), Amount: i, Note: strings.Repeat("x", 40*i)}})
		}
		var stats shard.LoadStats
		got := measure(t, name, func(ctx context.Context) (err error) {
			stats, err = tbl.Load(ctx, seq2(in))
			return err
		})
		asked := a.Take()
		want := cost{Read: rcu(0, true), Write: wcu(recordSize(t, c, name, "load")), Requests: 2}
		for _, p := range in {
			pk, _ := tbl.Key(p.base, p.item.ID)
			want.Write += wcu(sizeAt(t, c, name, pk, p.item.ID))
		}
		batches := len(asked["BatchWriteItem"])
		want.Requests += int64(batches)
		if batches != stats.Requests || batches < (len(in)+24)/25 {
			t.Errorf("%d BatchWriteItems, Load counted %d, want at least %d", batches, stats.Requests, (len(in)+24)/25)
		}
		checkCost(t, fmt.Sprintf("Load of %d items", len(in)), got, want)
	})
}

// TestUsageThrottled: a Load through a proxy that throttles some
// BatchWriteItem attempts and returns some entries unprocessed reports
// exactly the throttled attempts and unprocessed entries the proxy
// injected, and still the write units of the items once each (an entry
// refused or a request throttled is not applied, nor charged). The proxy
// draws its faults as the batch workers' requests arrive, so a run of
// about 16 requests at a rate of 0.2 injects no throttle 3 % of the time:
// the test loads again, with the next seed, until a run has both.
func TestUsageThrottled(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, s *ddbtest.Server) {
		var (
			p     *faultproxy.Proxy
			name  string
			tbl   *shard.Table[Order]
			u     *dynashard.Usage
			stats shard.LoadStats
			ps    faultproxy.Counters
			in    = sortedOrders(2, 60)
		)
		for seed := int64(1); ps.Throttled == 0 || ps.Unprocessed == 0; seed++ {
			if seed > 8 {
				t.Fatalf("8 Loads through the proxy, none with both a throttle and an unprocessed entry; the last: %+v", ps)
			}
			var c *dynamodb.Client
			c, p = proxied(t, s, faultproxy.Config{ThrottleRate: 0.2, UnprocessedRate: 0.2, Ops: []string{"BatchWriteItem"}, Seed: seed})
			name = s.Table(t, "pk:S", "sk:S")
			var err error
			if tbl, err = shard.NewTable[Order](c, cached(name, shard.Hash(8))); err != nil {
				t.Fatal(err)
			}
			u = new(dynashard.Usage)
			if stats, err = tbl.Load(dynashard.WithUsage(context.Background(), u), seq2(in)); err != nil {
				t.Fatal(err)
			}
			ps = p.Stats().Ops["BatchWriteItem"]
		}
		if u.Throttled() != int64(ps.Throttled) || u.Unprocessed() != int64(ps.Unprocessed) {
			t.Errorf("Usage: %d throttled attempts, %d unprocessed entries; the proxy injected %d and %d",
				u.Throttled(), u.Unprocessed(), ps.Throttled, ps.Unprocessed)
		}
		// Two bases: two record reads (absent) and writes.
		want := cost{Read: 2 * rcu(0, true), Requests: 4 + int64(stats.Requests)}
		for b := range 2 {
			want.Write += wcu(recordSize(t, s.Client(), name, fmt.Sprintf("U%d", b+1)))
		}
		for _, pr := range in {
			pk, _ := tbl.Key(pr.base, pr.item.ID)
			want.Write += wcu(sizeAt(t, s.Client(), name, pk, pr.item.ID))
		}
		got := u.Table(name)
		checkCost(t, "throttled Load", cost{Read: got.Read, Write: got.Write, Requests: u.Requests()}, want)
		t.Logf("proxy: %+v; Load: %+v", ps, stats)
	})
}

// TestUnobservedAsksNothing: without a Usage in the context and without
// providers on the client, no request of any entry point asks for its
// consumed capacity (which costs DynamoDB Local time: see README); with
// a Usage every one does (INDEXES).
func TestUnobservedAsksNothing(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, s *ddbtest.Server) {
		var a observetest.Asks
		c := s.Client(a.Option)
		name := s.Table(t, "pk:S", "sk:S")
		tbl := newOrders(t, c, name, shard.Hash(2))
		calls := []struct {
			name string
			call func(ctx context.Context) error
		}{
			{"Put", func(ctx context.Context) error { return tbl.Put(ctx, "b", Order{ID: "a", Amount: 1}) }},
			{"Get", func(ctx context.Context) error {
				_, err := tbl.Get(ctx, "b", "a", func(o *shard.Options) { o.ConsistentRead = true })
				return err
			}},
			{"Update", func(ctx context.Context) error {
				_, err := tbl.Update(ctx, "b", "a", expression.Set(expression.Name("amount"), expression.Value(2)))
				return err
			}},
			{"Shards", func(ctx context.Context) error { _, err := tbl.Shards(ctx, "none"); return err }},
			{"Load", func(ctx context.Context) error { _, err := tbl.Load(ctx, seq2(sortedOrders(2, 30))); return err }},
			{"Delete", func(ctx context.Context) error { return tbl.Delete(ctx, "b", "a") }},
		}
		if s.Transactions() {
			calls = append(calls, []struct {
				name string
				call func(ctx context.Context) error
			}{
				{"Reshard", func(ctx context.Context) error { _, err := tbl.Reshard(ctx, "b", 4); return err }},
				{"transactional Put", func(ctx context.Context) error { return tbl.Put(ctx, "b", Order{ID: txID(2, 4)}) }},
				{"transactional Get", func(ctx context.Context) error {
					_, err := tbl.Get(ctx, "b", txID(2, 4), func(o *shard.Options) { o.ConsistentRead = true })
					return err
				}},
				{"Rebalance", func(ctx context.Context) error {
					_, err := tbl.Rebalance(ctx, "b", func(o *shard.RebalanceOptions) { o.Wait = -1 })
					return err
				}},
			}...)
		}
		for _, observed := range []bool{false, true} {
			for _, tc := range calls {
				ctx := context.Background()
				want := types.ReturnConsumedCapacity("")
				if observed {
					ctx = dynashard.WithUsage(ctx, new(dynashard.Usage))
					want = types.ReturnConsumedCapacityIndexes
				}
				a.Take()
				if err := tc.call(ctx); err != nil {
					t.Fatalf("%s: %v", tc.name, err)
				}
				asked := a.Take()
				if len(asked) == 0 {
					t.Fatalf("%s sent nothing", tc.name)
				}
				for op, rcs := range observetest.Distinct(asked) {
					for _, rc := range rcs {
						if rc != want {
							t.Errorf("%s (observed %v): %s requests asked for %q, want %q (requests %v)", tc.name, observed, op, rc, want, asked)
						}
					}
				}
			}
		}
	})
}

// txID is an id whose suffixes differ under n and m shards.
func txID(n, m int) string {
	for i := 0; ; i++ {
		if id := fmt.Sprint("T", i); shard.Hash(n).Pick(id) != shard.Hash(m).Pick(id) {
			return id
		}
	}
}
