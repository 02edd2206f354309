package split

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynashard/dynashard/chunk"
	"github.com/dynashard/dynashard/internal/ddbtest"
	"github.com/dynashard/dynashard/internal/localddb"
)

// The model check: random operations on a small key space, through a
// Store on DynamoDB Local, compared with a reference model of one logical
// item — sequentially (every outcome and every read must be the model's),
// and concurrently (every history must be linearizable against the model:
// some order of the operations, consistent with real time, explains every
// outcome). Parts: a (versioned), b, c, and d (versioned, with a large
// value d stored through a chunk store and a small attribute dn). The
// large values have sizes on both sides of the chunk store's thresholds
// (the 4 KiB inline limit, the 384 KiB chunk size) and of the 400 KB item
// limit, and the model holds their SHA-256.

type mItem struct {
	K  string `dynamodbav:"k"`
	A  string `dynamodbav:"a,omitempty"`
	AV int64  `dynamodbav:"av,omitempty"`
	B  string `dynamodbav:"b,omitempty"`
	C  string `dynamodbav:"c,omitempty"`
	D  []byte `dynamodbav:"d,omitempty"`
	DN string `dynamodbav:"dn,omitempty"`
	DV int64  `dynamodbav:"dv,omitempty"`
}

// mState is the model: a logical item exists whole or not at all.
type mState struct {
	exists bool
	a      string
	av     int64
	b, c   string
	d      string // digest of the large value
	dn     string
	dv     int64
}

// largeSizes are the sizes of the large values: around the chunk store's
// inline limit (4 KiB) and chunk size (384 KiB), and DynamoDB's item limit
// (409,600 bytes).
var largeSizes = []int{0, 1, 4095, 4096, 4097, 393_215, 393_216, 393_217, 409_599, 409_600, 409_601, 786_433}

// largeValue is the large value of val and size: deterministic bytes.
func largeValue(val string, size int) []byte {
	h := sha256.Sum256([]byte(val))
	r := rand.New(rand.NewPCG(binary.LittleEndian.Uint64(h[:]), uint64(size)))
	b := make([]byte, size)
	for i := range b {
		if i%8 == 0 {
			binary.LittleEndian.PutUint64(h[:8], r.Uint64())
		}
		b[i] = h[i%8]
	}
	return b
}

// digest names a large value in the model.
func digest(b []byte) string {
	h := sha256.Sum256(b)
	return fmt.Sprintf("%d:%x", len(b), h[:6])
}

type opKind int

const (
	opCreate opKind = iota
	opPutA          // Put of part a with a guessed version
	opPutB          // Put of part b
	opPutBC         // Put of parts b and c: one transaction
	opUpdC          // Update of part c
	opDelete
	opGet   // consistent Get of one part (concurrent) or of all (sequential)
	opPutD  // Put of the large part d with a guessed version
	opPutAD // Put of parts a and d, each with a guessed version: one transaction carrying d's flip
	opUpdDN // Update of d's small attribute
	nKinds
)

type op struct {
	kind   opKind
	key    string
	val    string
	guess  int64
	guessD int64
	size   int    // of the large value
	digest string // of the large value
	part   string // opGet: "" means every part
}

// outcome is what an operation returned: its class and, for a Get, what
// it saw.
type outcome struct {
	class string // ok, notfound, conflict, txconflict (lost to a concurrent transaction: no effect)
	seen  string
}

func randomOp(r *rand.Rand, keys []string, allParts bool) op {
	o := op{kind: opKind(r.IntN(int(nKinds))), key: keys[r.IntN(len(keys))], val: fmt.Sprint("v", r.IntN(100)),
		guess: int64(r.IntN(4)), guessD: int64(r.IntN(4)), size: largeSizes[r.IntN(len(largeSizes))]}
	o.digest = digest(largeValue(o.val, o.size))
	if o.kind == opGet && !allParts {
		o.part = []string{"a", "b", "c", "d"}[r.IntN(4)]
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
		return outcome{class: "ok"}, mState{exists: true, a: o.val, av: 1, b: o.val, c: o.val, d: o.digest, dn: o.val, dv: 1}
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
	case opPutD:
		if s.dv != o.guessD {
			return outcome{class: "conflict"}, s
		}
		s.d, s.dn, s.dv = o.digest, o.val, s.dv+1
	case opPutAD:
		if s.av != o.guess || s.dv != o.guessD {
			return outcome{class: "conflict"}, s
		}
		s.a, s.av = o.val, s.av+1
		s.d, s.dn, s.dv = o.digest, o.val, s.dv+1
	case opUpdDN:
		s.dn, s.dv = o.val, s.dv+1 // an Update advances the part's version
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
	case "d":
		return fmt.Sprintf("d=%s dn=%s/%d", s.d, s.dn, s.dv)
	}
	return fmt.Sprintf("a=%s/%d b=%s c=%s d=%s dn=%s/%d", s.a, s.av, s.b, s.c, s.d, s.dn, s.dv)
}

// run performs o on st.
func run(ctx context.Context, st *Store[mItem], o op) outcome {
	k := Key{PK: o.key}
	var err error
	switch o.kind {
	case opCreate:
		_, err = st.Create(ctx, mItem{K: o.key, A: o.val, B: o.val, C: o.val, D: largeValue(o.val, o.size), DN: o.val})
	case opPutA:
		_, err = st.Put(ctx, mItem{K: o.key, A: o.val, AV: o.guess}, []string{"a"})
	case opPutB:
		_, err = st.Put(ctx, mItem{K: o.key, B: o.val}, []string{"b"})
	case opPutBC:
		_, err = st.Put(ctx, mItem{K: o.key, B: o.val, C: o.val}, []string{"b", "c"})
	case opUpdC:
		_, err = st.Update(ctx, k, "c", expression.Set(expression.Name("c"), expression.Value(o.val)))
	case opPutD:
		_, err = st.Put(ctx, mItem{K: o.key, D: largeValue(o.val, o.size), DN: o.val, DV: o.guessD}, []string{"d"})
	case opPutAD:
		_, err = st.Put(ctx, mItem{K: o.key, A: o.val, AV: o.guess, D: largeValue(o.val, o.size), DN: o.val, DV: o.guessD}, []string{"a", "d"})
	case opUpdDN:
		_, err = st.Update(ctx, k, "d", expression.Set(expression.Name("dn"), expression.Value(o.val)))
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
			s := mState{exists: true, a: r.Item.A, av: r.Item.AV, b: r.Item.B, c: r.Item.C, d: digest(r.Item.D), dn: r.Item.DN, dv: r.Item.DV}
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
	dTable := ddbtest.TableName()
	cs, err := chunk.New(s.Client(), dTable, ddbtest.TableName())
	if err != nil {
		t.Fatal(err)
	}
	l := Layout{PartitionKey: "k", Parts: []Part{
		{Name: "a", Table: ddbtest.TableName(), Attributes: []string{"a"}, Version: "av"},
		{Name: "b", Table: ddbtest.TableName(), Attributes: []string{"b"}},
		{Name: "c", Table: ddbtest.TableName(), Attributes: []string{"c"}},
		{Name: "d", Table: dTable, Attributes: []string{"d", "dn"}, Version: "dv", Large: &LargeField{Attribute: "d", Store: cs}},
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

// TestModelCatchesLargeBug puts back a bug on purpose in the large part's
// writes (a Put of parts a and d checks that the item exists, writes a in
// a transaction of its own and then d through its chunk store, instead of
// one transaction carrying d's flip) and shows that the model check fails:
// a Put whose d is refused on its version leaves a's new value behind.
func TestModelCatchesLargeBug(t *testing.T) {
	s := ddbtest.Get(t, localddb.DynamoDBLocal)
	st := modelStore(t, s)
	putBack.largeApart = true
	defer func() { putBack.largeApart = false }()
	err := checkSequential(context.Background(), st, 42, 150)
	if err == nil {
		t.Fatal("the model check passed a Store that writes a large part apart from the others")
	}
	t.Logf("caught, as it should: %v", err)
}
