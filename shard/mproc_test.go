package shard_test

import (
	"context"
	"errors"
	"flag"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dynashard/dynashard/internal/ddbtest"
	"github.com/dynashard/dynashard/internal/localddb"
	"github.com/dynashard/dynashard/scatter"
	"github.com/dynashard/dynashard/shard"
)

// The resharding checker across processes: lin_test.go's checker, with
// its workers, resharders, Rebalances and readers in several OS processes
// (this test binary run again, mproc_child_test.go), each with its own
// client, fault proxy and settings (HistoryTTL differing, ExactlyOnce or
// not, a Grower in one, a Load whose batches the proxy holds beyond the
// fence), paused (SIGSTOP, then SIGCONT after up to 8 s) and killed
// (SIGKILL) at random points, including in the middle of a Rebalance. The
// parent starts the server and a relay in front of it (mproc_check_test.go)
// that logs when the server answered each request of each call, so that a
// call cut off, failed or killed is an unknown outcome until the server
// answered its last request: never a false alarm, never ignored. Wall
// clocks of one machine are comparable across processes.
//
// At the end, after every child is gone and the relay idle, the parent
// reads every id (consistent Get) and every base (scatter, ordered and
// unordered), scans the table for copies no history covers and ids stored
// twice, merges the children's histories and checks each item's history
// for linearizability. Children never assert on time.
var (
	mprocDuration = flag.Duration("shard.mproc", 0, "run the multi-process checker's children this long (0: the short mode, 30 s)")
	mprocScenario = flag.String("shard.mproc.scenario", "mixed", "the multi-process checker's scenario: "+strings.Join(mprocScenarioNames(), ", "))
)

// mprocSlot is one child kept running: a kill starts another instance.
type mprocSlot struct {
	name  string
	cfg   mprocChild // the template: role, settings, proxy
	chaos bool       // paused and killed at random
	// At each progress of a Rebalance: the chance of a pause (2–8 s) and
	// of a kill there.
	midPause, midKill float64
}

type mprocScene struct {
	bases   []string
	ids     int
	seed    bool // put every id before the children start
	chaos   bool // random pauses and kills of the chaos slots
	noPause bool // kills only
	slots   []mprocSlot
	summary string
}

func mprocScenarioNames() []string { return []string{"mixed", "rebalance", "ttl", "reader", "control"} }

func mprocScenes(name string) (mprocScene, bool) {
	faults := mprocFaults{Latency: time.Millisecond, Jitter: 20 * time.Millisecond, ResetBeforeRate: 0.01, ResetAfterRate: 0.01, ThrottleRate: 0.02}
	ms := time.Millisecond
	worker := func(ttl time.Duration) mprocChild { return mprocChild{Role: mprocWorker, TTL: ttl, Proxy: faults} }
	role := func(r string, ttl time.Duration) mprocChild { return mprocChild{Role: r, TTL: ttl, Proxy: faults} }
	slowMoves := func(c mprocChild, d time.Duration) mprocChild {
		c.Proxy = mprocFaults{Latency: d, Jitter: d / 2, Ops: []string{"TransactWriteItems"}}
		return c
	}
	// A process whose Gets are all eventually consistent keeps its view
	// for its HistoryTTL (a consistent Get reads the record afresh).
	eventual := func(c mprocChild) mprocChild { c.Eventual = true; return c }
	reader := func(ttl time.Duration) mprocChild { return eventual(role(mprocReader, ttl)) }
	switch name {
	case "mixed":
		w2 := eventual(worker(2 * time.Second))
		w2.ExactlyOnce, w2.Grower = true, true
		w2.Proxy.ThrottleRate, w2.Proxy.Ops = 0.15, []string{"PutItem", "UpdateItem", "DeleteItem", "TransactWriteItems", "BatchWriteItem"}
		ld := worker(100 * ms)
		ld.Kinds = []linKind{linLoad, linLoad, linGet}
		ld.Proxy = mprocFaults{Latency: 500 * ms, Jitter: 1500 * ms, Ops: []string{"BatchWriteItem"}} // beyond its 1.1 s fence at times
		return mprocScene{bases: []string{"b1", "b2"}, ids: 12, seed: true, chaos: true, slots: []mprocSlot{
			{name: "w1", cfg: worker(100 * ms), chaos: true},
			{name: "w2", cfg: w2, chaos: true},
			{name: "ld", cfg: ld, chaos: true},
			{name: "rs", cfg: role(mprocResharder, 100*ms), chaos: true, midPause: 0.2, midKill: 0.05},
			{name: "rb", cfg: slowMoves(role(mprocRebalancer, time.Second), 40*ms), chaos: true, midPause: 0.3, midKill: 0.1},
			{name: "rd", cfg: reader(5 * time.Second), chaos: true},
		}, summary: "workers at HistoryTTL 100 ms (plain) and 2 s (ExactlyOnce, Grower, eventually consistent Gets), a loader whose batches wait 0.5–2 s (fence 1.1 s), a resharder at 100 ms, a rebalancer at 1 s with 40 ms moves, a reader of eventually consistent Gets at 5 s; random pauses and kills, pauses and kills mid-Rebalance"}, true
	case "control": // what the protocol of fee1688 holds: one HistoryTTL, kills, no pauses
		ld := worker(100 * ms)
		ld.Kinds = []linKind{linLoad, linGet}
		return mprocScene{bases: []string{"b1", "b2"}, ids: 12, seed: true, chaos: true, slots: []mprocSlot{
			{name: "w1", cfg: worker(100 * ms), chaos: true},
			{name: "w2", cfg: worker(100 * ms), chaos: true},
			{name: "ld", cfg: ld, chaos: true},
			{name: "rs", cfg: role(mprocResharder, 100*ms), chaos: true, midKill: 0.1},
		}, noPause: true, summary: "every process at HistoryTTL 100 ms, random kills and kills mid-Rebalance, no pauses: the checker's own control"}, true
	case "rebalance": // class 1
		reads := worker(100 * ms)
		reads.Kinds = []linKind{linGet, linGet, linGet, linPut}
		return mprocScene{bases: []string{"b1"}, ids: 40, seed: true, slots: []mprocSlot{
			{name: "rbA", cfg: slowMoves(role(mprocRebalancer, 100*ms), 80*ms), midPause: 0.5},
			{name: "rs", cfg: role(mprocResharder, 100*ms)},
			{name: "w", cfg: reads},
		}, summary: "a Rebalance with 80 ms moves paused 2–8 s mid-sweep while a resharder reshards and rebalances, all at HistoryTTL 100 ms"}, true
	case "ttl": // class 2
		return mprocScene{bases: []string{"b1"}, ids: 4, slots: []mprocSlot{
			{name: "wA", cfg: eventual(worker(5 * time.Second))},
			{name: "wB", cfg: worker(100 * ms)},
			{name: "rs", cfg: role(mprocResharder, 100*ms)},
		}, summary: "a writer at HistoryTTL 5 s (50× the resharder's) with eventually consistent Gets, another at 100 ms, a resharder at 100 ms; no pauses"}, true
	case "reader": // class 3
		return mprocScene{bases: []string{"b1"}, ids: 20, seed: true, slots: []mprocSlot{
			{name: "rd", cfg: reader(10 * time.Second)},
			{name: "rs", cfg: role(mprocResharder, 100*ms)},
		}, summary: "a reader of eventually consistent Gets at HistoryTTL 10 s, a resharder at 100 ms; no writer after the seed, no pauses"}, true
	}
	return mprocScene{}, false
}

func TestMultiProcess(t *testing.T) {
	if env := os.Getenv(mprocEnv); env != "" {
		mprocChildMain(t, env)
		return
	}
	d := *mprocDuration
	if d == 0 {
		d = 30 * time.Second
	}
	scene, ok := mprocScenes(*mprocScenario)
	if !ok {
		t.Fatalf("-shard.mproc.scenario=%q: want one of %v", *mprocScenario, mprocScenarioNames())
	}
	s := ddbtest.Get(t, localddb.DynamoDBLocal) // transactions: dynalite has none
	name := s.Table(t, "pk:S", "sk:S")
	relay := newMprocRelay(s.Endpoint)
	defer relay.Close()
	dir, err := os.MkdirTemp("", "mproc")
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	h := &mprocHistory{start: start.UnixNano(), ops: map[string][]linOp{}}
	l := shard.Layout{Table: name, PartitionKey: "pk", SortKey: "sk", Strategy: shard.Hash(2), HistoryTTL: -1}
	tbl, err := shard.NewTable[Order](s.Client(), l)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if scene.seed {
		for _, base := range scene.bases {
			for i := range scene.ids {
				op := linOp{kind: linPut, arg: len(h.ops) + 1, call: time.Since(start).Nanoseconds(), by: "seed"}
				// Again until acknowledged (a cold server may answer after
				// the fence): the same value, and nothing else runs yet.
				for try := 0; ; try++ {
					err := tbl.Put(ctx, base, Order{ID: "i" + strconv.Itoa(i), Amount: op.arg})
					if err == nil {
						break
					}
					if try == 20 {
						t.Fatal(err)
					}
				}
				op.ret = time.Since(start).Nanoseconds()
				h.ops[base+"/i"+strconv.Itoa(i)] = []linOp{op}
			}
		}
	}
	r := &mprocRunner{t: t, scene: scene, dir: dir, relay: relay.URL(), table: name,
		until: time.Now().Add(d), rng: rand.New(rand.NewPCG(uint64(start.UnixNano()), 1)), start: start}
	t.Logf("scenario %s: %s; children for %v, histories in %s", *mprocScenario, scene.summary, d, dir)
	r.run()
	relay.wait()

	// Quiescence: every id by a consistent Get, every base by scatter.
	found := map[string]bool{}
	for _, base := range scene.bases {
		for i := range scene.ids {
			key := base + "/i" + strconv.Itoa(i)
			op := linOp{kind: linGet, call: time.Since(start).Nanoseconds(), by: "final"}
			var o Order
			for try := 0; ; try++ { // a read that fails says nothing: again (the server may be slow)
				o, err = tbl.Get(ctx, base, "i"+strconv.Itoa(i), func(o *shard.Options) { o.ConsistentRead = true })
				if err == nil || errors.Is(err, shard.ErrNotFound) {
					break
				}
				if try == 20 {
					t.Fatalf("final Get %s: %v", key, err)
				}
				op.call = time.Since(start).Nanoseconds()
			}
			op.ret = time.Since(start).Nanoseconds()
			op.found, op.got, found[key] = err == nil, o.Amount, err == nil
			h.ops[key] = append(h.ops[key], op)
		}
	}
	sc, err := scatter.New(s.Client(), l)
	if err != nil {
		t.Fatal(err)
	}
	for _, base := range scene.bases {
		for _, unordered := range []bool{false, true} {
			seen := map[string]bool{}
			for item, err := range sc.All(ctx, base, func(o *scatter.Options) { o.Unordered = unordered }) {
				var o Order
				if err == nil {
					err = item.Unmarshal(&o)
				}
				if err != nil {
					t.Fatal(err)
				}
				if seen[o.ID] {
					t.Errorf("final scatter (unordered=%v) of %s returned %s twice", unordered, base, o.ID)
				}
				seen[o.ID] = true
			}
			for i := range scene.ids {
				if key := base + "/i" + strconv.Itoa(i); found[key] != seen["i"+strconv.Itoa(i)] {
					t.Errorf("%s: the final Get found it: %v, the final scatter (unordered=%v): %v", key, found[key], unordered, seen["i"+strconv.Itoa(i)])
				}
			}
		}
	}
	hist := map[string][]int{}
	for _, base := range scene.bases {
		if hist[base], err = tbl.Shards(ctx, base); err != nil {
			t.Errorf("final Shards %s: %v", base, err)
		}
	}
	orphans, doubles, err := mprocScan(ctx, s.Client(), name, hist)
	if err != nil {
		t.Fatal(err)
	}
	r.check(h, orphans, doubles, relay)
	if !t.Failed() {
		os.RemoveAll(dir)
	}
}

// check merges the children's histories with the parent's and reports.
func (r *mprocRunner) check(h *mprocHistory, orphans, doubles []string, relay *mprocRelay) {
	t := r.t
	kills, pauses := 0, 0
	for _, a := range r.actions {
		kills += strings.Count(a, "kill ")
		pauses += strings.Count(a, "pause ")
	}
	for _, p := range r.procs {
		if err := h.add(p.out, p.name, p.end, relay); err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s's history: %v", p.name, err)
		}
		if p.err != nil && !p.killed {
			tail, _ := os.ReadFile(filepath.Join(r.dir, p.name+".stderr"))
			t.Errorf("child %s failed: %v\n%s", p.name, p.err, tail[max(0, len(tail)-2000):])
		}
	}
	bad, total := h.check()
	// Kept with the histories for a failed run's diagnosis.
	_ = os.WriteFile(filepath.Join(r.dir, "late.txt"), []byte(strings.Join(relay.late, "\n")), 0o644)
	t.Logf("%d children (%d killed, %d pauses), %d operations on %d items, %d unknown outcomes, %d writes answered by the server after their call returned, %d requests reached the server after their deadline",
		len(r.procs), kills, pauses, total, len(h.ops), h.open, h.late, len(relay.late))
	if testing.Verbose() {
		t.Logf("chaos:\n  %s", strings.Join(r.actions, "\n  "))
		for _, n := range h.notes {
			if strings.Contains(n, "Reshard") || strings.Contains(n, "Rebalance") || strings.Contains(n, "Grower") {
				t.Log(n)
			}
		}
	}
	// A violation on an item a write of which reached the server after
	// its deadline is outside the guarantee (see mprocHistory.outside):
	// logged, not failed.
	inside := slices.DeleteFunc(slices.Clone(bad), func(v mprocViolation) bool { return v.late })
	if n := len(bad) - len(inside); n > 0 {
		t.Logf("%d items broken only where a write reached the server after its deadline (outside the guarantee): %v", n, lateKeys(bad))
	}
	for i, v := range inside {
		what := "history not linearizable"
		if v.final {
			what = "an acknowledged write no final read finds"
		}
		if i < 5 {
			t.Errorf("%s: %s; first broken at %v by the end of this prefix (a write of the item reached the server late after the prefix: %v):\n%s", v.key, what, v.at, h.outside[v.key], v.tail)
		}
	}
	if len(inside) > 0 {
		t.Errorf("%d of %d items not linearizable; the first broke %v into the run", len(inside), len(h.ops), inside[0].at)
	}
	orphans, lateOrphans := h.split(orphans)
	doubles, lateDoubles := h.split(doubles)
	if len(lateOrphans)+len(lateDoubles) > 0 {
		t.Logf("outside the guarantee (a write reached the server after its deadline): copies at keys no history covers %v, ids stored twice %v", lateOrphans, lateDoubles)
	}
	if len(orphans) > 0 {
		t.Errorf("%d copies at keys no history covers: %v", len(orphans), orphans)
	}
	if len(doubles) > 0 {
		t.Errorf("%d ids stored twice: %v", len(doubles), doubles)
	}
	if len(h.dups) > 0 {
		t.Errorf("scatter reads returned %d items twice: %v", len(h.dups), h.dups[:min(len(h.dups), 10)])
	}
}

func lateKeys(bad []mprocViolation) []string {
	var keys []string
	for _, v := range bad {
		if v.late {
			keys = append(keys, v.key)
		}
	}
	return keys
}
