package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"iter"
	"math"
	"math/rand/v2"
	"net/http"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/pprof/profile"

	"github.com/dynashard/dynashard/chunk"
	"github.com/dynashard/dynashard/scatter"
	"github.com/dynashard/dynashard/shard"
)

// costLabel labels the goroutines of each measured window of scenario 10
// (and those they start) with "operation/method", so that one CPU
// profile over every window tells the windows apart.
const costLabel = "dynashard-bench-cost"

// costShards is the N of scenario 10's layout: every call spreads over
// 16 physical keys, as the README's hot day does.
const costShards = 16

// costTargets are the operations the issue holds to 1.1× the plain
// code's CPU.
var costTargets = []string{"Put", "Get", "Update", "Delete", "Load", "chunk read"}

// costCallsPerWindow is how many calls of a point operation one window
// measures: about 10 ms of CPU here. The methods take turns window by
// window, so that a busy moment of the machine falls on both alike.
const costCallsPerWindow = 25

// costRepeats is how many times a round does the work of Load, the
// scatter read and the chunks by each method, a window each, the methods
// taking turns.
const costRepeats = 3

// costMethod is one way of doing an operation's work: the plain SDK code
// or the library.
type costMethod struct {
	name string
	// run does one window's work in round r: part of the round's work,
	// 0 ≤ part < the operation's parts.
	run func(ctx context.Context, r, part int) error
	// reset, if set, runs after each window, unmeasured, to undo what the
	// window wrote.
	reset func(ctx context.Context) error
}

// costOp is an operation measured per unit (a call, an item, a MiB), its
// plain method first.
type costOp struct {
	name, unit string
	units      float64 // per method and round
	parts      int     // windows per method and round
	methods    []costMethod
}

// costTally sums a method's windows.
type costTally struct {
	cpu              time.Duration
	mallocs, alloced uint64
	requests         map[string]int
	rounds           []time.Duration // CPU of each round's windows
}

// reqCounter is an HTTP client that counts the requests it sends by
// DynamoDB operation (X-Amz-Target), every attempt included. Both methods
// of an operation go through it.
type reqCounter struct {
	next interface {
		Do(*http.Request) (*http.Response, error)
	}
	mu  sync.Mutex
	ops map[string]int
}

func (c *reqCounter) Do(r *http.Request) (*http.Response, error) {
	op := r.Header.Get("X-Amz-Target")
	if i := strings.LastIndexByte(op, '.'); i >= 0 {
		op = op[i+1:]
	}
	c.mu.Lock()
	c.ops[op]++
	c.mu.Unlock()
	return c.next.Do(r)
}

// take returns the counts since the last take and starts over.
func (c *reqCounter) take() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := c.ops
	c.ops = map[string]int{}
	return m
}

// processCPU is the user and system CPU time of this process so far,
// read into ru (kept by the caller, so that reading allocates nothing).
func processCPU(ru *syscall.Rusage) time.Duration {
	if syscall.Getrusage(syscall.RUSAGE_SELF, ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// clientCost is scenario 10: the CPU this process spends per call of the
// library beside the plain SDK code that does the same DynamoDB work,
// against the server directly (no proxy: the process's CPU is the
// client's alone). The methods of each operation take turns in rounds, in
// an order shuffled each round; a CPU profile over every window, labelled
// by operation and method, shows where each method's CPU goes.
func (b *bencher) clientCost(ctx context.Context) (*section, error) {
	endpoint, err := b.server(ctx)
	if err != nil {
		return nil, err
	}
	counter := &reqCounter{ops: map[string]int{}}
	cl := b.client(endpoint, 16, func(o *dynamodb.Options) {
		counter.next = o.HTTPClient
		o.HTTPClient = counter
	})
	var tables []string
	for _, keys := range [][]string{{"pk:S", "sk:S"}, {"pk:S"}, {chunk.DefaultChunkKeyAttribute + ":S"}} {
		name, drop, err := b.newTable(ctx, cl, keys...)
		if err != nil {
			return nil, err
		}
		defer drop()
		tables = append(tables, name)
	}
	ops, err := b.costOps(ctx, cl, tables[0], tables[1], tables[2])
	if err != nil {
		return nil, err
	}
	sec := &section{title: "The client's own cost"}
	sec.intro = append(sec.intro, costIntro(b.cfg)...)

	// An untimed round warms the server's JIT, the connections (their
	// goroutines start unlabelled), the layout record's cache and the heap.
	b.prog.status("warming up")
	for _, op := range ops {
		for part := range op.parts {
			for _, m := range op.methods {
				if err := m.run(ctx, -1, part); err != nil {
					return sec, fmt.Errorf("warm-up: %s, %s: %w", op.name, m.name, err)
				}
				if m.reset != nil {
					if err := m.reset(ctx); err != nil {
						return sec, fmt.Errorf("warm-up: %s, %s: %w", op.name, m.name, err)
					}
				}
			}
		}
	}
	res, err := b.costRounds(ctx, ops, counter)
	if err != nil {
		return sec, err
	}
	ratios := costTable(sec, ops, res.tallies)
	if res.shares != nil {
		costProfileTable(sec, ops, res.shares, b.cfg.costRounds)
	}
	sec.notes = append(sec.notes, costVerdict(ratios), costMethodNote(b.cfg.costRounds, res.use))
	return sec, nil
}

// costResult is what scenario 10's rounds measured: a tally per
// operation and method, the profile's shares by window label (nil if no
// profile could be taken), and the machine's CPU over the rounds.
type costResult struct {
	tallies [][]costTally
	shares  map[string]*costShare
	use     cpuUse
}

// costRounds runs the rounds: each method of each operation once a
// round, under one CPU profile (with -cpuprofile, it joins that file's
// other pieces).
func (b *bencher) costRounds(ctx context.Context, ops []costOp, counter *reqCounter) (costResult, error) {
	res := costResult{tallies: make([][]costTally, len(ops))}
	for i, op := range ops {
		res.tallies[i] = make([]costTally, len(op.methods))
		for j := range op.methods {
			res.tallies[i][j] = costTally{requests: map[string]int{}, rounds: make([]time.Duration, b.cfg.costRounds)}
		}
	}
	b.cpu.pause()
	var prof bytes.Buffer
	profiling := pprof.StartCPUProfile(&prof) == nil
	order := rand.New(rand.NewPCG(10, 11))
	runtime.GC()
	s0 := sampleCPU()
	err := func() error {
		for r := range b.cfg.costRounds {
			for i, op := range ops {
				b.prog.status(fmt.Sprintf("round %d of %d: %s", r+1, b.cfg.costRounds, op.name))
				for part := range op.parts {
					for _, j := range order.Perm(len(op.methods)) {
						if err := costWindow(ctx, op, j, r, part, counter, &res.tallies[i][j]); err != nil {
							return fmt.Errorf("round %d: %s, %s: %w", r+1, op.name, op.methods[j].name, err)
						}
					}
				}
			}
		}
		return nil
	}()
	res.use = cpuBetween(s0, sampleCPU())
	if profiling {
		pprof.StopCPUProfile()
		if p, perr := profile.Parse(bytes.NewReader(prof.Bytes())); perr == nil {
			res.shares = attributeProfile(p)
			if b.cpu.path != "" {
				b.cpu.pieces = append(b.cpu.pieces, p)
			}
		}
	}
	if rerr := b.cpu.resume(); rerr != nil {
		b.cpu.err = errors.Join(b.cpu.err, rerr)
	}
	return res, err
}

// costWindow measures part of method j of op's work in round r, into tl:
// the process's CPU time, the allocations and the requests sent. Nothing
// in the window but the method's work allocates.
func costWindow(ctx context.Context, op costOp, j, r, part int, counter *reqCounter, tl *costTally) error {
	m := op.methods[j]
	counter.take()
	var m0, m1 runtime.MemStats
	var ru syscall.Rusage
	var err error
	runtime.ReadMemStats(&m0)
	c0 := processCPU(&ru)
	pprof.Do(ctx, pprof.Labels(costLabel, op.name+"/"+m.name), func(ctx context.Context) {
		err = m.run(ctx, r, part)
	})
	c1 := processCPU(&ru)
	runtime.ReadMemStats(&m1)
	reqs := counter.take()
	if err == nil && m.reset != nil {
		err = m.reset(ctx)
	}
	if err != nil {
		return err
	}
	tl.cpu += c1 - c0
	tl.rounds[r] += c1 - c0
	tl.mallocs += m1.Mallocs - m0.Mallocs
	tl.alloced += m1.TotalAlloc - m0.TotalAlloc
	for k, v := range reqs {
		tl.requests[k] += v
	}
	return nil
}

// costTable adds the section's main table and returns each operation's
// ratio of its first library method to the plain code.
func costTable(sec *section, ops []costOp, tallies [][]costTally) map[string]float64 {
	t := sec.table("operation", "method", "requests per unit", "CPU µs per unit", "allocs per unit", "bytes per unit",
		"÷ plain", "÷ plain per round: median (range)")
	ratios := map[string]float64{}
	for i, op := range ops {
		base := tallies[i][0]
		for j, m := range op.methods {
			tl := tallies[i][j]
			n := op.units * float64(len(tl.rounds))
			ratio, spread := "1 (baseline)", "–"
			if j > 0 {
				q := float64(tl.cpu) / float64(base.cpu)
				ratio, spread = fmt.Sprintf("%.2f×", q), roundRatios(tl.rounds, base.rounds)
				if j == 1 {
					ratios[op.name] = q
				}
			}
			t.row(op.name+", per "+op.unit, m.name, requestsPer(tl.requests, n), fmt.Sprintf("%.1f", float64(tl.cpu)/float64(time.Microsecond)/n),
				fmt.Sprintf("%.1f", float64(tl.mallocs)/n), fmt.Sprintf("%.0f", float64(tl.alloced)/n), ratio, spread)
		}
	}
	return ratios
}

// costIntro describes scenario 10's work and methods, a paragraph each.
func costIntro(c benchConfig) []string {
	return []string{
		fmt.Sprintf("The CPU this process spends per unit of work, the library beside the plain aws-sdk-go-v2 code doing the same "+
			"DynamoDB requests, in one run. The bench talks to the server directly, without the proxy. The server runs in a "+
			"process of its own, so the process's CPU time (getrusage: user + system, every thread, the garbage collector's "+
			"included) is the client's alone. Items are scenario 1's: three string attributes, about 230 bytes. The layout is "+
			"shard.Hash(%d) over one base.", costShards),
		"The plain code computes each physical key with the same call hand-written sharding would make: " +
			"shard.Key(base, strategy.Pick(id)), inside the timed loop. It marshals with attributevalue.MarshalMap and " +
			"unmarshals with attributevalue.UnmarshalMap.",
		"*Put*: Table.Put against PutItem. *Get*: Table.Get against GetItem and UnmarshalMap; the layout record is cached " +
			"(HistoryTTL 10 s: one more GetItem every 10 s). *Get, consistent*: Table.Get with ConsistentRead against a " +
			"consistent GetItem. The library reads the layout record too, one more GetItem per call, as its doc says. " +
			"*Update*: Table.Update against UpdateItem (ReturnValues ALL_NEW, the result unmarshalled), the same " +
			"expression.Set built per call, by the expression package on both sides. *Delete*: Table.Delete against DeleteItem.",
		fmt.Sprintf("Each round, each method puts, reads, updates and deletes its own %d items. *Load*: Table.Load of "+
			"%d items against a loop of 25-item BatchWriteItem calls that sends unprocessed items again. *scatter read*: "+
			"scatter.All over a base of %d items in %d shards, each item unmarshalled, against a loop of paginated Queries "+
			"(1 MB pages), one shard after another, UnmarshalListOfMaps and a sort by sort key. scatter.All runs at its "+
			"default page size (a shard's first page 100 items, then larger) and with PageSize 1000. *chunk write* and "+
			"*chunk read*: chunk.Store's Put and Get of a %d MiB "+
			"payload of random bytes against scenario 6's plain loops (25-item BatchWriteItem, 100-key BatchGetItem).",
			c.costOps, 5*c.costOps, 5*c.costOps, costShards, c.costMiB),
	}
}

// costMethodNote says how the figures were taken.
func costMethodNote(rounds int, u cpuUse) string {
	s := fmt.Sprintf("%d rounds after an untimed one. A round does each operation's work once by each method. The calls "+
		"go in windows of %d, the methods taking turns window by window in an order shuffled each time, so that a busy "+
		"moment of a shared machine falls on each alike. Load, the scatter read and the chunks are done %d times a round, a "+
		"window each, taking turns the same way; chunk.Store's payload written in a window is deleted after it, unmeasured. "+
		"CPU per unit is the process's CPU time over all of a method's windows divided by its units. *÷ plain* divides "+
		"those totals; the per-round figures divide each round's. Allocations are runtime.MemStats deltas over the same "+
		"windows. Requests count every attempt sent. A CPU profile ran over every window (100 Hz), in both methods alike.",
		rounds, costCallsPerWindow, costRepeats)
	if u.machineKnown {
		s += fmt.Sprintf(" The machine was %s busy over the timed rounds, every process counted", pct(u.machine))
		if u.serverKnown {
			s += fmt.Sprintf("; the server used %.2f cores", u.server)
		}
		s += fmt.Sprintf(", this process %.2f.", u.client)
	}
	return s
}

// costVerdict holds each target operation against 1.1× the plain code.
func costVerdict(ratios map[string]float64) string {
	var met, missed []string
	for _, name := range costTargets {
		q, ok := ratios[name]
		if !ok {
			continue
		}
		cell := fmt.Sprintf("%s %.2f×", name, q)
		if math.Round(100*q) <= 110 { // as shown
			met = append(met, cell)
		} else {
			missed = append(missed, cell)
		}
	}
	s := "Against the target of at most 1.1× the plain code's CPU: "
	if len(met) > 0 {
		s += "within it, " + strings.Join(met, ", ")
	}
	if len(missed) > 0 {
		if len(met) > 0 {
			s += "; "
		}
		s += "over it, " + strings.Join(missed, ", ")
	}
	return s + "."
}

// requestsPer renders requests per unit by operation: "1 PutItem".
func requestsPer(reqs map[string]int, units float64) string {
	var names []string
	for k := range reqs {
		names = append(names, k)
	}
	slices.Sort(names)
	var parts []string
	for _, k := range names {
		v := float64(reqs[k]) / units
		parts = append(parts, strconv.FormatFloat(float64(int64(v*1e4+0.5))/1e4, 'f', -1, 64)+" "+k)
	}
	if len(parts) == 0 {
		return "0"
	}
	return strings.Join(parts, " + ")
}

// roundRatios renders the median and range of a/b round by round.
func roundRatios(a, b []time.Duration) string {
	var qs []float64
	for i := range min(len(a), len(b)) {
		if b[i] > 0 {
			qs = append(qs, float64(a[i])/float64(b[i]))
		}
	}
	if len(qs) == 0 {
		return "–"
	}
	slices.Sort(qs)
	med := qs[len(qs)/2]
	if len(qs)%2 == 0 {
		med = (qs[len(qs)/2-1] + qs[len(qs)/2]) / 2
	}
	return fmt.Sprintf("%.2f× (%.2f–%.2f)", med, qs[0], qs[len(qs)-1])
}

// costSetup is what scenario 10's operations share: the client, the
// table of items and its layout, and the ids each method works on.
type costSetup struct {
	b                *bencher
	cl               *dynamodb.Client
	table            string
	st               shard.Strategy
	layout           shard.Layout
	tbl              *shard.Table[benchItem]
	libIDs, plainIDs []string // a window's calls: one id each
}

// The bases scenario 10 writes: the calls', Load's and the scatter read's.
const costBase, costLoadBase, costScanBase = "cost", "load", "scan"

// costOps builds scenario 10's operations over the three tables, and
// writes what the reads read (the scatter base, the chunk payloads).
func (b *bencher) costOps(ctx context.Context, cl *dynamodb.Client, table, parents, chunkTable string) ([]costOp, error) {
	st := shard.Hash(costShards)
	layout := shard.Layout{Table: table, PartitionKey: "pk", SortKey: "sk", Strategy: st}
	tbl, err := shard.NewTable[benchItem](cl, layout)
	if err != nil {
		return nil, err
	}
	cs := &costSetup{b: b, cl: cl, table: table, st: st, layout: layout, tbl: tbl,
		libIDs: costIDs("lib", b.cfg.costOps), plainIDs: costIDs("plain", b.cfg.costOps)}
	ops := append(cs.callOps(), cs.loadOp())
	sc, err := cs.scatterOp(ctx)
	if err != nil {
		return nil, err
	}
	chunks, err := cs.chunkOps(ctx, parents, chunkTable)
	if err != nil {
		return nil, err
	}
	return append(append(ops, sc), chunks...), nil
}

// costIDs returns n ids: prefix-000000, prefix-000001 …
func costIDs(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%06d", prefix, i)
	}
	return out
}

// costParts is the windows a round of n calls takes.
func costParts(n int) int { return (n + costCallsPerWindow - 1) / costCallsPerWindow }

// each runs f on the ids of a window, one call after another: part of
// costParts(len(ids)).
func each(ids []string, f func(ctx context.Context, id string) error) func(context.Context, int, int) error {
	parts := costParts(len(ids))
	return func(ctx context.Context, _, part int) error {
		for _, id := range ids[part*len(ids)/parts : (part+1)*len(ids)/parts] {
			if err := f(ctx, id); err != nil {
				return fmt.Errorf("%s: %w", id, err)
			}
		}
		return nil
	}
}

// plainKey is the key hand-written sharding computes for id.
func (cs *costSetup) plainKey(id string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		"pk": &types.AttributeValueMemberS{Value: shard.Key(costBase, cs.st.Pick(id))},
		"sk": &types.AttributeValueMemberS{Value: id},
	}
}

// getPlain is the plain point read: GetItem and UnmarshalMap.
func (cs *costSetup) getPlain(consistent bool) func(context.Context, string) error {
	return func(ctx context.Context, id string) error {
		out, err := cs.cl.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(cs.table), Key: cs.plainKey(id), ConsistentRead: aws.Bool(consistent)})
		if err != nil {
			return err
		}
		if out.Item == nil {
			return errors.New("no item")
		}
		var v benchItem
		return attributevalue.UnmarshalMap(out.Item, &v)
	}
}

// callOps are the point operations, in the order a round needs them: what
// Get reads, Put wrote; Delete deletes it.
func (cs *costSetup) callOps() []costOp {
	n, parts := float64(len(cs.libIDs)), costParts(len(cs.libIDs))
	tbl := cs.tbl
	updPayload := strings.Repeat("y", len(benchPayload))
	consistent := func(o *shard.Options) { o.ConsistentRead = true }
	return []costOp{
		{"Put", "call", n, parts, []costMethod{
			{"PutItem", each(cs.plainIDs, func(ctx context.Context, id string) error {
				av, err := attributevalue.MarshalMap(benchItem{PK: shard.Key(costBase, cs.st.Pick(id)), SK: id, Payload: benchPayload})
				if err != nil {
					return err
				}
				_, err = cs.cl.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(cs.table), Item: av})
				return err
			}), nil},
			{"Table.Put", each(cs.libIDs, func(ctx context.Context, id string) error {
				return tbl.Put(ctx, costBase, benchItem{SK: id, Payload: benchPayload})
			}), nil},
		}},
		{"Get", "call", n, parts, []costMethod{
			{"GetItem", each(cs.plainIDs, cs.getPlain(false)), nil},
			{"Table.Get", each(cs.libIDs, func(ctx context.Context, id string) error {
				_, err := tbl.Get(ctx, costBase, id)
				return err
			}), nil},
		}},
		{"Get, consistent", "call", n, parts, []costMethod{
			{"GetItem", each(cs.plainIDs, cs.getPlain(true)), nil},
			{"Table.Get", each(cs.libIDs, func(ctx context.Context, id string) error {
				_, err := tbl.Get(ctx, costBase, id, consistent)
				return err
			}), nil},
		}},
		{"Update", "call", n, parts, []costMethod{
			{"UpdateItem", each(cs.plainIDs, func(ctx context.Context, id string) error {
				e, err := expression.NewBuilder().WithUpdate(expression.Set(expression.Name("payload"), expression.Value(updPayload))).Build()
				if err != nil {
					return err
				}
				out, err := cs.cl.UpdateItem(ctx, &dynamodb.UpdateItemInput{
					TableName: aws.String(cs.table), Key: cs.plainKey(id), UpdateExpression: e.Update(),
					ExpressionAttributeNames: e.Names(), ExpressionAttributeValues: e.Values(), ReturnValues: types.ReturnValueAllNew,
				})
				if err != nil {
					return err
				}
				var v benchItem
				return attributevalue.UnmarshalMap(out.Attributes, &v)
			}), nil},
			{"Table.Update", each(cs.libIDs, func(ctx context.Context, id string) error {
				_, err := tbl.Update(ctx, costBase, id, expression.Set(expression.Name("payload"), expression.Value(updPayload)))
				return err
			}), nil},
		}},
		{"Delete", "call", n, parts, []costMethod{
			{"DeleteItem", each(cs.plainIDs, func(ctx context.Context, id string) error {
				_, err := cs.cl.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(cs.table), Key: cs.plainKey(id)})
				return err
			}), nil},
			{"Table.Delete", each(cs.libIDs, func(ctx context.Context, id string) error {
				return tbl.Delete(ctx, costBase, id)
			}), nil},
		}},
	}
}

// loadOp is the bulk load: the same number of items each way, under one
// base, written again every round.
func (cs *costSetup) loadOp() costOp {
	lib, plain := costIDs("lib", 5*len(cs.libIDs)), costIDs("plain", 5*len(cs.libIDs))
	return costOp{"Load", "item", float64(costRepeats * len(lib)), costRepeats, []costMethod{
		{"BatchWriteItem loop", func(ctx context.Context, _, _ int) error {
			return plainLoad(ctx, cs.cl, cs.table, costLoadBase, cs.st, plain)
		}, nil},
		{"Table.Load", func(ctx context.Context, _, _ int) error {
			stats, err := cs.tbl.Load(ctx, baseItems(costLoadBase, lib))
			if err == nil && stats.Written != len(lib) {
				err = fmt.Errorf("%d items written, want %d", stats.Written, len(lib))
			}
			return err
		}, nil},
	}}
}

// baseItems yields an item of each id under base.
func baseItems(base string, ids []string) iter.Seq2[string, benchItem] {
	return func(yield func(string, benchItem) bool) {
		for _, id := range ids {
			if !yield(base, benchItem{SK: id, Payload: benchPayload}) {
				return
			}
		}
	}
}

// scatterOp is the read of a whole base, written here once.
func (cs *costSetup) scatterOp(ctx context.Context) (costOp, error) {
	ids := costIDs("ev", 5*len(cs.libIDs))
	cs.b.prog.status(fmt.Sprintf("loading %d items to read", len(ids)))
	if _, err := cs.tbl.Load(ctx, baseItems(costScanBase, ids)); err != nil {
		return costOp{}, err
	}
	sc, err := scatter.New(cs.cl, cs.layout)
	if err != nil {
		return costOp{}, err
	}
	want := func(n int) error {
		if n != len(ids) {
			return fmt.Errorf("%d items, want %d", n, len(ids))
		}
		return nil
	}
	all := func(optFns ...func(*scatter.Options)) func(context.Context, int, int) error {
		return func(ctx context.Context, _, _ int) error {
			n := 0
			for it, err := range sc.All(ctx, costScanBase, optFns...) {
				if err != nil {
					return err
				}
				var v benchItem
				if err := it.Unmarshal(&v); err != nil {
					return err
				}
				n++
			}
			return want(n)
		}
	}
	return costOp{"scatter read", "item", float64(costRepeats * len(ids)), costRepeats, []costMethod{
		{"Query loop + sort", func(ctx context.Context, _, _ int) error {
			items, err := plainScatter(ctx, cs.cl, cs.table, costScanBase, costShards)
			if err != nil {
				return err
			}
			return want(len(items))
		}, nil},
		{"scatter.All", all(), nil},
		{"scatter.All, PageSize 1000", all(func(o *scatter.Options) { o.PageSize = 1000 }), nil},
	}}, nil
}

// chunkOps are a payload's write and read through chunk.Store beside
// scenario 6's plain loops. The reads read a payload written here once
// each way. The store's payload written in a window is deleted after it,
// unmeasured, so that no Put replaces an older version inside its window;
// the plain loop writes the same chunk items again.
func (cs *costSetup) chunkOps(ctx context.Context, parents, chunkTable string) ([]costOp, error) {
	store, err := chunk.New(cs.cl, parents, chunkTable)
	if err != nil {
		return nil, err
	}
	data := randomBytes(cs.b.cfg.costMiB<<20, 10)
	storeKey := func(name string) chunk.Key {
		return chunk.Key{PartitionName: "pk", Partition: &types.AttributeValueMemberS{Value: name}}
	}
	plainKeys := func(name string) []string {
		keys := make([]string, chunkCount(len(data)))
		for i := range keys {
			keys[i] = fmt.Sprintf("%s#%d", name, i+1)
		}
		return keys
	}
	cs.b.prog.status(fmt.Sprintf("writing %d MiB to read", cs.b.cfg.costMiB))
	if _, err := store.Put(ctx, storeKey("read"), data); err != nil {
		return nil, err
	}
	if err := plainWrite(ctx, cs.cl, chunkTable, plainKeys("read"), data); err != nil {
		return nil, err
	}
	check := func(got []byte, err error) error {
		if err == nil && !bytes.Equal(got, data) {
			err = fmt.Errorf("read %d bytes that differ from the %d written", len(got), len(data))
		}
		return err
	}
	mib := costRepeats * float64(len(data)) / (1 << 20)
	return []costOp{
		{"chunk write", "MiB", mib, costRepeats, []costMethod{
			{"BatchWriteItem loop", func(ctx context.Context, _, _ int) error {
				return plainWrite(ctx, cs.cl, chunkTable, plainKeys("write"), data)
			}, nil},
			{"chunk.Store.Put", func(ctx context.Context, _, _ int) error {
				_, err := store.Put(ctx, storeKey("write"), data)
				return err
			}, func(ctx context.Context) error { return store.Delete(ctx, storeKey("write")) }},
		}},
		{"chunk read", "MiB", mib, costRepeats, []costMethod{
			{"BatchGetItem loop", func(ctx context.Context, _, _ int) error {
				return check(plainRead(ctx, cs.cl, chunkTable, plainKeys("read")))
			}, nil},
			{"chunk.Store.Get", func(ctx context.Context, _, _ int) error {
				got, _, err := store.Get(ctx, storeKey("read"))
				return check(got, err)
			}, nil},
		}},
	}, nil
}

// plainLoad is the hand-written bulk writer: each item marshalled with its
// physical key, 25 per BatchWriteItem, one call after another,
// unprocessed items sent again straight away.
func plainLoad(ctx context.Context, cl *dynamodb.Client, table, base string, st shard.Strategy, ids []string) error {
	pending := make([]types.WriteRequest, 0, len(ids))
	for _, id := range ids {
		av, err := attributevalue.MarshalMap(benchItem{PK: shard.Key(base, st.Pick(id)), SK: id, Payload: benchPayload})
		if err != nil {
			return err
		}
		pending = append(pending, types.WriteRequest{PutRequest: &types.PutRequest{Item: av}})
	}
	for len(pending) > 0 {
		n := min(25, len(pending))
		out, err := cl.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{table: pending[:n]}})
		if err != nil {
			return err
		}
		pending = append(out.UnprocessedItems[table], pending[n:]...)
	}
	return nil
}

// plainScatter is the hand-written read of a base: every shard's Query
// pages one shard after another, unmarshalled a page at a time, then
// sorted by sort key.
func plainScatter(ctx context.Context, cl *dynamodb.Client, table, base string, n int) ([]benchItem, error) {
	var all []benchItem
	for s := 1; s <= n; s++ {
		p := dynamodb.NewQueryPaginator(cl, &dynamodb.QueryInput{
			TableName: aws.String(table), KeyConditionExpression: aws.String("pk = :pk"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":pk": &types.AttributeValueMemberS{Value: shard.Key(base, s)}},
		})
		for p.HasMorePages() {
			out, err := p.NextPage(ctx)
			if err != nil {
				return nil, err
			}
			var page []benchItem
			if err := attributevalue.UnmarshalListOfMaps(out.Items, &page); err != nil {
				return nil, err
			}
			all = append(all, page...)
		}
	}
	slices.SortStableFunc(all, func(a, b benchItem) int { return strings.Compare(a.SK, b.SK) })
	return all, nil
}

// randomBytes returns n bytes of a fixed random sequence.
func randomBytes(n int, seed uint64) []byte {
	data := make([]byte, n)
	rng := rand.New(rand.NewPCG(seed, seed+1))
	for i := 0; i < n; i += 8 {
		v := rng.Uint64()
		for j := 0; j < 8 && i+j < n; j++ {
			data[i+j] = byte(v >> (8 * j))
		}
	}
	return data
}

// The profile's buckets: where a sample's CPU went, by the innermost frame
// of the stack outside the Go standard library and runtime.
const (
	bucketSDK   = iota // aws-sdk-go-v2 and smithy-go but the two below: serializing, signing, sending, deserializing
	bucketAV           // feature/dynamodb/attributevalue
	bucketExpr         // feature/dynamodb/expression
	bucketLib          // dynashard's packages
	bucketBench        // the bench's own code
	bucketOther        // other modules (golang.org/x/sync)
	nBuckets
)

var bucketNames = [nBuckets]string{"SDK request", "attributevalue", "expression", "dynashard", "bench", "other"}

// costShare is what a profile says of one window label: CPU by bucket,
// and dynashard's part by function, in nanoseconds.
type costShare struct {
	samples int
	total   float64
	buckets [nBuckets]float64
	frames  map[string]float64
}

// attributeProfile divides p's CPU samples labelled costLabel by label
// and bucket.
func attributeProfile(p *profile.Profile) map[string]*costShare {
	vi := -1
	for i, st := range p.SampleType {
		if st.Type == "cpu" {
			vi = i
		}
	}
	out := map[string]*costShare{}
	if vi < 0 {
		return out
	}
	for _, s := range p.Sample {
		lab := s.Label[costLabel]
		if len(lab) == 0 {
			continue
		}
		sh := out[lab[0]]
		if sh == nil {
			sh = &costShare{frames: map[string]float64{}}
			out[lab[0]] = sh
		}
		v := float64(s.Value[vi])
		b, fn := classify(s)
		if b < 0 {
			continue
		}
		sh.samples++
		sh.total += v
		sh.buckets[b] += v
		if b == bucketLib {
			sh.frames[fn] += v
		}
	}
	return out
}

// classify finds a sample's bucket from its innermost frame outside the
// standard library and runtime; for dynashard, it also names the function.
// A library frame is counted only where it is the innermost such frame: a
// middleware of the library that the SDK's stack passes through charges
// the SDK's work below it to the SDK. A stack with no such frame is -1:
// a goroutine of the HTTP transport (a connection's read and write
// loops), which carries the label of the window that dialled it and then
// serves every window.
func classify(s *profile.Sample) (int, string) {
	for _, loc := range s.Location {
		for _, l := range loc.Line { // innermost first
			if l.Function == nil {
				continue
			}
			name := l.Function.Name
			pkg := funcPackage(name)
			switch {
			case pkg == "main" || pkg == "github.com/dynashard/dynashard/bench": // the command, its test binary
				return bucketBench, ""
			case !strings.Contains(strings.SplitN(pkg, "/", 2)[0], "."):
				continue // the standard library and runtime
			case strings.HasPrefix(pkg, "github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"):
				return bucketAV, ""
			case strings.HasPrefix(pkg, "github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"):
				return bucketExpr, ""
			case strings.HasPrefix(pkg, "github.com/aws/"):
				return bucketSDK, ""
			case strings.HasPrefix(pkg, "github.com/dynashard/dynashard/"):
				return bucketLib, shortFunc(name)
			default:
				return bucketOther, ""
			}
		}
	}
	return -1, ""
}

// funcPackage is the import path of a function's package as pprof names
// it: "net/http" of "net/http.(*Transport).roundTrip".
func funcPackage(name string) string {
	if i := strings.IndexByte(name, '['); i >= 0 { // type arguments name other packages
		name = name[:i]
	}
	dir := ""
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		dir, name = name[:i+1], name[i+1:]
	}
	if i := strings.IndexByte(name, '.'); i >= 0 {
		name = name[:i]
	}
	return dir + name
}

// shortFunc is a dynashard function's name without the module path and
// with its type arguments elided: "shard.(*Table[...]).write".
func shortFunc(name string) string {
	name = strings.TrimPrefix(name, "github.com/dynashard/dynashard/")
	var b strings.Builder
	depth := 0
	for _, r := range name {
		switch {
		case r == '[':
			if depth == 0 {
				b.WriteString("[...]")
			}
			depth++
		case r == ']':
			depth--
		case depth == 0:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// costProfileTable adds the profile's view: each method's CPU per unit
// by bucket, and the library's heaviest functions.
func costProfileTable(sec *section, ops []costOp, shares map[string]*costShare, rounds int) {
	header := []string{"operation", "method", "samples", "profiled µs per unit"}
	for _, n := range bucketNames {
		header = append(header, n)
	}
	t := sec.table(append(header, "heaviest dynashard functions, µs per unit")...)
	for _, op := range ops {
		units := op.units * float64(rounds)
		us := func(ns float64) string { return fmt.Sprintf("%.1f", ns/1e3/units) }
		for _, m := range op.methods {
			sh := shares[op.name+"/"+m.name]
			if sh == nil {
				continue
			}
			row := []string{op.name, m.name, fmt.Sprint(sh.samples), us(sh.total)}
			for _, v := range sh.buckets {
				row = append(row, us(v))
			}
			row = append(row, topFrames(sh.frames, 4, us))
			t.row(row...)
		}
	}
	sec.notes = append(sec.notes, "The second table is the CPU profile's view of the same windows (100 samples per CPU-second: "+
		"a figure of a few samples is a rough one). "+
		"Each sample is charged to the innermost frame of its stack outside the Go standard library and runtime. "+
		"*SDK request* is aws-sdk-go-v2 and smithy-go: building, signing and sending the request, decoding the answer. "+
		"*attributevalue* and *expression* are those SDK packages wherever called; *dynashard* is the library's own "+
		"code, its allocations and the standard library it calls; a library middleware charges the SDK's work below it "+
		"to the SDK. Samples of the HTTP transport's own goroutines carry no window's label and are left out.")
}

// topFrames renders the k heaviest functions of frames.
func topFrames(frames map[string]float64, k int, us func(float64) string) string {
	type fv struct {
		name string
		v    float64
	}
	var all []fv
	for n, v := range frames {
		all = append(all, fv{n, v})
	}
	slices.SortFunc(all, func(a, b fv) int {
		if a.v != b.v {
			if a.v > b.v {
				return -1
			}
			return 1
		}
		return strings.Compare(a.name, b.name)
	})
	var parts []string
	for _, f := range all[:min(k, len(all))] {
		parts = append(parts, fmt.Sprintf("%s %s", f.name, us(f.v)))
	}
	if len(parts) == 0 {
		return "–"
	}
	return strings.Join(parts, "; ")
}
