package main

import (
	"context"
	"fmt"
	"image/color"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/dynashard/dynashard/shard"
)

// benchItem is the item every write scenario stores: about 230 bytes, so
// one write costs one WCU.
type benchItem struct {
	PK      string `dynamodbav:"pk"`
	SK      string `dynamodbav:"sk"`
	Payload string `dynamodbav:"payload"`
}

var benchPayload = strings.Repeat("x", 200)

// writeResult is one measured step of scenario 1.
type writeResult struct {
	n         int
	sharded   bool
	workers   int
	rate      float64 // items/s the model admitted (WCU charged, 1 per item)
	limit     float64 // n × cap
	throttled float64 // throttled attempts/s (proxy)
	failed    int64   // calls that failed after the SDK's retries
	cpu       cpuUse
}

func (r writeResult) ratio() float64 { return r.rate / r.limit }

// writes is scenario 1: one logical key written as fast as a pool of
// writers can, unsharded (every write on one partition-key value) and then
// sharded with shard.Table.Put and Hash(N).
func (b *bencher) writes(ctx context.Context) (*section, error) {
	endpoint, _, table, drop, err := b.dayTable(ctx)
	if err != nil {
		return nil, err
	}
	defer drop()

	c := b.cfg
	sec := &section{title: "Hot-day writes"}
	sec.intro = append(sec.intro, fmt.Sprintf(
		"One logical key (a day) written with PutItem as fast as a pool of writers can: unsharded, every write on one "+
			"partition-key value (the naive baseline), then sharded over N keys with shard.Table.Put and shard.Hash(N). "+
			"Items are about 230 bytes (1 WCU). Per key the model allows %s WCU/s, so the physical limit is N × %s items/s. "+
			"Each step runs %s unmeasured (burst credit drained, connections warm), then %s measured; "+
			"%d writers per shard (at least 8). Throttled attempts are the proxy's ProvisionedThroughputExceededException "+
			"answers, the SDK's own retries included; failed calls are Puts that still failed after %d attempts.",
		fig(c.wcu), fig(c.wcu), c.warmup, c.duration, c.workers, c.attempts))
	t := sec.table(append([]string{"keys", "N", "writers", "items/s", "limit N × cap", "ratio", "throttled attempts/s", "failed calls"},
		splitHeader...)...)
	// Added after the loop: sec.table's pointer t would not survive a
	// second table appended now.
	perWrite := mdTable{header: perWriteHeader}

	var results []writeResult
	steps := append([]int{1}, c.writeNs...)
	for i, n := range steps {
		r, err := b.writeStep(ctx, endpoint, table, i, n, i > 0)
		if err != nil {
			return sec, err
		}
		results = append(results, r)
		keys := "sharded"
		if !r.sharded {
			keys = "unsharded"
		}
		t.row(append([]string{keys, fmt.Sprint(r.n), fmt.Sprint(r.workers), fig(r.rate), fig(r.limit), pct(r.ratio()),
			fig(r.throttled), fmt.Sprint(r.failed)}, r.cpu.splitCells()...)...)
		perWrite.row(append([]string{keys, fmt.Sprint(r.n)}, r.cpu.perOp(r.rate)...)...)
	}
	sec.tables = append(sec.tables, perWrite)
	sec.notes = append(sec.notes, writeVerdict(results), perWriteNote)
	sec.plot = &plotSpec{file: "writes", alt: "write throughput vs N against the N × cap line", draw: func() (*plot.Plot, error) {
		return writePlot(results, c.wcu)
	}}
	return sec, nil
}

// writeVerdict says up to which N the target (90 % of N × cap) was met and,
// where it was not, whether CPU was the reason.
func writeVerdict(rs []writeResult) string {
	var sharded []writeResult
	for _, r := range rs {
		if r.sharded {
			sharded = append(sharded, r)
		}
	}
	var b strings.Builder
	if len(rs) > 0 && !rs[0].sharded && len(sharded) > 0 {
		best := sharded[0]
		for _, r := range sharded {
			if r.rate > best.rate {
				best = r
			}
		}
		fmt.Fprintf(&b, "Unsharded, the key tops out at %s items/s (%s of its %s cap); the best sharded step, N = %d, "+
			"wrote %s items/s: %.1f× the unsharded rate. ", fig(rs[0].rate), pct(rs[0].ratio()), fig(rs[0].limit),
			best.n, fig(best.rate), best.rate/rs[0].rate)
	}
	met := 0
	for _, r := range sharded {
		if r.ratio() < 0.9 {
			break
		}
		met = r.n
	}
	if met > 0 {
		fmt.Fprintf(&b, "Target (≥ 90 %% of N × cap) met up to N = %d. ", met)
	}
	for _, r := range sharded {
		if r.ratio() >= 0.9 {
			continue
		}
		fmt.Fprintf(&b, "At N = %d the rate was %s of the limit (%s of %s items/s)", r.n, pct(r.ratio()), fig(r.rate), fig(r.limit))
		switch {
		case r.cpu.saturated():
			fmt.Fprintf(&b, " with the machine's CPU saturated (%s busy; client %.2f cores", pct(r.cpu.machine), r.cpu.client)
			if r.cpu.split {
				fmt.Fprintf(&b, ", proxy %.2f cores", r.cpu.proxy)
			}
			if r.cpu.serverKnown {
				fmt.Fprintf(&b, ", server %.2f cores", r.cpu.server)
			}
			b.WriteString("): from here on the figure measures this machine, not the model. ")
		case r.cpu.machineKnown:
			fmt.Fprintf(&b, " while the machine was %s busy, so CPU was not the only limit (client concurrency, "+
				"backoff after throttling, or the server's request handling). ", pct(r.cpu.machine))
		default:
			b.WriteString("; machine CPU could not be read. ")
		}
		break
	}
	return strings.TrimSpace(b.String())
}

func writePlot(rs []writeResult, capacity float64) (*plot.Plot, error) {
	var ns []int
	for _, r := range rs {
		ns = append(ns, r.n)
	}
	p := newPlot("Hot-day writes: throughput vs shard count", "shards N (log scale)", "items/s (1 WCU each)", ns)
	var limit, target, sharded, flat, saturated plotter.XYs
	// The limit is a straight line in N; on a log axis it needs many points.
	lo, hi := float64(ns[0]), float64(ns[0])
	for _, n := range ns {
		lo, hi = min(lo, float64(n)), max(hi, float64(n))
	}
	for i := 0; i <= 64; i++ {
		x := lo * math.Pow(hi/lo, float64(i)/64)
		limit = append(limit, plotter.XY{X: x, Y: x * capacity})
		target = append(target, plotter.XY{X: x, Y: 0.9 * x * capacity})
	}
	for _, r := range rs {
		if r.sharded {
			sharded = append(sharded, plotter.XY{X: float64(r.n), Y: r.rate})
		}
		if r.cpu.saturated() {
			saturated = append(saturated, plotter.XY{X: float64(r.n), Y: r.rate})
		}
	}
	if len(rs) > 0 && !rs[0].sharded {
		for _, r := range rs {
			flat = append(flat, plotter.XY{X: float64(r.n), Y: rs[0].rate})
		}
	}
	if err := addSeries(p, fmt.Sprintf("model limit: N × %s WCU/s", fig(capacity)), limit, 0, true); err != nil {
		return nil, err
	}
	if err := addSeries(p, "90 % of the limit (target)", target, 3, true); err != nil {
		return nil, err
	}
	if len(sharded) > 0 {
		if err := addSeries(p, "sharded: shard.Table.Put, Hash(N)", sharded, 1, false); err != nil {
			return nil, err
		}
	}
	if len(flat) > 0 {
		if err := addSeries(p, "unsharded baseline: one key", flat, 2, true); err != nil {
			return nil, err
		}
	}
	if len(saturated) > 0 {
		sc, err := plotter.NewScatter(saturated)
		if err != nil {
			return nil, err
		}
		sc.Shape = draw.CrossGlyph{}
		sc.Radius = vg.Points(7)
		sc.Color = color.Black
		p.Add(sc)
		p.Legend.Add("machine CPU ≥ 90 % busy", sc)
	}
	p.Y.Min = 0
	return p, nil
}

// writeStep runs one step of scenario 1 through a fresh proxy (fresh
// buckets) and measures the steady state after the warm-up.
func (b *bencher) writeStep(ctx context.Context, endpoint, table string, step, n int, sharded bool) (writeResult, error) {
	c := b.cfg
	p, err := b.proxy(endpoint, 0)
	if err != nil {
		return writeResult{}, err
	}
	defer p.Close()
	workers := max(8, c.workers*n)
	if !sharded {
		workers = max(8, c.workers)
	}
	cl := b.client(p.URL(), workers)
	put, err := dayPut(cl, shard.Layout{Table: table, PartitionKey: "pk", SortKey: "sk", Strategy: shard.Hash(n)},
		fmt.Sprintf("day%d", step), sharded)
	if err != nil {
		return writeResult{}, err
	}
	w := b.startWriters(ctx, stepLabel(n, sharded), workers, put)
	var r writeResult
	if sleepCtx(w.ctx, c.warmup) {
		f0 := w.failed.Load()
		p.ResetStats()
		b.cpu.begin()
		s0 := sampleCPU()
		ok := sleepCtx(w.ctx, c.duration)
		f1, st, s1 := w.failed.Load(), p.Stats(), sampleCPU()
		split := b.cpu.end(s1.self - s0.self)
		if ok {
			secs := s1.at.Sub(s0.at).Seconds()
			r = writeResult{
				n: n, sharded: sharded, workers: workers,
				rate:      st.Total.WCU / secs, // writes admitted in the window, free of in-flight edges
				limit:     float64(n) * c.wcu,
				throttled: float64(st.Total.Throttled) / secs,
				failed:    f1 - f0,
				cpu:       splitBetween(s0, s1, split),
			}
		}
	}
	if err := w.stop(); err != nil {
		return r, err
	}
	return r, ctx.Err()
}

// perWriteHeader heads the table of CPU per write of scenarios 1 and 7.
var perWriteHeader = []string{"keys", "N", "client µs/write", "proxy µs/write", "runtime µs/write", "process µs/write"}

// perWriteNote explains the CPU columns of scenarios 1 and 7.
var perWriteNote = "CPU per write is the window's CPU divided by the writes the model admitted in it (throttled " +
	"attempts cost CPU too and are included). " + splitNote()

func stepLabel(n int, sharded bool) string {
	if sharded {
		return fmt.Sprintf("N=%d", n)
	}
	return "unsharded"
}

// dayPut returns a function writing one benchItem with id under the
// logical key base: sharded with shard.Table.Put and l, or unsharded, a
// plain PutItem on the partition-key value base.
func dayPut(cl *dynamodb.Client, l shard.Layout, base string, sharded bool) (func(ctx context.Context, id string) error, error) {
	if sharded {
		tbl, err := shard.NewTable[benchItem](cl, l)
		if err != nil {
			return nil, err
		}
		return func(ctx context.Context, id string) error {
			return tbl.Put(ctx, base, benchItem{SK: id, Payload: benchPayload})
		}, nil
	}
	return func(ctx context.Context, id string) error {
		_, err := cl.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(l.Table), Item: map[string]types.AttributeValue{
			l.PartitionKey: &types.AttributeValueMemberS{Value: base},
			l.SortKey:      &types.AttributeValueMemberS{Value: id},
			"payload":      &types.AttributeValueMemberS{Value: benchPayload},
		}})
		return err
	}, nil
}

// writers is a pool of goroutines writing fresh ids ("ORD-00000001", …)
// as fast as they can. A write still throttled after the SDK's retries
// counts as failed; any other error stops the pool.
type writers struct {
	ctx          context.Context // cancelled by stop or by an error
	cancel       context.CancelFunc
	wg           sync.WaitGroup
	done, failed atomic.Int64
	errOnce      sync.Once
	err          error
}

// startWriters starts n writers calling put, and a live progress line.
func (b *bencher) startWriters(ctx context.Context, label string, n int, put func(ctx context.Context, id string) error) *writers {
	w := &writers{}
	w.ctx, w.cancel = context.WithCancel(ctx)
	var next atomic.Int64
	for range n {
		w.wg.Add(1)
		go func() {
			defer w.wg.Done()
			for w.ctx.Err() == nil {
				id := fmt.Sprintf("ORD-%08d", next.Add(1))
				err := put(w.ctx, id)
				switch {
				case err == nil:
					w.done.Add(1)
				case w.ctx.Err() != nil:
					return
				case isThrottle(err):
					w.failed.Add(1)
				default:
					w.errOnce.Do(func() { w.err = fmt.Errorf("put %s: %w", id, err) })
					w.cancel()
					return
				}
			}
		}()
	}
	start := time.Now()
	b.prog.statusLive(fmt.Sprintf("%s, %d writers", label, n), func() string {
		return fmt.Sprintf("%d items, %.0f/s", w.done.Load(), float64(w.done.Load())/time.Since(start).Seconds())
	})
	return w
}

// stop stops the writers, waits for them and returns the first error one
// of them met.
func (w *writers) stop() error {
	w.cancel()
	w.wg.Wait()
	return w.err
}

// sleepCtx sleeps for d and reports whether ctx is still live.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
