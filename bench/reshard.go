package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/smithy-go/middleware"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"

	"github.com/dynashard/dynashard/scatter"
	"github.com/dynashard/dynashard/shard"
)

// Scenario 8's shape: a hot base on N0 shards written at rate0 items/s
// (per key well under the model's cap), then, from the ramp on, at ten
// times that, which N0 shards cannot carry; the auto-grow run grows N by
// doubling while the fixed run stays at N0.
const (
	reshardN0     = 2
	reshardRamp   = 10.0
	reshardBucket = 250 * time.Millisecond
	reshardBefore = 3 * time.Second // at rate0, before the ramp
	reshardAfter  = 6 * time.Second // at 10 × rate0
	reshardTTL    = 200 * time.Millisecond
	reshardPool   = 96 // writers taking the offered writes
)

// reshardRun is one run of scenario 8: fixed N or auto-grow.
type reshardRun struct {
	grow              bool
	offered, achieved []float64 // items/s per bucket
	rate0             float64
	rampBucket        int
	decisions         []shard.Decision
	history           []int
	failed, shed      int64
	throttled         int64 // proxy: throttled attempts
	reads             readCheck
	final             readCheck
	getsBefore        float64 // GetItem requests per Get, before Rebalance
	predicted         float64 // what the probe order predicts
	getsAfter         float64 // after Rebalance
	moved             int
	rebalance         time.Duration
}

// readCheck counts full reads of the base and what was wrong with them.
type readCheck struct {
	reads, missing, dups, unknown int
	items                         int // in the last read
}

func (c readCheck) String() string {
	return fmt.Sprintf("%d reads: %d acknowledged ids missing, %d duplicates, %d ids never written", c.reads, c.missing, c.dups, c.unknown)
}

// reshard is scenario 8.
func (b *bencher) reshard(ctx context.Context) (*section, error) {
	sec := &section{title: "Online resharding: a hot base whose write rate ramps 10×"}
	rate0 := 0.3 * reshardN0 * b.cfg.wcu
	var runs []*reshardRun
	for _, grow := range []bool{false, true} {
		r, err := b.reshardRun(ctx, grow, rate0)
		if err != nil {
			return sec, err
		}
		runs = append(runs, r)
	}
	sec.intro = append(sec.intro, reshardIntro(b.cfg, rate0))
	t := sec.table("run", "N", "offered before / after the ramp, items/s", "achieved before", "achieved, first 2 s after",
		"achieved, rest", "ratio, rest", "1 s rate first ≥ 90 %", "1 s windows ≥ 90 % since", "grows", "throttled attempts", "failed Puts", "shed")
	for _, r := range runs {
		before, first, rest, from, held := r.phases()
		t.row(r.label(), fmt.Sprint(r.history), fmt.Sprintf("%s / %s", fig(r.rate0), fig(r.rate0*reshardRamp)), fig(before), fig(first),
			fig(rest), pct(rest/(r.rate0*reshardRamp)), from, held, r.grows(), fmt.Sprint(r.throttled), fmt.Sprint(r.failed), fmt.Sprint(r.shed))
	}
	v := sec.table("run", "reads during the run", "final read", "GetItem per Get (predicted)", "Rebalance", "GetItem per Get after")
	for _, r := range runs {
		v.row(r.label(), r.reads.String(), fmt.Sprintf("%d items; %s", r.final.items, r.final.String()),
			fmt.Sprintf("%.3f (%.3f)", r.getsBefore, r.predicted),
			fmt.Sprintf("%d moved in %s", r.moved, r.rebalance.Round(time.Millisecond)), fmt.Sprintf("%.3f", r.getsAfter))
	}
	series := sec.table(append([]string{"run"}, bucketHeader(runs[0])...)...)
	for _, r := range runs {
		cells := []string{r.label()}
		for _, a := range r.achieved[r.rampBucket-2:] {
			cells = append(cells, fmt.Sprintf("%.0f", a))
		}
		series.row(cells...)
	}
	sec.notes = append(sec.notes, reshardVerdict(runs))
	sec.plot = &plotSpec{file: "reshard", alt: "achieved write rate over time, fixed N vs auto-grow, against the offered load",
		draw: func() (*plot.Plot, error) { return reshardPlot(runs) }}
	return sec, nil
}

// bucketHeader labels the per-bucket columns from two buckets before the
// ramp: the second each bucket starts at, relative to the ramp.
func bucketHeader(r *reshardRun) []string {
	var h []string
	for i := r.rampBucket - 2; i < len(r.achieved); i++ {
		h = append(h, fmt.Sprintf("%+.2fs", float64(i-r.rampBucket)*reshardBucket.Seconds()))
	}
	return h
}

func (r *reshardRun) label() string {
	if r.grow {
		return "auto-grow"
	}
	return "fixed N"
}

func (r *reshardRun) grows() string {
	var s []string
	ramp := time.Duration(r.rampBucket) * reshardBucket
	for _, d := range r.decisions {
		if d.Kind == shard.Grow {
			s = append(s, fmt.Sprintf("%d→%d at ramp+%.2fs", d.From, d.To, d.At.Sub(time.Time{}.Add(ramp)).Seconds()))
		}
	}
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

// phases returns the achieved rates before the ramp, in its first 2 s and
// after, when the rate over one second (4 buckets: a single bucket's count
// is noisy) first reached 90 % of the offered rate after the ramp, as
// "ramp+1.25s" (the end of that second) or "never", and how many of the
// one-second windows from then on (one ending at each bucket) stayed there.
func (r *reshardRun) phases() (before, first, rest float64, from, held string) {
	two := int(2 * time.Second / reshardBucket)
	before = mean(r.achieved[1:r.rampBucket]) // the first bucket has the pool's start
	first = mean(r.achieved[r.rampBucket:min(r.rampBucket+two, len(r.achieved))])
	rest = mean(r.achieved[min(r.rampBucket+two, len(r.achieved)):])
	sec := int(time.Second / reshardBucket)
	from, held = "never", "-"
	reached, ok, all := -1, 0, 0
	for end := r.rampBucket + sec; end <= len(r.achieved); end++ {
		good := mean(r.achieved[end-sec:end]) >= 0.9*r.offered[end-1]
		if reached < 0 && good {
			reached = end
			from = fmt.Sprintf("ramp+%.2fs", float64(end-r.rampBucket)*reshardBucket.Seconds())
		}
		if reached >= 0 {
			all++
			if good {
				ok++
			}
		}
	}
	if reached >= 0 {
		held = fmt.Sprintf("%d of %d", ok, all)
	}
	return
}

func mean(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := 0.0
	for _, x := range v {
		s += x
	}
	return s / float64(len(v))
}

// reshardRun runs the ramp once through a fresh proxy, base and table.
func (b *bencher) reshardRun(ctx context.Context, grow bool, rate0 float64) (*reshardRun, error) {
	endpoint, direct, table, drop, err := b.dayTable(ctx)
	if err != nil {
		return nil, err
	}
	defer drop()
	p, err := b.proxy(endpoint, 0)
	if err != nil {
		return nil, err
	}
	defer p.Close()
	r := &reshardRun{grow: grow, rate0: rate0, rampBucket: int(reshardBefore / reshardBucket)}
	start := time.Now()
	var opts []func(*shard.Options)
	var dmu sync.Mutex
	if grow {
		g, err := shard.NewGrower(func(o *shard.GrowOptions) {
			o.Window, o.Sustain, o.MinAttempts, o.Cooldown, o.MaxN = reshardBucket, 2, 10, reshardBucket, 64
			o.OnDecision = func(d shard.Decision) {
				d.At = time.Time{}.Add(d.At.Sub(start)) // since the run's start
				dmu.Lock()
				r.decisions = append(r.decisions, d)
				dmu.Unlock()
			}
		})
		if err != nil {
			return nil, err
		}
		opts = append(opts, func(o *shard.Options) { o.Grower = g })
	}
	l := shard.Layout{Table: table, PartitionKey: "pk", SortKey: "sk", Strategy: shard.Hash(reshardN0), HistoryTTL: reshardTTL}
	cl := b.client(p.URL(), reshardPool)
	tbl, err := shard.NewTable[benchItem](cl, l, opts...)
	if err != nil {
		return nil, err
	}
	var mu sync.Mutex
	acked, attempted := map[string]bool{}, map[string]bool{}
	written := map[string]int{} // id -> N it was written at
	put := func(ctx context.Context, id string) error {
		mu.Lock()
		attempted[id] = true
		mu.Unlock()
		h, err := tbl.Shards(ctx, "hot") // the N this Put writes at, unless a grow comes between
		if err != nil {
			return err
		}
		err = tbl.Put(ctx, "hot", benchItem{SK: id, Payload: benchPayload})
		if err == nil {
			mu.Lock()
			acked[id], written[id] = true, h[len(h)-1]
			mu.Unlock()
		}
		return err
	}
	rd, err := scatter.New(direct, l, func(o *scatter.Options) { o.ConsistentRead = true })
	if err != nil {
		return nil, err
	}
	check := func(c *readCheck) error {
		mu.Lock()
		before := make(map[string]bool, len(acked))
		for id := range acked {
			before[id] = true
		}
		mu.Unlock()
		seen := map[string]bool{}
		for it, err := range rd.All(ctx, "hot", func(o *scatter.Options) { o.Projection = "sk" }) {
			if err != nil {
				return err
			}
			sk := skOf(it)
			if seen[sk] {
				c.dups++
			}
			seen[sk] = true
			mu.Lock()
			if !attempted[sk] {
				c.unknown++
			}
			mu.Unlock()
		}
		for id := range before {
			if !seen[id] {
				c.missing++
			}
		}
		c.reads++
		c.items = len(seen)
		return nil
	}
	b.prog.status(fmt.Sprintf("%s: %s items/s, then %s", r.label(), fig(rate0), fig(rate0*reshardRamp)))
	if err := r.drive(ctx, put, func() error { return check(&r.reads) }, &r.failed, &r.shed); err != nil {
		return r, err
	}
	r.throttled = int64(p.Stats().Total.Throttled)
	if r.history, err = tbl.Shards(ctx, "hot"); err != nil {
		return r, err
	}
	if err := check(&r.final); err != nil {
		return r, err
	}
	if r.getsBefore, r.predicted, err = getCost(ctx, direct, l, written, r.history); err != nil {
		return r, err
	}
	admin, err := shard.NewTable[benchItem](direct, l) // not through the proxy
	if err != nil {
		return r, err
	}
	// A Grower's last grow stays pending until a write finishes it; the
	// writers have stopped, so finish it here (Rebalance refuses a
	// pending count). A history of one count has nothing pending (and
	// Reshard would need transactions, which dynalite lacks).
	if len(r.history) > 1 {
		if _, err := admin.Reshard(ctx, "hot", r.history[len(r.history)-1]); err != nil {
			return r, err
		}
	}
	t0 := time.Now()
	prog, err := admin.Rebalance(ctx, "hot")
	if err != nil {
		return r, err
	}
	r.rebalance, r.moved = time.Since(t0), prog.Moved
	after := r.history[len(r.history)-1:]
	if r.getsAfter, _, err = getCost(ctx, direct, l, written, after); err != nil {
		return r, err
	}
	return r, check(&r.final)
}

func skOf(it scatter.Item) string {
	var v struct {
		SK string `dynamodbav:"sk"`
	}
	_ = it.Unmarshal(&v)
	return v.SK
}

// drive offers writes open-loop: rate0 items/s until the ramp, ten times
// that after, to a pool of writers; a write the pool cannot take at once
// (every writer busy, the queue full) is shed. It reads the base whole
// every second meanwhile.
func (r *reshardRun) drive(ctx context.Context, put func(context.Context, string) error, read func() error, failed, shed *int64) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	total := reshardBefore + reshardAfter
	buckets := int(total / reshardBucket)
	r.offered, r.achieved = make([]float64, buckets), make([]float64, buckets)
	done := make([]atomic.Int64, buckets)
	jobs := make(chan string, 4096)
	start := time.Now()
	var wg sync.WaitGroup
	var errOnce sync.Once
	var firstErr error
	for range reshardPool {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for id := range jobs {
				err := put(ctx, id)
				switch {
				case err == nil:
					if i := int(time.Since(start) / reshardBucket); i < buckets {
						done[i].Add(1)
					}
				case ctx.Err() != nil:
				case isThrottle(err), errors.Is(err, shard.ErrTooLate):
					// Not acknowledged (a throttle, or a Put abandoned at its
					// fence during a grow): counted, never checked as written.
					atomic.AddInt64(failed, 1)
				default:
					errOnce.Do(func() { firstErr = err })
					cancel()
				}
			}
		}()
	}
	wg.Add(1)
	go func() { // the reader
		defer wg.Done()
		for sleepCtx(ctx, time.Second) {
			if err := read(); err != nil && ctx.Err() == nil {
				errOnce.Do(func() { firstErr = err })
				cancel()
			}
		}
	}()
	sent, offered := 0, 0.0
	tick := time.NewTicker(2 * time.Millisecond)
	for now := range tick.C {
		el := now.Sub(start)
		if el >= total || ctx.Err() != nil {
			break
		}
		if el < reshardBefore {
			offered = r.rate0 * el.Seconds()
		} else {
			offered = r.rate0*reshardBefore.Seconds() + r.rate0*reshardRamp*(el-reshardBefore).Seconds()
		}
		for ; float64(sent) < offered; sent++ {
			select {
			case jobs <- fmt.Sprintf("ORD-%08d", sent):
			default:
				atomic.AddInt64(shed, 1)
			}
		}
	}
	tick.Stop()
	close(jobs)
	cancel()
	wg.Wait()
	for i := range buckets {
		rate := r.rate0
		if time.Duration(i)*reshardBucket >= reshardBefore {
			rate *= reshardRamp
		}
		r.offered[i], r.achieved[i] = rate, float64(done[i].Load())/reshardBucket.Seconds()
	}
	if firstErr != nil {
		return firstErr
	}
	return nil
}

// getCost Gets every id written (by a fresh Table on a counting client)
// and returns the GetItem requests per Get, and what the probe order
// predicts for history h: one request per distinct key, newest count's
// first, up to the key of the count the id was written at.
func getCost(ctx context.Context, direct *dynamodb.Client, l shard.Layout, written map[string]int, h []int) (float64, float64, error) {
	var gets atomic.Int64
	c := dynamodb.New(direct.Options(), func(o *dynamodb.Options) {
		o.APIOptions = append(o.APIOptions, func(st *middleware.Stack) error {
			return st.Finalize.Add(middleware.FinalizeMiddlewareFunc("count", func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
				gets.Add(1)
				return next.HandleFinalize(ctx, in)
			}), middleware.After)
		})
	})
	l.HistoryTTL = time.Minute // the record is read once, below: only probes are counted
	tbl, err := shard.NewTable[benchItem](c, l)
	if err != nil {
		return 0, 0, err
	}
	if _, err := tbl.Shards(ctx, "hot"); err != nil { // the record read, not counted
		return 0, 0, err
	}
	gets.Store(0)
	predicted := 0
	for id, n := range written {
		if _, err := tbl.Get(ctx, "hot", id); err != nil {
			return 0, 0, fmt.Errorf("get %s: %w", id, err)
		}
		var keys []int
		for i := len(h) - 1; i >= 0; i-- {
			if k := shard.Hash(h[i]).Pick(id); !slices.Contains(keys, k) {
				keys = append(keys, k)
			}
		}
		predicted += slices.Index(keys, shard.Hash(n).Pick(id)) + 1
	}
	if len(written) == 0 {
		return 0, 0, nil
	}
	return float64(gets.Load()) / float64(len(written)), float64(predicted) / float64(len(written)), nil
}

func reshardIntro(c benchConfig, rate0 float64) string {
	return fmt.Sprintf("One base written open-loop through shard.Table.Put (Hash, starting at N = %d; per-key model: %s WCU/s "+
		"per physical key, so %s items/s for the base): %s items/s for %s, then, from the ramp, %s items/s (10×) for %s, "+
		"offered to a pool of %d writers (a write the pool cannot queue is shed). *fixed N* keeps N = %d; *auto-grow* sets a "+
		"shard.Grower (window %s, 2 hot windows in a row, threshold 5 %% of attempts throttled, cooldown one window, doubling, "+
		"cap 64), which reshards the base from the writers' own goroutines. Rates are acknowledged Puts per %s bucket. "+
		"While the writers run, the base is read whole with scatter.All every second through another client (ConsistentRead, so "+
		"it reads the record each time): every id acknowledged before a read began must be in it, once. After the run: a "+
		"final read, every id fetched with Table.Get on a counting client (GetItem per Get: the extra probes), "+
		"shard.Table.Rebalance, and the same again.",
		reshardN0, fig(c.wcu), fig(reshardN0*c.wcu), fig(rate0), reshardBefore, fig(rate0*reshardRamp), reshardAfter,
		reshardPool, reshardN0, reshardBucket, reshardBucket)
}

func reshardVerdict(runs []*reshardRun) string {
	var b strings.Builder
	for _, r := range runs {
		_, first, rest, from, held := r.phases()
		target := r.rate0 * reshardRamp
		fmt.Fprintf(&b, "%s: %s of the offered %s items/s in the first 2 s after the ramp, %s after; ",
			r.label(), pct(first/target), fig(target), pct(rest/target))
		if from == "never" {
			b.WriteString("the rate over one second never reached 90 % of it")
		} else {
			fmt.Fprintf(&b, "the rate over one second first reached 90 %% of it at %s", from)
		}
		if held != "-" {
			fmt.Fprintf(&b, " (goal: within 2 s), and %s one-second windows from then on stayed there", held)
		}
		b.WriteString(". ")
	}
	for _, r := range runs {
		if r.grow {
			ok := r.reads.missing+r.reads.dups+r.reads.unknown+r.final.missing+r.final.dups+r.final.unknown == 0
			fmt.Fprintf(&b, "Reads during and after the change returned every acknowledged item exactly once: %v. ", ok)
			fmt.Fprintf(&b, "A Get cost %.3f GetItem requests before Rebalance (history %v) and %.3f after. ", r.getsBefore, r.history, r.getsAfter)
		}
	}
	return strings.TrimSpace(b.String())
}

func reshardPlot(runs []*reshardRun) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = "Hot base, offered rate ×10 at the ramp: fixed N vs auto-grow"
	p.X.Label.Text = "seconds since the ramp"
	p.Y.Label.Text = "acknowledged Puts/s"
	p.Legend.Top, p.Legend.Left = true, true
	p.Add(plotter.NewGrid())
	x := func(r *reshardRun, i int) float64 { return float64(i-r.rampBucket) * reshardBucket.Seconds() }
	var offered, target plotter.XYs
	r0 := runs[0]
	for i, o := range r0.offered {
		offered = append(offered, plotter.XY{X: x(r0, i), Y: o})
		target = append(target, plotter.XY{X: x(r0, i), Y: 0.9 * o})
	}
	if err := addSeries(p, "offered", offered, 0, true); err != nil {
		return nil, err
	}
	if err := addSeries(p, "90 % of offered (target)", target, 3, true); err != nil {
		return nil, err
	}
	for i, r := range runs {
		var pts plotter.XYs
		for j, a := range r.achieved {
			pts = append(pts, plotter.XY{X: x(r, j), Y: a})
		}
		if err := addSeries(p, r.label(), pts, 1+i, false); err != nil {
			return nil, err
		}
	}
	return p, nil
}
