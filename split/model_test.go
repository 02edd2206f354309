package split

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynashard/dynashard/internal/ddbtest"
	"github.com/dynashard/dynashard/internal/localddb"
)

// The model check: random operations on a small key space, through a
// Store on DynamoDB Local, compared with a reference model of one logical
// item — sequentially (every outcome and every read must be the model's),
// and concurrently (every history must be linearizable against the model:
// some order of the operations, consistent with real time, explains every
// outcome). Parts: a (versioned), b and c.

type mItem struct {
	K  string `dynamodbav:"k"`
	A  string `dynamodbav:"a,omitempty"`
	AV int64  `dynamodbav:"av,omitempty"`
	B  string `dynamodbav:"b,omitempty"`
	C  string `dynamodbav:"c,omitempty"`
}

// mState is the model: a logical item exists whole or not at all.
type mState struct {
	exists bool
	a      string
	av     int64
	b, c   string
}

type opKind int

const (
	opCreate opKind = iota
	opPutA          // Put of part a with a guessed version
	opPutB          // Put of part b
	opPutBC         // Put of parts b and c: one transaction
	opUpdC          // Update of part c
	opDelete
	opGet // consistent Get of one part (concurrent) or of all (sequential)
	nKinds
)

type op struct {
	kind  opKind
	key   string
	val   string
	guess int64
	part  string // opGet: "" means every part
}

// outcome is what an operation returned: its class and, for a Get, what
// it saw.
type outcome struct {
	class string // ok, notfound, conflict, txconflict (lost to a concurrent transaction: no effect)
	seen  string
}

func randomOp(r *rand.Rand, keys []string, allParts bool) op {
	o := op{kind: opKind(r.IntN(int(nKinds))), key: keys[r.IntN(len(keys))], val: fmt.Sprint("v", r.IntN(100)), guess: int64(r.IntN(4))}
	if o.kind == opGet && !allParts {
		o.part = []string{"a", "b", "c"}[r.IntN(3)]
	}
	return o
}

// apply runs o on the model: the outcome the model expects and the next
// state.
func (s mState) apply(o op) (outcome, mState) {
	if o.kind == opGet {
		return outcome{class: classOf(s.exists), seen: s.view(o.part)}, s
	}
	if o.kind == opDelete {
		return outcome{class: "ok"}, mState{}
	}
	if o.kind == opCreate {
		if s.exists {
			return outcome{class: "conflict"}, s
		}
		return outcome{class: "ok"}, mState{exists: true, a: o.val, av: 1, b: o.val, c: o.val}
	}
	if !s.exists {
		return outcome{class: "notfound"}, s
	}
	switch o.kind {
	case opPutA:
		if s.av != o.guess {
			return outcome{class: "conflict"}, s
		}
		s.a, s.av = o.val, s.av+1
	case opPutB:
		s.b = o.val
	case opPutBC:
		s.b, s.c = o.val, o.val
	case opUpdC:
		s.c = o.val
	}
	return outcome{class: "ok"}, s
}

func classOf(exists bool) string {
	if exists {
		return "ok"
	}
	return "notfound"
}

// view is what a Get of part (every part for "") shows of s.
func (s mState) view(part string) string {
	if !s.exists {
		return ""
	}
	switch part {
	case "a":
		return fmt.Sprintf("a=%s/%d", s.a, s.av)
	case "b":
		return "b=" + s.b
	case "c":
		return "c=" + s.c
	}
	return fmt.Sprintf("a=%s/%d b=%s c=%s", s.a, s.av, s.b, s.c)
}

// run performs o on st.
func run(ctx context.Context, st *Store[mItem], o op) outcome {
	k := Key{PK: o.key}
	var err error
	switch o.kind {
	case opCreate:
		_, err = st.Create(ctx, mItem{K: o.key, A: o.val, B: o.val, C: o.val})
	case opPutA:
		_, err = st.Put(ctx, mItem{K: o.key, A: o.val, AV: o.guess}, []string{"a"})
	case opPutB:
		_, err = st.Put(ctx, mItem{K: o.key, B: o.val}, []string{"b"})
	case opPutBC:
		_, err = st.Put(ctx, mItem{K: o.key, B: o.val, C: o.val}, []string{"b", "c"})
	case opUpdC:
		_, err = st.Update(ctx, k, "c", expression.Set(expression.Name("c"), expression.Value(o.val)))
	case opDelete:
		err = st.Delete(ctx, k)
	case opGet:
		var parts []string
		if o.part != "" {
			parts = []string{o.part}
		}
		r, gerr := st.Get(ctx, k, parts, func(o *Options) { o.ConsistentRead = true })
		out := outcome{class: classify(gerr)}
		if gerr == nil {
			if r.Missing != nil {
				return outcome{class: "ok", seen: fmt.Sprintf("partial item: found %q, missing %q", r.Found, r.Missing)}
			}
			s := mState{exists: true, a: r.Item.A, av: r.Item.AV, b: r.Item.B, c: r.Item.C}
			out.seen = s.view(o.part)
		}
		return out
	}
	return outcome{class: classify(err)}
}

func classify(err error) string {
	var tce *types.TransactionCanceledException
	if errors.As(err, &tce) {
		for _, r := range tce.CancellationReasons {
			if aws.ToString(r.Code) == "TransactionConflict" {
				return "txconflict"
			}
		}
	}
	var tc *types.TransactionConflictException
	switch {
	case err == nil:
		return "ok"
	case errors.As(err, &tc):
		return "txconflict"
	case errors.Is(err, ErrNotFound):
		return "notfound"
	case errors.Is(err, ErrConflict):
		return "conflict"
	}
	return "error: " + err.Error()
}

func modelStore(t *testing.T, s *ddbtest.Server) *Store[mItem] {
	t.Helper()
	l := Layout{PartitionKey: "k", Parts: []Part{
		{Name: "a", Table: ddbtest.TableName(), Attributes: []string{"a"}, Version: "av"},
		{Name: "b", Table: ddbtest.TableName(), Attributes: []string{"b"}},
		{Name: "c", Table: ddbtest.TableName(), Attributes: []string{"c"}},
	}}
	ins, err := l.CreateTableInputs()
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range ins {
		s.CreateTable(t, in)
	}
	st, err := New[mItem](s.Client(), l)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// checkSequential runs n random operations one after another and returns
// the first disagreement with the model.
func checkSequential(ctx context.Context, st *Store[mItem], seed uint64, n int) error {
	r := rand.New(rand.NewPCG(seed, 1))
	keys := []string{fmt.Sprint("s", seed, "-1"), fmt.Sprint("s", seed, "-2"), fmt.Sprint("s", seed, "-3")}
	model := map[string]mState{}
	for i := range n {
		o := randomOp(r, keys, true)
		want, next := model[o.key].apply(o)
		got := run(ctx, st, o)
		if got != want {
			return fmt.Errorf("op %d %+v: got %+v, want %+v", i, o, got, want)
		}
		model[o.key] = next
	}
	return nil
}

func TestModelSequential(t *testing.T) {
	s := ddbtest.Get(t, localddb.DynamoDBLocal)
	st := modelStore(t, s)
	for seed := range uint64(3) {
		if err := checkSequential(context.Background(), st, seed, 150); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
	}
}

// hop is an operation of a concurrent history: invocation and response
// stamps from one logical clock, so a.ret < b.call means a returned before
// b was invoked.
type hop struct {
	op        op
	out       outcome
	call, ret int64
}

// checkConcurrent runs workers goroutines of perWorker random operations
// each on two fresh keys and checks the history of each key.
func checkConcurrent(ctx context.Context, st *Store[mItem], round, workers, perWorker int) error {
	keys := []string{fmt.Sprint("c", round, "-1"), fmt.Sprint("c", round, "-2")}
	var clock atomic.Int64
	var mu sync.Mutex
	var hist []hop
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(round), uint64(w)))
			for range perWorker {
				o := randomOp(r, keys, false)
				h := hop{op: o, call: clock.Add(1)}
				h.out = run(ctx, st, o)
				h.ret = clock.Add(1)
				mu.Lock()
				hist = append(hist, h)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	for _, k := range keys {
		var ops []hop
		for _, h := range hist {
			if h.op.key == k {
				ops = append(ops, h)
			}
		}
		if err := linearizable(ops); err != nil {
			return fmt.Errorf("key %s: %w", k, err)
		}
	}
	return nil
}

// linearizable reports whether some order of ops that respects real time
// (an operation that returned before another was invoked comes first)
// takes the model from "absent" through every outcome observed. An
// operation that lost to a concurrent transaction had no effect and fits
// anywhere. A brute-force search with memoization, as porcupine does,
// enough for the short histories here (at most 64 operations per key).
func linearizable(ops []hop) error {
	for _, h := range ops {
		if len(h.out.class) > 6 && h.out.class[:6] == "error:" {
			return fmt.Errorf("%+v: %s", h.op, h.out.class)
		}
	}
	if len(ops) > 64 {
		return fmt.Errorf("history of %d operations: at most 64", len(ops))
	}
	full := uint64(1)<<len(ops) - 1
	if len(ops) == 64 {
		full = ^uint64(0)
	}
	type memo struct {
		done uint64
		st   mState
	}
	failed := map[memo]bool{}
	var search func(done uint64, st mState) bool
	search = func(done uint64, st mState) bool {
		if done == full {
			return true
		}
		if failed[memo{done, st}] {
			return false
		}
		minRet := int64(1 << 62)
		for i, h := range ops {
			if done&(1<<i) == 0 && h.ret < minRet {
				minRet = h.ret
			}
		}
		for i, h := range ops {
			if done&(1<<i) != 0 || h.call > minRet {
				continue
			}
			next := st
			if h.out.class != "txconflict" {
				var want outcome
				want, next = st.apply(h.op)
				if want != h.out {
					continue
				}
			}
			if search(done|1<<i, next) {
				return true
			}
		}
		failed[memo{done, st}] = true
		return false
	}
	if !search(0, mState{}) {
		return fmt.Errorf("not linearizable: %d operations: %+v", len(ops), ops)
	}
	return nil
}

func TestModelConcurrent(t *testing.T) {
	s := ddbtest.Get(t, localddb.DynamoDBLocal)
	st := modelStore(t, s)
	for round := range 8 {
		if err := checkConcurrent(context.Background(), st, round, 4, 8); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
	}
}

// TestModelCatchesBug puts back a bug on purpose (Put without its
// existence condition, which leaves a partial item behind after a
// Delete) and shows that the model check fails.
func TestModelCatchesBug(t *testing.T) {
	s := ddbtest.Get(t, localddb.DynamoDBLocal)
	st := modelStore(t, s)
	putBack.putCreates = true
	defer func() { putBack.putCreates = false }()
	err := checkSequential(context.Background(), st, 42, 150)
	if err == nil {
		t.Fatal("the model check passed a Store that creates parts in Put")
	}
	t.Logf("caught, as it should: %v", err)
}

// TestLinearizableRejects: the checker itself refuses a history no order
// explains (a read of a value before it was written, sequentially).
func TestLinearizableRejects(t *testing.T) {
	create := op{kind: opCreate, key: "k", val: "x"}
	get := op{kind: opGet, key: "k", part: "b"}
	good := []hop{
		{op: create, out: outcome{class: "ok"}, call: 1, ret: 4},
		{op: get, out: outcome{class: "ok", seen: "b=x"}, call: 2, ret: 3}, // overlaps the Create
	}
	if err := linearizable(good); err != nil {
		t.Errorf("good history refused: %v", err)
	}
	bad := []hop{
		{op: get, out: outcome{class: "ok", seen: "b=x"}, call: 1, ret: 2}, // before the Create began
		{op: create, out: outcome{class: "ok"}, call: 3, ret: 4},
	}
	if err := linearizable(bad); err == nil {
		t.Error("a read from the future was accepted")
	}
}
