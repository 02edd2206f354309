package batch

// The engine's requests through internal/observe: what a dynashard.Usage
// in the context reports, exactly, against both servers.

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynashard/dynashard"
	"github.com/dynashard/dynashard/dynashardtest/faultproxy"
	"github.com/dynashard/dynashard/internal/ddbsize"
	"github.com/dynashard/dynashard/internal/ddbtest"
	"github.com/dynashard/dynashard/internal/localddb"
	"github.com/dynashard/dynashard/internal/observe/observetest"
)

// wcu and rcu are DynamoDB's write and read units for an item of size
// bytes (at least one write unit, or the minimum read, for an absent item).
var wcu, rcu = observetest.WriteUnits, observetest.ReadUnits

// absentDelete is what a BatchWriteItem DeleteRequest of a key with no
// item costs: DynamoDB documents the minimum, 1 unit, and dynalite
// charges it; DynamoDB Local 1.25.1 charges 2 (and 1 for a DeleteItem).
func absentDelete(srv *ddbtest.Server) float64 {
	if srv.Kind == localddb.DynamoDBLocal {
		return 2
	}
	return wcu(0)
}

// absentGet is what a BatchGetItem key with no item costs: dynalite
// charges the minimum read (as DynamoDB does for a GetItem of an absent
// item); DynamoDB Local 1.25.1 charges nothing.
func absentGet(srv *ddbtest.Server, consistent bool) float64 {
	if srv.Kind == localddb.DynamoDBLocal {
		return 0
	}
	return rcu(0, consistent)
}

func sizeOf(t *testing.T, it item) int {
	t.Helper()
	n, err := ddbsize.ItemSize(it)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestUsage: with a Usage in the context, WriteAll, WriteSeq and Get
// report per table the units their items' sizes cost (BatchWriteItem: one
// write unit per started KB of each put item, or of each item deleted;
// BatchGetItem: one read unit per started 4 KB of each item, half without
// ConsistentRead; for keys with no item see absentDelete and absentGet),
// and one request per BatchWriteItem or BatchGetItem; every request asks
// for the capacity. Without a Usage none asks.
func TestUsage(t *testing.T) {
	eachParallel(t, func(t *testing.T, srv *ddbtest.Server) {
		ta, tb := srv.Table(t, "pk:S"), srv.Table(t, "pk:S")
		c, _, rec := newClient(srv.Endpoint, 3)
		opt := func(o *Options) { o.KeyAttributes = map[string][]string{ta: {"pk"}, tb: {"pk"}} }
		items := map[string]item{} // by key, as stored
		var writes []Write
		want := map[string]float64{}
		for i := range 40 {
			table := []string{ta, tb}[i%2]
			it := pkItem(fmt.Sprint("k", i), "v", s(strings.Repeat("v", 150*i))) // up to 6 KB
			items[fmt.Sprint("k", i)] = it
			writes = append(writes, Write{Table: table, Put: it})
			want[table] += wcu(sizeOf(t, it))
		}
		var u dynashard.Usage
		ctx := dynashard.WithUsage(context.Background(), &u)
		rec.reset()
		if _, err := WriteAll(ctx, c, writes, opt); err != nil {
			t.Fatal(err)
		}
		check := func(what string, tables map[string]float64, read bool, requests int) {
			t.Helper()
			for _, table := range []string{ta, tb} {
				got := u.Table(table)
				units := got.Write
				if read {
					units = got.Read
				}
				if units != tables[table] || got.Total() != units {
					t.Errorf("%s: table %s used %+v, want %v %s units", what, table, got, tables[table], map[bool]string{true: "read", false: "write"}[read])
				}
			}
			if u.Requests() != int64(requests) {
				t.Errorf("%s: %d requests, want %d", what, u.Requests(), requests)
			}
			t.Logf("%s: %v in %d requests", what, u.Tables(), u.Requests())
			u.Reset()
		}
		calls := rec.of("BatchWriteItem")
		check("WriteAll of 40 puts", want, false, len(calls))
		for _, call := range calls {
			if !call.capacity {
				t.Errorf("request %+v with a Usage: want ReturnConsumedCapacity", call)
			}
		}

		// Deletes cost the item deleted; an absent one the minimum.
		want = map[string]float64{}
		var deletes []Write
		for i := range 10 {
			table, k := []string{ta, tb}[i%2], fmt.Sprint("k", i)
			if i >= 8 {
				k = fmt.Sprint("absent", i)
				want[table] += absentDelete(srv)
			} else {
				want[table] += wcu(sizeOf(t, items[k]))
				delete(items, k)
			}
			deletes = append(deletes, Write{Table: table, Delete: item{"pk": s(k)}})
		}
		rec.reset()
		seq := func(yield func(Write) bool) {
			for _, w := range deletes {
				if !yield(w) {
					return
				}
			}
		}
		if _, err := WriteSeq(ctx, c, seq, opt); err != nil {
			t.Fatal(err)
		}
		check("WriteSeq of 10 deletes", want, false, len(rec.of("BatchWriteItem")))

		for _, consistent := range []bool{true, false} {
			want = map[string]float64{}
			var keys []Key
			for i := range 40 {
				table, k := []string{ta, tb}[i%2], fmt.Sprint("k", i)
				if it, ok := items[k]; ok {
					want[table] += rcu(sizeOf(t, it), consistent)
				} else {
					want[table] += absentGet(srv, consistent)
				}
				keys = append(keys, Key{Table: table, Key: item{"pk": s(k)}})
			}
			rec.reset()
			found, _, err := Get(ctx, c, keys, opt, func(o *Options) { o.ConsistentRead = consistent })
			if err != nil || len(found) != len(items) {
				t.Fatalf("Get: %d items, %v; want %d", len(found), err, len(items))
			}
			check(fmt.Sprintf("Get (consistent %v) of 32 items and 8 absent keys", consistent), want, true, len(rec.of("BatchGetItem")))
		}

		// Without a Usage nothing asks.
		rec.reset()
		if _, err := WriteAll(context.Background(), c, writes[:5], opt); err != nil {
			t.Fatal(err)
		}
		if _, _, err := Get(context.Background(), c, []Key{{Table: ta, Key: item{"pk": s("k1")}}}, opt); err != nil {
			t.Fatal(err)
		}
		for _, call := range append(rec.of("BatchWriteItem"), rec.of("BatchGetItem")...) {
			if call.capacity {
				t.Errorf("request %+v without a Usage asked for ReturnConsumedCapacity", call)
			}
		}
	})
}

// TestUsageFaults: through a proxy that throttles some requests and
// returns some entries unprocessed, the Usage of WriteAll and Get counts
// exactly the throttled attempts and unprocessed entries the proxy
// injected, and still the units of each item once (a throttled request
// or an entry the proxy kept is not applied, nor charged).
func TestUsageFaults(t *testing.T) {
	eachParallel(t, func(t *testing.T, srv *ddbtest.Server) {
		pc := setupProxy(t, srv, faultproxy.Config{ThrottleRate: 0.2, UnprocessedRate: 0.3, Seed: 3,
			Ops: []string{"BatchWriteItem", "BatchGetItem"}}, 5)
		// The SDK backs off up to 20 s after a throttle: waiting, which
		// changes no count.
		pc.client, pc.tr, pc.rec = newClient(pc.proxy.URL(), 5, func(so *retry.StandardOptions) { so.MaxBackoff = 20 * time.Millisecond })
		t.Cleanup(pc.tr.CloseIdleConnections)
		var writes []Write
		var keys []Key
		var wantWrite, wantRead float64
		for i := range 200 {
			it := pkItem(fmt.Sprint("f", i), "v", s(strings.Repeat("f", 20*i)))
			writes = append(writes, Write{Table: pc.table, Put: it})
			keys = append(keys, Key{Table: pc.table, Key: item{"pk": s(fmt.Sprint("f", i))}})
			wantWrite += wcu(sizeOf(t, it))
			wantRead += rcu(sizeOf(t, it), false)
		}
		for _, op := range []string{"BatchWriteItem", "BatchGetItem"} {
			var u dynashard.Usage
			ctx := dynashard.WithUsage(context.Background(), &u)
			pc.proxy.ResetStats()
			var err error
			want := dynashard.Capacity{Write: wantWrite}
			if op == "BatchWriteItem" {
				_, err = WriteAll(ctx, pc.client, writes, pc.opt)
			} else {
				_, _, err = Get(ctx, pc.client, keys, pc.opt)
				want = dynashard.Capacity{Read: wantRead}
			}
			if err != nil {
				t.Fatal(err)
			}
			ps := pc.proxy.Stats().Ops[op]
			if u.Throttled() == 0 || u.Unprocessed() == 0 || u.Throttled() != int64(ps.Throttled) || u.Unprocessed() != int64(ps.Unprocessed) {
				t.Errorf("%s: Usage counted %d throttled attempts and %d unprocessed entries; the proxy injected %d and %d (want equal, > 0)",
					op, u.Throttled(), u.Unprocessed(), ps.Throttled, ps.Unprocessed)
			}
			if got := u.Table(pc.table); got != want {
				t.Errorf("%s: used %+v, want %+v", op, got, want)
			}
			t.Logf("%s: proxy %+v; usage %v, %d requests", op, ps, u.Tables(), u.Requests())
		}
	})
}

// selfObserved is a client wrapper that would send its requests through
// observe.Do itself; it records what the engine gave it.
type selfObserved struct {
	WriteAPI
	mu    sync.Mutex
	asked []types.ReturnConsumedCapacity
}

func (c *selfObserved) BatchWriteItem(ctx context.Context, in *dynamodb.BatchWriteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.BatchWriteItemOutput, error) {
	c.mu.Lock()
	c.asked = append(c.asked, in.ReturnConsumedCapacity)
	c.mu.Unlock()
	return c.WriteAPI.BatchWriteItem(ctx, in, optFns...)
}

// TestClientObserves: with Options.ClientObserves the engine leaves the
// requests to the client as they are and counts nothing itself (the
// client, such as shard's Load client, sends through observe.Do); without
// it, the engine's own calls are observed.
func TestClientObserves(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, srv *ddbtest.Server) {
		table := srv.Table(t, "pk:S")
		c, _, _ := newClient(srv.Endpoint, 3)
		writes := []Write{{Table: table, Put: pkItem("a")}, {Table: table, Put: pkItem("b")}}
		for _, self := range []bool{true, false} {
			var u dynashard.Usage
			wrapper := &selfObserved{WriteAPI: c}
			if _, err := WriteAll(dynashard.WithUsage(context.Background(), &u), wrapper, writes, func(o *Options) { o.ClientObserves = self }); err != nil {
				t.Fatal(err)
			}
			want, requests := types.ReturnConsumedCapacityIndexes, int64(1)
			if self {
				want, requests = "", 0
			}
			if len(wrapper.asked) != 1 || wrapper.asked[0] != want || u.Requests() != requests {
				t.Errorf("ClientObserves %v: the client was asked %q, Usage counted %d requests; want %q, %d", self, wrapper.asked, u.Requests(), want, requests)
			}
		}
	})
}

// reset forgets the attempts recorded so far.
func (r *recorder) reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = nil
}
