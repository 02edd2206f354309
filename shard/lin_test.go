package shard_test

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"iter"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/smithy-go/middleware"

	"github.com/dynashard/dynashard/chunk"
	"github.com/dynashard/dynashard/dynashardtest/faultproxy"
	"github.com/dynashard/dynashard/internal/attempts"
	"github.com/dynashard/dynashard/internal/backoff"
	"github.com/dynashard/dynashard/internal/ddbtest"
	"github.com/dynashard/dynashard/internal/localddb"
	"github.com/dynashard/dynashard/repo"
	"github.com/dynashard/dynashard/scatter"
	"github.com/dynashard/dynashard/shard"
)

// The resharding checker: workers issue random operations on a few ids
// of two bases through two clients behind a fault proxy (latency, resets
// before and after a request is applied, throttles), while a resharder
// grows and shrinks the bases and runs Rebalance, interrupted at random
// points and run again. Every call is recorded with its invocation,
// response and outcome (unknown when a write's fate is not known), and
// each item's history is checked for linearizability against a model of
// one item with conditional writes. The writes of one of the two Tables
// are ExactlyOnce and are recorded as applying once; the other's plain
// writes, when the SDK sent them again after an attempt that may have
// been applied, may apply twice (at-least-once, as the package doc says).
// A final consistent Get of every id
// and scatter reads (during the run and after it) are checked too: no
// id twice, and after quiescence exactly the ids the model holds.
var linDuration = flag.Duration("shard.lin", 0, "run the resharding checker this long (0: the short mode, about 40 s)")

type linKind int

const (
	linPut      linKind = iota // amount = arg
	linPutNew                  // amount = arg if the item is absent
	linUpdate                  // SET amount = arg (creates)
	linUpdateIf                // SET amount = arg if amount = expect
	linDelete
	linDeleteIf // if amount = expect
	linGet      // consistent
	linLoad     // one item of a Load: amount = arg
	linKinds    = iota
)

func (k linKind) String() string {
	return [...]string{"Put", "PutNew", "Update", "UpdateIf", "Delete", "DeleteIf", "Get", "Load"}[k]
}

// linOp is one call on one item; unknown is a write whose outcome is not
// known (it may take effect at any time after call, or never).
type linOp struct {
	kind        linKind
	arg, expect int
	call, ret   int64 // nanoseconds since the run started; ret = MaxInt64 if unknown
	unknown     bool
	conflict    bool // a conditional write that did not apply
	found       bool // Get
	got         int
	by          string // who called it, for reports (the multi-process checker: the child)
	late        bool   // the multi-process checker: a request of it reached the server after its deadline
}

type linState struct {
	exists bool
	amount int
}

// step applies op to s; ok is false if op's recorded outcome cannot
// happen in state s.
func (op linOp) step(s linState) (linState, bool) {
	holds := s.exists && s.amount == op.expect
	switch op.kind {
	case linPut, linUpdate, linLoad, linDelete:
		if op.conflict { // refused (another write came between): not applied
			return s, true
		}
		if op.kind == linDelete {
			return linState{}, true
		}
		return linState{true, op.arg}, true
	case linPutNew:
		if op.unknown {
			if s.exists {
				return s, true
			}
			return linState{true, op.arg}, true
		}
		if op.conflict {
			return s, s.exists
		}
		return linState{true, op.arg}, !s.exists
	case linUpdateIf, linDeleteIf:
		next := linState{true, op.arg}
		if op.kind == linDeleteIf {
			next = linState{}
		}
		if op.unknown {
			if holds {
				return next, true
			}
			return s, true
		}
		if op.conflict {
			return s, !holds
		}
		return next, holds
	case linGet:
		return s, op.found == s.exists && (!s.exists || op.got == s.amount)
	}
	return s, false
}

// linearizable reports whether ops (one item's history) has a serial
// order that respects real time in which every op's outcome holds; an
// unknown op may be left out (or take effect until its ret, its
// deadline). It is the Wing–Gong search: at each step an op invoked
// before the earliest deadline of the ops not yet placed can come next.
// Memoized on the state and the ops placed, which are all those before
// the first unplaced op plus some of the few invoked before that
// deadline, so the key stays as small as the concurrency.
func linearizable(ops []linOp) bool {
	ops = slices.Clone(ops)
	sort.Slice(ops, func(i, j int) bool { return ops[i].call < ops[j].call })
	n := len(ops)
	done := make([]bool, n)
	type memoKey struct {
		k      int
		placed string
		s      linState
	}
	seen := map[memoKey]bool{}
	budget := 5_000_000
	var search func(k int, s linState) bool
	search = func(k int, s linState) bool {
		for k < n && done[k] {
			k++
		}
		if k == n {
			return true
		}
		if budget--; budget < 0 {
			return false // too hard to decide: reported as a violation
		}
		first, j := int64(math.MaxInt64), k // earliest deadline unplaced; ops[k:j] invoked before it
		for ; j < n && ops[j].call <= first; j++ {
			if !done[j] {
				first = min(first, ops[j].ret)
			}
		}
		placed := make([]byte, j-k)
		for i := k; i < j; i++ {
			if done[i] {
				placed[i-k] = 1
			}
		}
		key := memoKey{k, string(placed), s}
		if seen[key] {
			return false
		}
		seen[key] = true
		for i := k; i < j; i++ {
			if done[i] {
				continue
			}
			next, ok := ops[i].step(s)
			for _, try := range []struct {
				s  linState
				ok bool
			}{{next, ok}, {s, ops[i].unknown}} { // applied; or, if unknown, never
				if !try.ok {
					continue
				}
				done[i] = true
				found := search(k, try.s)
				done[i] = false
				if found {
					return true
				}
			}
		}
		return false
	}
	return search(0, linState{})
}

// TestLinearizableCheckerRejects shows the checker rejecting histories
// that no serial order explains, and accepting one that needs an unknown
// write left out.
func TestLinearizableCheckerRejects(t *testing.T) {
	bad := [][]linOp{
		// a Get after a Put returned misses it (a lost write)
		{{kind: linPut, arg: 1, call: 0, ret: 1}, {kind: linGet, call: 2, ret: 3}},
		// a deleted item comes back (resurrection)
		{{kind: linPut, arg: 1, call: 0, ret: 1}, {kind: linDelete, call: 2, ret: 3}, {kind: linGet, call: 4, ret: 5, found: true, got: 1}},
		// an older value read after a newer one returned
		{{kind: linPut, arg: 1, call: 0, ret: 1}, {kind: linPut, arg: 2, call: 2, ret: 3}, {kind: linGet, call: 4, ret: 5, found: true, got: 1}},
		// a conditional Put that says conflict on an absent item
		{{kind: linPutNew, arg: 1, call: 0, ret: 1, conflict: true}},
		// a write of unknown outcome taking effect after its deadline
		{{kind: linPut, arg: 1, call: 0, ret: 10, unknown: true}, {kind: linGet, call: 20, ret: 21}, {kind: linGet, call: 30, ret: 31, found: true, got: 1}},
	}
	for i, h := range bad {
		if linearizable(h) {
			t.Errorf("history %d accepted: %+v", i, h)
		}
	}
	ok := [][]linOp{
		// a write of unknown outcome that never applied
		{{kind: linPut, arg: 1, call: 0, ret: math.MaxInt64, unknown: true}, {kind: linGet, call: 2, ret: 3}},
		// one that applied late, before its deadline
		{{kind: linPut, arg: 1, call: 0, ret: 10, unknown: true}, {kind: linGet, call: 2, ret: 3}, {kind: linGet, call: 5, ret: 6, found: true, got: 1}},
		// concurrent writes, read in either order
		{{kind: linPut, arg: 1, call: 0, ret: 10}, {kind: linPut, arg: 2, call: 1, ret: 9}, {kind: linGet, call: 11, ret: 12, found: true, got: 1}},
	}
	for i, h := range ok {
		if !linearizable(h) {
			t.Errorf("history %d refused: %+v", i, h)
		}
	}
	// A long sequential history is decided quickly (the memo key stays
	// small): 200,000 ops.
	var long []linOp
	for i := range 100_000 {
		long = append(long, linOp{kind: linPut, arg: i, call: int64(4 * i), ret: int64(4*i + 1)},
			linOp{kind: linGet, call: int64(4*i + 2), ret: int64(4*i + 3), found: true, got: i})
	}
	if !linearizable(long) {
		t.Errorf("a long sequential history refused")
	}
}

type linRecorder struct {
	mu      sync.Mutex
	start   time.Time
	ops     map[string][]linOp // by base/id
	dups    []string
	corrupt []string // reads that found a payload damaged
}

func (r *linRecorder) now() int64 { return int64(time.Since(r.start)) }

// retriedKey carries, in a call's context, the flag noteRetried sets.
type retriedKey struct{}

// withRetried returns a context for one call whose flag tells whether one
// of its requests failed in a way that may follow its being applied.
func withRetried() context.Context {
	return context.WithValue(context.Background(), retriedKey{}, new(atomic.Bool))
}

// noteRetried is a client option: an attempt that fails without a refusal
// or a throttle (a reset, a timeout, a 5xx) may have been applied, and the
// SDK sends it again; the call's flag records it.
func noteRetried(st *middleware.Stack) error {
	return st.Finalize.Add(middleware.FinalizeMiddlewareFunc("lin/retried",
		func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
			out, md, err := next.HandleFinalize(ctx, in)
			if f, ok := ctx.Value(retriedKey{}).(*atomic.Bool); ok && err != nil && !backoff.IsThrottle(err) && !attempts.Refused(err) {
				f.Store(true)
			}
			return out, md, err
		}), middleware.After)
}

// addWrite records a write. A plain write whose request may have been
// applied and was sent again is at-least-once, as with any DynamoDB client
// (see "What stays outside the guarantee" in the package doc): it may take
// effect twice within its interval, so a second application of unknown
// outcome is recorded beside it.
func (r *linRecorder) addWrite(ctx context.Context, key string, op linOp) {
	r.add(key, op)
	if f, ok := ctx.Value(retriedKey{}).(*atomic.Bool); ok && f.Load() {
		again := op
		again.unknown, again.conflict = true, false
		r.add(key, again)
	}
}

func (r *linRecorder) add(key string, op linOp) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ops[key] = append(r.ops[key], op)
}

// outcome classifies a write's error: nil applied, a failed condition
// did not apply, anything else unknown.
func outcome(op *linOp, err error, ret int64) {
	op.ret = ret
	switch {
	case err == nil:
	case errors.Is(err, shard.ErrConflict):
		op.conflict = true
	default:
		op.unknown, op.ret = true, ret+int64(linSettle)
	}
}

// linSettle bounds when a write whose outcome is unknown can still take
// effect after its call returned: by then every request of it has been
// answered or abandoned (the SDK's attempts are over, a request cut off
// at its view's deadline was abandoned a fence earlier, 1.1 s here, and
// DynamoDB Local applies a request when it receives it).
const linSettle = 5 * time.Second

func TestLinearizableResharding(t *testing.T) {
	d := *linDuration
	if d == 0 {
		d = 25 * time.Second
	}
	s := ddbtest.Get(t, localddb.DynamoDBLocal) // transactions: dynalite has none
	name := s.Table(t, "pk:S", "sk:S")
	p, err := faultproxy.New(s.Endpoint, faultproxy.Config{
		Latency: time.Millisecond, Jitter: 20 * time.Millisecond,
		ResetBeforeRate: 0.01, ResetAfterRate: 0.01, ThrottleRate: 0.02, Seed: 11,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	client := func() *dynamodb.Client {
		return s.Client(func(o *dynamodb.Options) {
			o.BaseEndpoint = aws.String(p.URL())
			o.Retryer = retry.NewStandard(func(ro *retry.StandardOptions) {
				ro.MaxAttempts, ro.MaxBackoff, ro.RateLimiter = 4, 5*time.Millisecond, ratelimit.None
			})
			o.APIOptions = append(o.APIOptions, noteRetried)
		})
	}
	l := shard.Layout{Table: name, PartitionKey: "pk", SortKey: "sk", Strategy: shard.Hash(2), HistoryTTL: 100 * time.Millisecond}
	// The second Table's writes are ExactlyOnce: recorded as taking
	// effect once, whatever the SDK retried.
	var tables []*shard.Table[Order]
	for i := range 2 {
		tbl, err := shard.NewTable[Order](client(), l, func(o *shard.Options) { o.ExactlyOnce = i == 1 })
		if err != nil {
			t.Fatal(err)
		}
		tables = append(tables, tbl)
	}
	sc, err := scatter.New(client(), l)
	if err != nil {
		t.Fatal(err)
	}
	bases, ids := []string{"b1", "b2"}, []string{"i0", "i1", "i2", "i3", "i4"}
	const largeBase = "L1" // a repo.Repo's items with a large value in chunks
	st, err := chunk.New(client(), name, s.Table(t, "ChunkKey:S"))
	if err != nil {
		t.Fatal(err)
	}
	docs, err := repo.New[linDoc](client(), l, func(o *repo.Options) { o.Large = &repo.LargeField{Attribute: "body", Store: st} })
	if err != nil {
		t.Fatal(err)
	}
	rec := &linRecorder{start: time.Now(), ops: map[string][]linOp{}}
	ctx, stop := context.WithTimeout(context.Background(), d)
	defer stop()
	var wg sync.WaitGroup
	var value atomic.Int64
	for w := range 4 {
		wg.Go(func() { linWorker(ctx, rec, tables[w%2], w%2 == 1, bases, ids, &value, uint64(w)) })
	}
	wg.Go(func() { linLargeWorker(ctx, rec, docs, largeBase, ids, &value, 5) })
	wg.Go(func() { linResharder(ctx, t, client(), l, append(bases, largeBase), 99) })
	wg.Go(func() { linReader(ctx, rec, sc, append(bases, largeBase)) })
	wg.Wait()

	// Quiescence: what every id holds now, by Get and by scatter.
	final := context.Background()
	for _, base := range bases {
		for _, id := range ids {
			op := linOp{kind: linGet, call: rec.now()}
			o, err := tables[0].Get(final, base, id, func(o *shard.Options) { o.ConsistentRead = true })
			op.ret = rec.now()
			if err != nil && !errors.Is(err, shard.ErrNotFound) {
				t.Fatalf("final Get %s/%s: %v", base, id, err)
			}
			op.found, op.got = err == nil, o.Amount
			rec.add(base+"/"+id, op)
		}
	}
	for _, id := range ids {
		op := linOp{kind: linGet, call: rec.now()}
		d, err := docs.Get(final, largeBase, id, func(o *repo.Options) { o.ConsistentRead = true })
		op.ret = rec.now()
		if err != nil && !errors.Is(err, shard.ErrNotFound) {
			t.Errorf("final Get %s/%s: %v", largeBase, id, err)
			continue
		}
		op.found, op.got = err == nil, d.value()
		rec.add(largeBase+"/"+id, op)
		if found := slices.ContainsFunc(scatterIDs(t, sc, largeBase), func(s string) bool { return s == id }); found != op.found {
			t.Errorf("%s/%s: Get found it: %v, scatter found it: %v", largeBase, id, op.found, found)
		}
	}
	checkHistories(t, rec)
	for _, base := range bases {
		seen := map[string]bool{}
		for item, err := range sc.All(final, base) {
			var o Order
			if err == nil {
				err = item.Unmarshal(&o)
			}
			if err != nil {
				t.Fatal(err)
			}
			if seen[o.ID] {
				t.Errorf("final scatter of %s returned %s twice", base, o.ID)
			}
			seen[o.ID] = true
			if g, err := tables[0].Get(final, base, o.ID, func(o *shard.Options) { o.ConsistentRead = true }); err != nil || g.Amount != o.Amount {
				t.Errorf("final scatter of %s: %s amount %d, Get says %+v %v", base, o.ID, o.Amount, g, err)
			}
		}
		for _, id := range ids {
			_, err := tables[0].Get(final, base, id, func(o *shard.Options) { o.ConsistentRead = true })
			if (err == nil) != seen[id] {
				t.Errorf("%s/%s: Get %v, but scatter found it: %v (an acknowledged write no read finds)", base, id, err, seen[id])
			}
		}
	}
	if len(rec.dups) > 0 {
		t.Errorf("scatter reads returned items twice: %v", rec.dups)
	}
	if len(rec.corrupt) > 0 {
		t.Errorf("%d reads found a large value damaged, the first: %s", len(rec.corrupt), rec.corrupt[0])
	}
}

func checkHistories(t *testing.T, rec *linRecorder) {
	t.Helper()
	total := 0
	for key, ops := range rec.ops {
		total += len(ops)
		if !linearizable(append([]linOp(nil), ops...)) {
			t.Errorf("%s: history not linearizable; its shortest such prefix ends:\n%s", key, dumpOps(shortestBad(ops)))
		}
	}
	t.Logf("%d operations on %d items checked", total, len(rec.ops))
}

// shortestBad returns the last ops of the shortest prefix of ops (in
// invocation order) that is not linearizable even when every op still
// running at the prefix's last invocation is taken as of unknown outcome
// (a read then says nothing): the history breaks on that prefix.
func shortestBad(ops []linOp) []linOp {
	p := badPrefix(ops)
	return p[max(0, len(p)-16):]
}

// badPrefix is the shortest prefix of ops (by invocation) that no serial
// order explains.
func badPrefix(ops []linOp) []linOp {
	ops = slices.Clone(ops)
	sort.Slice(ops, func(i, j int) bool { return ops[i].call < ops[j].call })
	prefix := func(n int) []linOp {
		end := ops[n-1].call
		var p []linOp
		for _, op := range ops[:n] {
			if op.ret > end {
				if op.kind == linGet {
					continue
				}
				op.unknown, op.ret = true, math.MaxInt64
			}
			p = append(p, op)
		}
		return p
	}
	n := sort.Search(len(ops), func(n int) bool { return !linearizable(prefix(n + 1)) }) + 1
	return ops[:min(n, len(ops))]
}

func dumpOps(ops []linOp) string {
	sort.Slice(ops, func(i, j int) bool { return ops[i].call < ops[j].call })
	out := ""
	for _, op := range ops {
		ret := "?"
		if op.ret != math.MaxInt64 {
			ret = fmt.Sprint(time.Duration(op.ret))
		}
		by := ""
		if op.by != "" {
			by = " by " + op.by
		}
		if op.late {
			by += " (reached the server after its deadline)"
		}
		out += fmt.Sprintf("  %v..%s %v arg=%d expect=%d conflict=%v unknown=%v found=%v got=%d%s\n",
			time.Duration(op.call), ret, op.kind, op.arg, op.expect, op.conflict, op.unknown, op.found, op.got, by)
	}
	return out
}

func linWorker(ctx context.Context, rec *linRecorder, tbl *shard.Table[Order], once bool, bases, ids []string, value *atomic.Int64, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 7))
	for ctx.Err() == nil {
		base, id := bases[rng.IntN(len(bases))], ids[rng.IntN(len(ids))]
		v := int(value.Add(1))
		op := linOp{kind: linKind(rng.IntN(linKinds)), arg: v, call: rec.now()}
		c := withRetried() // never cancelled mid-call: its outcome would be unknown for no reason
		if op.kind == linUpdateIf || op.kind == linDeleteIf {
			op.expect = int(value.Load()) - rng.IntN(6)
		}
		ifAmount := func(o *shard.Options) {
			o.Condition = expression.Name("amount").Equal(expression.Value(op.expect))
		}
		var err error
		switch op.kind {
		case linPut:
			err = tbl.Put(c, base, Order{ID: id, Amount: v})
		case linPutNew:
			err = tbl.Put(c, base, Order{ID: id, Amount: v}, func(o *shard.Options) {
				o.Condition = expression.AttributeNotExists(expression.Name("sk"))
			})
		case linUpdate:
			_, err = tbl.Update(c, base, id, expression.Set(expression.Name("amount"), expression.Value(v)))
		case linUpdateIf:
			_, err = tbl.Update(c, base, id, expression.Set(expression.Name("amount"), expression.Value(v)), ifAmount)
		case linDelete:
			err = tbl.Delete(c, base, id)
		case linDeleteIf:
			err = tbl.Delete(c, base, id, ifAmount)
		case linGet:
			var o Order
			o, err = tbl.Get(c, base, id, func(o *shard.Options) { o.ConsistentRead = true })
			op.ret = rec.now()
			if err != nil && !errors.Is(err, shard.ErrNotFound) {
				continue // a read that failed says nothing
			}
			op.found, op.got = err == nil, o.Amount
			rec.add(base+"/"+id, op)
			continue
		case linLoad:
			loadOne(c, rec, tbl, base, id, op)
			continue
		}
		outcome(&op, err, rec.now())
		if once {
			rec.add(base+"/"+id, op) // ExactlyOnce: no second application
		} else {
			rec.addWrite(c, base+"/"+id, op)
		}
	}
}

// loadOne loads one item, slowly arriving so that its key is chosen well
// before it is sent.
func loadOne(ctx context.Context, rec *linRecorder, tbl *shard.Table[Order], base, id string, op linOp) {
	var items iter.Seq2[string, Order] = func(yield func(string, Order) bool) {
		yield(base, Order{ID: id, Amount: op.arg})
	}
	_, err := tbl.Load(ctx, items, func(o *shard.LoadOptions) { o.StallTimeout = 5 * time.Second })
	outcome(&op, err, rec.now())
	op.conflict = false // a Load has no condition
	rec.addWrite(ctx, base+"/"+id, op)
}

// linDoc is a repo item whose value is also in its large body, a chunked
// payload: a read that pairs a value with another's body is caught.
type linDoc struct {
	ID     string `dynamodbav:"sk"`
	Amount int    `dynamodbav:"amount"`
	Body   []byte `dynamodbav:"body"`
}

func linBody(v int) []byte { return bytes.Repeat([]byte(fmt.Sprintf("%09d|", v)), 600) } // 6,000 bytes: chunks

// value is d's amount if its body agrees, else -1, which no write stores.
func (d linDoc) value() int {
	if !bytes.Equal(d.Body, linBody(d.Amount)) {
		return -1
	}
	return d.Amount
}

// linLargeWorker is linWorker for a repo with a large field: Put, Create,
// Delete and consistent Get.
func linLargeWorker(ctx context.Context, rec *linRecorder, docs *repo.Repo[linDoc], base string, ids []string, value *atomic.Int64, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 9))
	kinds := []linKind{linPut, linPutNew, linDelete, linGet}
	for ctx.Err() == nil {
		id := ids[rng.IntN(len(ids))]
		v := int(value.Add(1))
		op := linOp{kind: kinds[rng.IntN(len(kinds))], arg: v, call: rec.now()}
		c := withRetried()
		var err error
		switch op.kind {
		case linPut:
			_, err = docs.Put(c, base, linDoc{ID: id, Amount: v, Body: linBody(v)})
		case linPutNew:
			_, err = docs.Create(c, base, linDoc{ID: id, Amount: v, Body: linBody(v)})
		case linDelete:
			err = docs.Delete(c, base, id)
		case linGet:
			var d linDoc
			d, err = docs.Get(c, base, id, func(o *repo.Options) { o.ConsistentRead = true })
			op.ret = rec.now()
			if ce := (*chunk.CorruptError)(nil); errors.As(err, &ce) {
				rec.mu.Lock()
				rec.corrupt = append(rec.corrupt, fmt.Sprintf("%s/%s at %v: %v", base, id, time.Duration(op.ret), err))
				rec.mu.Unlock()
			}
			if err != nil && !errors.Is(err, shard.ErrNotFound) {
				continue
			}
			op.found, op.got = err == nil, d.value()
			rec.add(base+"/"+id, op)
			continue
		}
		outcome(&op, err, rec.now())
		rec.addWrite(c, base+"/"+id, op)
	}
}

// scatterIDs returns the ids scatter.All returns for base.
func scatterIDs(t *testing.T, sc *scatter.Scatter, base string) []string {
	t.Helper()
	var ids []string
	for item, err := range sc.All(context.Background(), base) {
		var o Order
		if err == nil {
			err = item.Unmarshal(&o)
		}
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, o.ID)
	}
	return ids
}

// linResharder grows and shrinks the bases and rebalances them, cutting
// some Rebalances short and running them again.
func linResharder(ctx context.Context, t *testing.T, c *dynamodb.Client, l shard.Layout, bases []string, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 3))
	counts := []int{1, 2, 3, 4, 8}
	for ctx.Err() == nil {
		base := bases[rng.IntN(len(bases))]
		n := counts[rng.IntN(len(counts))]
		if _, err := l.Reshard(ctx, c, base, n); err != nil && ctx.Err() == nil && !errors.Is(err, shard.ErrConflict) {
			t.Logf("Reshard %s to %d: %v", base, n, err)
		}
		if rng.IntN(3) == 0 { // cut short, at a random point
			rc, cancel := context.WithTimeout(ctx, time.Duration(rng.IntN(1500))*time.Millisecond)
			_, _ = shard.Rebalance(rc, c, l, base)
			cancel()
		}
		if rng.IntN(2) == 0 {
			if _, err := shard.Rebalance(ctx, c, l, base); err != nil && ctx.Err() == nil && !errors.Is(err, shard.ErrConflict) {
				t.Logf("Rebalance %s: %v", base, err)
			}
		}
	}
}

// linReader reads the bases through scatter and records any id returned
// twice by one read.
func linReader(ctx context.Context, rec *linRecorder, sc *scatter.Scatter, bases []string) {
	for ctx.Err() == nil {
		for _, base := range bases {
			seen := map[string]bool{}
			for item, err := range sc.All(ctx, base) {
				var o Order
				if err != nil || item.Unmarshal(&o) != nil {
					break
				}
				if seen[o.ID] {
					rec.mu.Lock()
					rec.dups = append(rec.dups, base+"/"+o.ID)
					rec.mu.Unlock()
				}
				seen[o.ID] = true
			}
		}
	}
}
