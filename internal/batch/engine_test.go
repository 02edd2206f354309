package batch

// Unit tests of packing, folding, backoff and give-up logic. They drive the
// engine through its internal sender seam with scripted outcomes, no server;
// the same behaviour is proved end to end through the real SDK against real
// servers in server_test.go.

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"

	"github.com/dynashard/dynashard/internal/ddbsize"
)

type (
	av   = types.AttributeValue
	item = map[string]types.AttributeValue
)

func s(v string) av { return &types.AttributeValueMemberS{Value: v} }
func n(v string) av { return &types.AttributeValueMemberN{Value: v} }

// script is a sender that records every request and answers with respond.
type script struct {
	mu      sync.Mutex
	batches [][]*job
	applied map[*job]int // times each entry was reported done
	respond func(call int, batch []*job) outcome
}

func newScript(respond func(call int, batch []*job) outcome) *script {
	return &script{respond: respond, applied: map[*job]int{}}
}

func (sc *script) send(ctx context.Context, batch []*job) outcome {
	sc.mu.Lock()
	call := len(sc.batches)
	sc.batches = append(sc.batches, slices.Clone(batch))
	sc.mu.Unlock()
	out := outcome{attempts: 1}
	if sc.respond != nil {
		out = sc.respond(call, batch)
	}
	if out.err == nil {
		sc.mu.Lock()
		for _, j := range batch {
			if !slices.Contains(out.left, j) {
				sc.applied[j]++
			}
		}
		sc.mu.Unlock()
	}
	return out
}

func (sc *script) calls() int {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	return len(sc.batches)
}

func testOpts(fns ...func(*Options)) Options {
	return options(fns)
}

func put(table, pk string) Write {
	return Write{Table: table, Put: item{"pk": s(pk), "v": s("value of " + pk)}}
}

func puts(tables []string, n int) []Write {
	ws := make([]Write, n)
	for i := range ws {
		ws[i] = put(tables[i%len(tables)], fmt.Sprint("k", i))
	}
	return ws
}

var keyAttrs = func(tables ...string) func(*Options) {
	return func(o *Options) {
		o.KeyAttributes = map[string][]string{}
		for _, t := range tables {
			o.KeyAttributes[t] = []string{"pk"}
		}
	}
}

// seqsOf lists the input positions sent in each request.
func seqsOf(batches [][]*job) [][]int {
	out := make([][]int, len(batches))
	for i, b := range batches {
		for _, j := range b {
			out[i] = append(out[i], j.seq)
		}
	}
	return out
}

func checkExactlyOnce(t *testing.T, sc *script, n int) {
	t.Helper()
	seen := make([]int, n)
	for j, c := range sc.applied {
		seen[j.seq] += c
	}
	for i, c := range seen {
		if c != 1 {
			t.Errorf("entry %d applied %d times, want 1", i, c)
		}
	}
}

func TestSplitByCount(t *testing.T) {
	for _, tc := range []struct {
		n      int
		tables []string
	}{
		{0, []string{"a"}}, {1, []string{"a"}}, {25, []string{"a"}}, {26, []string{"a", "b"}},
		{51, []string{"a", "b", "c"}}, {260, []string{"a", "b"}},
	} {
		t.Run(fmt.Sprint(tc.n, "writes"), func(t *testing.T) {
			sc := newScript(nil)
			st, err := writeAll(context.Background(), sc.send, puts(tc.tables, tc.n), testOpts(keyAttrs(tc.tables...)))
			if err != nil {
				t.Fatal(err)
			}
			want := (tc.n + MaxWritesPerRequest - 1) / MaxWritesPerRequest
			if got := sc.calls(); got != want || st.Requests != want {
				t.Errorf("requests: got %d (stats %d), want %d", got, st.Requests, want)
			}
			for _, b := range sc.batches {
				if len(b) > MaxWritesPerRequest {
					t.Errorf("request of %d writes, limit %d", len(b), MaxWritesPerRequest)
				}
			}
			checkExactlyOnce(t, sc, tc.n)
			if st.Done != tc.n {
				t.Errorf("Done: got %d, want %d", st.Done, tc.n)
			}
		})
	}
	for _, n := range []int{1, 100, 101, 250} {
		t.Run(fmt.Sprint(n, "keys"), func(t *testing.T) {
			keys := make([]Key, n)
			for i := range keys {
				keys[i] = Key{Table: []string{"a", "b"}[i%2], Key: item{"pk": s(fmt.Sprint(i))}}
			}
			sc := newScript(nil)
			if _, _, err := get(context.Background(), sc.send, keys, testOpts()); err != nil {
				t.Fatal(err)
			}
			want := (n + MaxKeysPerRequest - 1) / MaxKeysPerRequest
			if got := sc.calls(); got != want {
				t.Errorf("requests: got %d, want %d", got, want)
			}
			for _, b := range sc.batches {
				if len(b) > MaxKeysPerRequest {
					t.Errorf("request of %d keys, limit %d", len(b), MaxKeysPerRequest)
				}
			}
			checkExactlyOnce(t, sc, n)
		})
	}
}

// TestSplitByBytes packs items of random wire sizes under a lowered byte
// limit and compares with greedy packing in input order.
func TestSplitByBytes(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	const limit = 20_000
	ws := make([]Write, 300)
	for i := range ws {
		// Control bytes take six bytes each on the wire.
		pad := strings.Repeat("\x01", r.IntN(limit/6/3))
		ws[i] = Write{Table: "t", Put: item{"pk": s(fmt.Sprint(i)), "pad": s(pad)}}
	}
	sc := newScript(nil)
	_, err := writeAll(context.Background(), sc.send, ws, testOpts(keyAttrs("t"), func(o *Options) {
		o.maxRequestBytes = limit
		o.MaxConcurrency = 1
	}))
	if err != nil {
		t.Fatal(err)
	}
	// Reference: greedy packing by WireSize in input order.
	var want [][]int
	var cur []int
	size := requestOverhead
	for i, w := range ws {
		ws := ddbsize.WireSize(w.Put) + putOverhead + tableOverhead + len(w.Table)
		if len(cur) == MaxWritesPerRequest || (len(cur) > 0 && size+ws > limit) {
			want, cur, size = append(want, cur), nil, requestOverhead
		}
		cur = append(cur, i)
		size += ws
	}
	want = append(want, cur)
	if diff := cmp.Diff(want, seqsOf(sc.batches)); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
	if len(want) < 10 {
		t.Fatalf("only %d requests: the byte limit was not exercised", len(want))
	}
}

// TestFoldLeftovers proves leftovers go out first in the next request,
// topped up with fresh writes.
func TestFoldLeftovers(t *testing.T) {
	sc := newScript(func(call int, batch []*job) outcome {
		if call == 0 {
			return outcome{left: batch[:5]}
		}
		return outcome{}
	})
	_, err := writeAll(context.Background(), sc.send, puts([]string{"t"}, 60), testOpts(keyAttrs("t"), func(o *Options) {
		o.MaxConcurrency = 1
		o.jitter = func(time.Duration) time.Duration { return 0 }
	}))
	if err != nil {
		t.Fatal(err)
	}
	var want [][]int
	want = append(want, seq(0, 25))
	want = append(want, append(seq(0, 5), seq(25, 45)...))
	want = append(want, seq(45, 60))
	if diff := cmp.Diff(want, seqsOf(sc.batches)); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
	checkExactlyOnce(t, sc, 60)
}

func seq(from, to int) []int {
	var out []int
	for i := from; i < to; i++ {
		out = append(out, i)
	}
	return out
}

// TestBackoffSchedule checks the waits asked for against a model:
// exponential in consecutive stalls, capped, reset by progress.
func TestBackoffSchedule(t *testing.T) {
	// true: the call makes progress (one entry done); false: nothing done.
	plan := []bool{false, false, false, false, true, false, false, true, true}
	sc := newScript(func(call int, batch []*job) outcome {
		if call >= len(plan) {
			return outcome{}
		}
		if plan[call] && len(batch) > 1 {
			return outcome{left: batch[1:]}
		}
		return outcome{left: batch}
	})
	var waits []time.Duration
	const base, max = time.Millisecond, 5 * time.Millisecond
	_, err := writeAll(context.Background(), sc.send, puts([]string{"t"}, 10), testOpts(keyAttrs("t"), func(o *Options) {
		o.MaxConcurrency = 1
		o.BaseDelay, o.MaxDelay = base, max
		o.jitter = func(d time.Duration) time.Duration { waits = append(waits, d); return 0 }
	}))
	if err != nil {
		t.Fatal(err)
	}
	var want []time.Duration
	stalls := 0
	for _, progress := range plan {
		if progress {
			stalls = 0
		} else {
			stalls++
		}
		d := base
		for range stalls {
			d *= 2
		}
		want = append(want, min(d, max))
	}
	if diff := cmp.Diff(want, waits); diff != "" {
		t.Errorf("backoff waits (-want +got):\n%s", diff)
	}
	checkExactlyOnce(t, sc, 10)
}

// TestGetSizeDrivenPartial: a BatchGetItem partial that read something is
// resent at once; one that read nothing backs off.
func TestGetSizeDrivenPartial(t *testing.T) {
	keys := make([]Key, 10)
	for i := range keys {
		keys[i] = Key{Table: "t", Key: item{"pk": s(fmt.Sprint(i))}}
	}
	for _, tc := range []struct {
		name      string
		progress  bool
		wantWaits int
	}{{"size-driven", true, 0}, {"throttle-driven", false, 1}} {
		t.Run(tc.name, func(t *testing.T) {
			sc := newScript(func(call int, batch []*job) outcome {
				if call == 0 {
					if tc.progress {
						return outcome{left: batch[3:]}
					}
					return outcome{left: batch}
				}
				return outcome{}
			})
			waits := 0
			_, st, err := get(context.Background(), sc.send, keys, testOpts(func(o *Options) {
				o.jitter = func(time.Duration) time.Duration { waits++; return 0 }
			}))
			if err != nil {
				t.Fatal(err)
			}
			if waits != tc.wantWaits {
				t.Errorf("backoff waits: got %d, want %d", waits, tc.wantWaits)
			}
			if st.Requests != 2 || st.Retries != 1 || st.UnprocessedRounds != 1 {
				t.Errorf("stats: got %+v, want 2 requests, 1 retry, 1 unprocessed round", st)
			}
			checkExactlyOnce(t, sc, len(keys))
		})
	}
}

func noWait(o *Options) { o.jitter = func(time.Duration) time.Duration { return 0 } }

func TestGiveUp(t *testing.T) {
	for _, tc := range []struct {
		name    string
		opt     func(*Options)
		respond func(call int, batch []*job) outcome
		want    error
		code    string // the API error the cause wraps, if any
	}{
		{"stalled", func(o *Options) { o.StallTimeout = time.Nanosecond },
			func(int, []*job) outcome {
				return outcome{left: nil, err: &smithy.GenericAPIError{Code: "ThrottlingException"}}
			},
			ErrStalled, ""},
		{"stalled by leftovers", func(o *Options) { o.StallTimeout = time.Nanosecond },
			func(_ int, b []*job) outcome { return outcome{left: b} },
			ErrStalled, ""},
		{"retry budget", func(o *Options) { o.RetryBudget = 3 },
			func(_ int, b []*job) outcome { return outcome{left: b[len(b)/2:]} },
			ErrRetryBudget, ""},
		{"no retries", func(o *Options) { o.RetryBudget = -1 },
			func(_ int, b []*job) outcome { return outcome{left: b[:1]} },
			ErrRetryBudget, ""},
		{"other error", nil,
			func(call int, b []*job) outcome {
				if call == 1 {
					return outcome{err: &smithy.GenericAPIError{Code: "ValidationException"}}
				}
				return outcome{}
			},
			nil, "ValidationException"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
			const total = 80
			sc := newScript(tc.respond)
			ws := puts([]string{"t"}, total)
			st, err := writeAll(context.Background(), sc.send, ws, testOpts(keyAttrs("t"), noWait, func(o *Options) {
				o.MaxConcurrency = 2
				if tc.opt != nil {
					tc.opt(o)
				}
			}))
			var ue *UnprocessedError
			if !errors.As(err, &ue) {
				t.Fatalf("got %v, want *UnprocessedError", err)
			}
			if tc.code != "" {
				var ae smithy.APIError
				if !errors.As(err, &ae) || ae.ErrorCode() != tc.code {
					t.Errorf("got %v, want it to wrap API error %s", err, tc.code)
				}
			} else if !errors.Is(err, tc.want) {
				t.Errorf("got %v, want %v", err, tc.want)
			}
			// Exactly the writes not applied are listed, in input order.
			var want []Write
			done := 0
			for i, w := range ws {
				if c := appliedBySeq(sc, i); c == 0 {
					want = append(want, w)
				} else {
					done += c
				}
			}
			if diff := cmp.Diff(pks(want), pks(ue.Writes)); diff != "" {
				t.Errorf("unprocessed writes (-want +got):\n%s", diff)
			}
			if st.Done != done || done+len(ue.Writes) != total {
				t.Errorf("Done: got %d, applied %d, listed %d, want a partition of %d", st.Done, done, len(ue.Writes), total)
			}
			if tc.want == ErrRetryBudget && tc.opt != nil {
				var o Options
				tc.opt(&o)
				if max(o.RetryBudget, 0) != st.Retries {
					t.Errorf("Retries: got %d, want %d", st.Retries, max(o.RetryBudget, 0))
				}
			}
		})
	}
}

func appliedBySeq(sc *script, i int) int {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	c := 0
	for j, k := range sc.applied {
		if j.seq == i {
			c += k
		}
	}
	return c
}

// pks names writes by their partition key, for comparisons.
func pks(ws []Write) []string {
	var out []string
	for _, w := range ws {
		m := w.Put
		if m == nil {
			m = w.Delete
		}
		out = append(out, m["pk"].(*types.AttributeValueMemberS).Value)
	}
	return out
}

func TestThrottleErrorIsRetried(t *testing.T) {
	for _, code := range []string{"ProvisionedThroughputExceededException", "ThrottlingException", "RequestLimitExceeded"} {
		t.Run(code, func(t *testing.T) {
			sc := newScript(func(call int, b []*job) outcome {
				if call < 2 {
					return outcome{err: fmt.Errorf("wrapped: %w", &smithy.GenericAPIError{Code: code})}
				}
				return outcome{}
			})
			st, err := writeAll(context.Background(), sc.send, puts([]string{"t"}, 5), testOpts(keyAttrs("t"), noWait, func(o *Options) { o.MaxConcurrency = 1 }))
			if err != nil {
				t.Fatal(err)
			}
			if st.Throttled != 2 || st.Retries != 2 || st.Requests != 3 {
				t.Errorf("stats: got %+v, want 2 throttled, 2 retries, 3 requests", st)
			}
			checkExactlyOnce(t, sc, 5)
		})
	}
}

func TestValidation(t *testing.T) {
	big := strings.Repeat("x", ddbsize.MaxItemSize)
	for _, tc := range []struct {
		name   string
		writes []Write
		keyed  bool // KeyAttributes known for "t"
		index  int
		want   error
	}{
		{"no table", []Write{{Put: item{"pk": s("a")}}}, true, 0, ErrInvalidWrite},
		{"neither", []Write{put("t", "a"), {Table: "t"}}, true, 1, ErrInvalidWrite},
		{"both", []Write{{Table: "t", Put: item{"pk": s("a")}, Delete: item{"pk": s("a")}}}, true, 0, ErrInvalidWrite},
		{"too large", []Write{{Table: "t", Put: item{"pk": s("a"), "v": s(big)}}}, true, 0, ddbsize.ErrItemTooLarge},
		{"too large unkeyed", []Write{{Table: "t", Put: item{"pk": s("a"), "v": s(big)}}}, false, 0, ddbsize.ErrItemTooLarge},
		{"bad value", []Write{{Table: "t", Put: item{"pk": s("a"), "v": n("x")}}}, true, 0, ddbsize.ErrInvalidNumber},
		{"missing key", []Write{{Table: "t", Put: item{"v": s("a")}}}, true, 0, ddbsize.ErrInvalidKey},
		{"empty key", []Write{{Table: "t", Put: item{"pk": s("")}}}, true, 0, ddbsize.ErrInvalidKey},
		{"empty key unkeyed delete", []Write{{Table: "t", Delete: item{"pk": s("")}}}, false, 0, ddbsize.ErrInvalidKey},
		{"long key", []Write{{Table: "t", Put: item{"pk": s(strings.Repeat("k", ddbsize.MaxPartitionKeyBytes+1))}}}, true, 0, ddbsize.ErrInvalidKey},
		{"delete extra attribute", []Write{{Table: "t", Delete: item{"pk": s("a"), "v": s("b")}}}, true, 0, ErrInvalidWrite},
		{"delete 3 attributes unkeyed", []Write{{Table: "t", Delete: item{"a": s("a"), "b": s("b"), "c": s("c")}}}, false, 0, ErrInvalidWrite},
		{"duplicate put", []Write{put("t", "a"), put("t", "b"), put("t", "a")}, true, 2, ErrDuplicateKey},
		{"duplicate put and delete", []Write{put("t", "a"), {Table: "t", Delete: item{"pk": s("a")}}}, true, 1, ErrDuplicateKey},
		{"duplicate number key", []Write{{Table: "t", Put: item{"pk": n("1")}}, {Table: "t", Put: item{"pk": n("1.00")}}}, true, 1, ErrDuplicateKey},
		{"duplicate identical unkeyed", []Write{put("t", "a"), put("t", "a")}, false, 1, ErrDuplicateKey},
		{"duplicate delete unkeyed", []Write{{Table: "t", Delete: item{"pk": s("a")}}, {Table: "t", Delete: item{"pk": s("a")}}}, false, 1, ErrDuplicateKey},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc := newScript(nil)
			var opts Options
			if tc.keyed {
				opts = testOpts(keyAttrs("t"))
			} else {
				opts = testOpts()
			}
			_, err := writeAll(context.Background(), sc.send, tc.writes, opts)
			var ie *InputError
			if !errors.Is(err, tc.want) || !errors.As(err, &ie) || ie.Index != tc.index {
				t.Fatalf("got %v, want *InputError at %d wrapping %v", err, tc.index, tc.want)
			}
			if sc.calls() != 0 {
				t.Errorf("sent %d requests for invalid input, want none", sc.calls())
			}
		})
	}
	// Same key in different tables, and a same-key pair without
	// KeyAttributes that differs elsewhere, are not duplicates to the engine.
	for _, ws := range [][]Write{
		{put("t", "a"), put("u", "a")},
		{put("t", "a"), {Table: "t", Put: item{"pk": s("a"), "v": s("other")}}},
	} {
		if _, err := writeAll(context.Background(), newScript(nil).send, ws, testOpts()); err != nil {
			t.Errorf("writeAll(%v): got %v, want nil", ws, err)
		}
	}
}

func TestGetValidation(t *testing.T) {
	for _, tc := range []struct {
		name  string
		keys  []Key
		index int
		want  error
	}{
		{"no table", []Key{{Key: item{"pk": s("a")}}}, 0, ErrInvalidWrite},
		{"empty key", []Key{{Table: "t", Key: item{"pk": s("a")}}, {Table: "t", Key: item{"pk": s("")}}}, 1, ddbsize.ErrInvalidKey},
		{"not a key", []Key{{Table: "t", Key: item{}}}, 0, ErrInvalidWrite},
		{"wrong attributes", []Key{{Table: "k", Key: item{"x": s("a")}}}, 0, ddbsize.ErrInvalidKey},
		{"duplicate", []Key{{Table: "t", Key: item{"pk": n("10")}}, {Table: "t", Key: item{"pk": n("1E1")}}}, 1, ErrDuplicateKey},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc := newScript(nil)
			_, _, err := get(context.Background(), sc.send, tc.keys, testOpts(keyAttrs("k")))
			var ie *InputError
			if !errors.Is(err, tc.want) || !errors.As(err, &ie) || ie.Index != tc.index {
				t.Fatalf("got %v, want *InputError at %d wrapping %v", err, tc.index, tc.want)
			}
			if sc.calls() != 0 {
				t.Errorf("sent %d requests for invalid input, want none", sc.calls())
			}
		})
	}
}

// TestWriteSeqOrdersSameKey: writes to one key are applied one after the
// other in sequence order, never in one request, never concurrently.
func TestWriteSeqOrdersSameKey(t *testing.T) {
	var ws []Write
	for i := range 200 {
		ws = append(ws, Write{Table: "t", Put: item{"pk": s(fmt.Sprint("k", i%7)), "i": n(fmt.Sprint(i))}})
	}
	type span struct{ start, end int64 }
	var (
		mu    sync.Mutex
		clock int64
		spans = map[int]span{} // by seq
	)
	tick := func() int64 { mu.Lock(); defer mu.Unlock(); clock++; return clock }
	sc := newScript(func(call int, b []*job) outcome {
		start := tick()
		time.Sleep(time.Millisecond)
		var left []*job
		if call%3 == 0 {
			left = b[:len(b)/2]
		}
		end := tick()
		mu.Lock()
		for _, j := range b {
			if !slices.Contains(left, j) {
				spans[j.seq] = span{start, end}
			}
		}
		mu.Unlock()
		return outcome{left: left}
	})
	_, err := writeSeq(context.Background(), sc.send, slices.Values(ws), testOpts(keyAttrs("t"), noWait, func(o *Options) { o.MaxConcurrency = 4 }))
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range sc.batches {
		seen := map[string]bool{}
		for _, j := range b {
			if seen[j.fp] {
				t.Fatalf("one request holds key %s twice", j.describe())
			}
			seen[j.fp] = true
		}
	}
	for i := 0; i+7 < len(ws); i++ {
		if k := i + 7; spans[i].end > spans[k].start {
			t.Fatalf("write %d (applied in %v) overlaps later write %d of the same key (%v)", i, spans[i], k, spans[k])
		}
	}
	checkExactlyOnce(t, sc, len(ws))
}

// TestWriteSeqBoundedMemory: the engine never holds more than about
// MaxConcurrency+1 requests' worth of pulled, unfinished writes.
func TestWriteSeqBoundedMemory(t *testing.T) {
	const total, conc = 20000, 4
	var mu sync.Mutex
	pulled, done, peak := 0, 0, 0
	seq := func(yield func(Write) bool) {
		for i := range total {
			mu.Lock()
			pulled++
			peak = max(peak, pulled-done)
			mu.Unlock()
			if !yield(put("t", fmt.Sprint(i))) {
				return
			}
		}
	}
	sc := newScript(func(call int, b []*job) outcome {
		var left []*job
		if call%2 == 0 {
			left = b[:len(b)/3]
		}
		mu.Lock()
		done += len(b) - len(left)
		mu.Unlock()
		return outcome{left: left}
	})
	st, err := writeSeq(context.Background(), sc.send, seq, testOpts(keyAttrs("t"), noWait, func(o *Options) { o.MaxConcurrency = conc }))
	if err != nil {
		t.Fatal(err)
	}
	if st.Done != total {
		t.Errorf("Done: got %d, want %d", st.Done, total)
	}
	// Requests in flight or backing off, their leftovers in the queue, one
	// request being filled, and one entry waiting that did not fit.
	if bound := (conc+1)*MaxWritesPerRequest + 1; peak > bound {
		t.Errorf("peak writes in memory: got %d, want at most %d", peak, bound)
	}
}

func TestWriteSeqInvalidStops(t *testing.T) {
	ws := puts([]string{"t"}, 100)
	ws[60] = Write{Table: "t"} // neither Put nor Delete
	pulled := 0
	seq := func(yield func(Write) bool) {
		for _, w := range ws {
			pulled++
			if !yield(w) {
				return
			}
		}
	}
	sc := newScript(nil)
	st, err := writeSeq(context.Background(), sc.send, seq, testOpts(keyAttrs("t"), func(o *Options) { o.MaxConcurrency = 1 }))
	var ue *UnprocessedError
	var ie *InputError
	if !errors.As(err, &ue) || !errors.As(err, &ie) || ie.Index != 60 || !errors.Is(err, ErrInvalidWrite) {
		t.Fatalf("got %v, want *UnprocessedError wrapping *InputError at 60", err)
	}
	if pulled != 61 {
		t.Errorf("pulled %d writes, want 61 (none after the invalid one)", pulled)
	}
	if st.Done+len(ue.Writes) != pulled {
		t.Errorf("Done %d + not done %d != pulled %d", st.Done, len(ue.Writes), pulled)
	}
	if last := ue.Writes[len(ue.Writes)-1]; last.Table != "t" || last.Put != nil || last.Delete != nil {
		t.Errorf("last unprocessed write: got %+v, want the invalid one", last)
	}
}

// TestCancelDuringBackoffUnit: cancelling while every request backs off
// ends the call at once with nothing left running.
func TestCancelDuringBackoffUnit(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sc := newScript(func(call int, b []*job) outcome { return outcome{left: b[1:]} })
	var once sync.Once
	_, err := writeAll(ctx, sc.send, puts([]string{"t"}, 100), testOpts(keyAttrs("t"), func(o *Options) {
		o.MaxConcurrency = 3
		o.BaseDelay, o.MaxDelay = time.Hour, time.Hour
		o.jitter = func(d time.Duration) time.Duration { return d }
		o.OnProgress = func(st Stats) {
			if st.UnprocessedRounds == 3 {
				once.Do(func() { time.AfterFunc(50*time.Millisecond, cancel) })
			}
		}
	}))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
	calls := sc.calls()
	time.Sleep(20 * time.Millisecond)
	if sc.calls() != calls {
		t.Errorf("requests after return: %d, want none", sc.calls()-calls)
	}
}

func TestBackoffCap(t *testing.T) {
	for stalls := range 70 {
		got := backoff(25*time.Millisecond, 2*time.Second, stalls)
		want := 25 * time.Millisecond
		for range stalls {
			if want < 2*time.Second {
				want *= 2
			}
		}
		want = min(want, 2*time.Second)
		if got != want {
			t.Errorf("backoff(stalls=%d): got %v, want %v", stalls, got, want)
		}
	}
}

var _ iter.Seq[Write] = slices.Values([]Write(nil))

// TestWriteSeqPacedBoundedMemory: with one key throttled so that its
// writes wait for its pace, WriteSeq still holds at most MaxWaiting waiting
// writes besides the requests in flight and their leftovers, and the
// other keys go on being written.
func TestWriteSeqPacedBoundedMemory(t *testing.T) {
	const total, conc, maxWaiting = 3000, 4, 60
	var mu sync.Mutex
	pulled, done, peak := 0, 0, 0
	seq := func(yield func(Write) bool) {
		for i := range total {
			mu.Lock()
			pulled++
			peak = max(peak, pulled-done)
			mu.Unlock()
			pk := "hot"
			if i%3 != 0 {
				pk = fmt.Sprint("cold", i)
			}
			if !yield(Write{Table: "t", Put: item{"pk": s(pk), "sk": n(fmt.Sprint(i))}}) {
				return
			}
		}
	}
	// The hot key is admitted one write per request: the rest of its
	// writes in a request come back.
	sc := newScript(func(call int, b []*job) outcome {
		time.Sleep(2 * time.Millisecond) // long enough a run for the key's rate to be measured
		var left []*job
		hot := 0
		for _, j := range b {
			if j.write.Put["pk"].(*types.AttributeValueMemberS).Value == "hot" {
				if hot++; hot > 1 {
					left = append(left, j)
				}
			}
		}
		mu.Lock()
		done += len(b) - len(left)
		mu.Unlock()
		return outcome{left: left}
	})
	st, err := writeSeq(context.Background(), sc.send, seq, testOpts(noWait, func(o *Options) {
		o.KeyAttributes = map[string][]string{"t": {"pk", "sk"}}
		o.MaxConcurrency = conc
		o.MaxWaiting = maxWaiting
		o.StallTimeout = time.Minute
	}))
	if err != nil {
		t.Fatal(err)
	}
	if st.Done != total || st.Paced == 0 {
		t.Errorf("stats %+v: want %d done and writes paced", st, total)
	}
	checkExactlyOnce(t, sc, total)
	// Waiting writes, requests in flight, their leftovers, one request
	// being filled, one write that did not fit.
	t.Logf("peak %d, stats %+v", peak, st)
	if bound := maxWaiting + (2*conc+1)*MaxWritesPerRequest + 1; peak > bound {
		t.Errorf("peak writes in memory: got %d, want at most %d", peak, bound)
	}
}
