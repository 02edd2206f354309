package main

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"golang.org/x/sync/errgroup"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"

	"github.com/dynashard/dynashard/scatter"
	"github.com/dynashard/dynashard/shard"
)

// readResult is one N of scenario 2: median latencies of one whole-day read.
type readResult struct {
	n, items   int
	sequential time.Duration // one Query after another over the suffixes
	errgroup   time.Duration // one goroutine per shard (errgroup, limit 32), then a sort
	scatter    time.Duration // scatter.All, default MaxConcurrency
	unbounded  time.Duration // scatter.All, MaxConcurrency N
	roundTrip  time.Duration // one Query of one shard: the lower bound
	cpu        cpuUse        // over all the timed reads of this N
}

// reads is scenario 2: reading every item of a sharded day with scatter.All
// beside the naive loop (one Query per suffix, in turn, then a sort) and the
// lower bound (one round trip), with latency added to every request.
func (b *bencher) reads(ctx context.Context) (*section, error) {
	c := b.cfg
	endpoint, direct, table, drop, err := b.dayTable(ctx)
	if err != nil {
		return nil, err
	}
	defer drop()

	sec := &section{title: "Day reads"}
	sec.intro = append(sec.intro, fmt.Sprintf(
		"A day of about %d items per shard (230 bytes each), sharded with shard.Hash(N), read whole; the proxy adds %s to "+
			"every request. *sequential*: one Query per suffix in turn (paginated), then a sort: the naive loop. "+
			"*errgroup + sort*: what a user writes by hand instead (with guregu/dynamo, say): an errgroup with limit %d, "+
			"one goroutine per shard paginating its Query, then a stable sort of everything. "+
			"*scatter*: scatter.All with the default MaxConcurrency (min(N, %d)), items merged in sort-key order. "+
			"*scatter, MaxConcurrency N*: every shard at once. *one round trip*: a single Query of one shard, the lower bound "+
			"for any read. Medians of %d reads each, after one untimed read, the methods taking turns in a shuffled order; milliseconds.",
		c.readItems, c.latency, scatter.DefaultMaxConcurrency, scatter.DefaultMaxConcurrency, c.reps))
	t := sec.table("N", "items", "sequential", "errgroup + sort", "scatter", "scatter, MaxConcurrency N", "one round trip",
		"speed-up (sequential ÷ scatter)", "scatter ÷ errgroup", "scatter ÷ round trip", "client CPU", "server CPU", "machine CPU")
	var results []readResult
	for _, n := range c.readNs {
		r, err := b.readStep(ctx, endpoint, direct, table, n)
		if err != nil {
			return sec, err
		}
		results = append(results, r)
		t.row(append([]string{fmt.Sprint(n), fmt.Sprint(r.items), ms(r.sequential), ms(r.errgroup), ms(r.scatter), ms(r.unbounded), ms(r.roundTrip),
			fmt.Sprintf("%.1f×", float64(r.sequential)/float64(r.scatter)),
			fmt.Sprintf("%.2f×", float64(r.scatter)/float64(r.errgroup)),
			fmt.Sprintf("%.1f", float64(r.scatter)/float64(r.roundTrip))}, r.cpu.cells()...)...)
	}
	if len(results) > 0 {
		last := results[len(results)-1]
		waves := int(math.Ceil(float64(last.n) / float64(min(last.n, scatter.DefaultMaxConcurrency))))
		sec.notes = append(sec.notes, fmt.Sprintf(
			"At N = %d the sequential loop pays %d round trips one after another (%s ms); scatter needs about %d waves of "+
				"at most %d requests (%s ms), and with every shard at once %s ms, against %s ms for a single request.",
			last.n, last.n, ms(last.sequential), waves, min(last.n, scatter.DefaultMaxConcurrency), ms(last.scatter),
			ms(last.unbounded), ms(last.roundTrip)))
		if last.cpu.saturated() {
			sec.notes = append(sec.notes, fmt.Sprintf(
				"The machine's CPU was saturated (%s busy) during these reads: every request costs CPU in the client, "+
					"the proxy and the server, so at large N a scatter is bound by CPU per request rather than by the "+
					"%s of added latency, and the gap to one round trip measures this machine more than the library.",
				pct(last.cpu.machine), c.latency))
		}
	}
	if c.streamItems > 0 {
		if err := b.stream(ctx, sec, endpoint, direct, table, slices.Max(c.readNs)); err != nil {
			return sec, err
		}
	}
	sec.plot = &plotSpec{file: "reads", alt: "scatter latency vs N against the sequential loop", draw: func() (*plot.Plot, error) {
		return readPlot(results, c.latency)
	}}
	return sec, nil
}

func readPlot(rs []readResult, latency time.Duration) (*plot.Plot, error) {
	var ns []int
	for _, r := range rs {
		ns = append(ns, r.n)
	}
	p := newPlot(fmt.Sprintf("Day reads: latency of one whole-day read, %s added per request", latency),
		"shards N (log scale)", "milliseconds (log scale)", ns)
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	// Headroom above the slowest line keeps the legend off the data.
	top := 0.0
	for _, r := range rs {
		top = max(top, float64(r.sequential)/float64(time.Millisecond))
	}
	p.Y.Max = 8 * top
	series := []struct {
		name   string
		get    func(readResult) time.Duration
		dashed bool
	}{
		{"sequential loop over suffixes", func(r readResult) time.Duration { return r.sequential }, false},
		{fmt.Sprintf("scatter.All (default, ≤ %d in flight)", scatter.DefaultMaxConcurrency), func(r readResult) time.Duration { return r.scatter }, false},
		{"scatter.All, MaxConcurrency N", func(r readResult) time.Duration { return r.unbounded }, false},
		{"one round trip (lower bound)", func(r readResult) time.Duration { return r.roundTrip }, true},
	}
	for i, s := range series {
		var pts plotter.XYs
		for _, r := range rs {
			pts = append(pts, plotter.XY{X: float64(r.n), Y: float64(s.get(r)) / float64(time.Millisecond)})
		}
		if err := addSeries(p, s.name, pts, i, s.dashed); err != nil {
			return nil, err
		}
	}
	return p, nil
}

func (b *bencher) readStep(ctx context.Context, endpoint string, direct *dynamodb.Client, table string, n int) (r readResult, err error) {
	c := b.cfg
	base := fmt.Sprintf("read%d", n)
	st := shard.Hash(n)
	total := n * c.readItems
	b.prog.status(fmt.Sprintf("N=%d: loading %d items", n, total))
	tbl, err := shard.NewTable[benchItem](direct, shard.Layout{Table: table, PartitionKey: "pk", SortKey: "sk", Strategy: st})
	if err != nil {
		return readResult{}, err
	}
	items := func(yield func(string, benchItem) bool) {
		for i := range total {
			if !yield(base, benchItem{SK: fmt.Sprintf("EV-%08d", i), Payload: benchPayload}) {
				return
			}
		}
	}
	if _, err := tbl.Load(ctx, items); err != nil {
		return readResult{}, err
	}

	p, err := b.proxy(endpoint, c.latency)
	if err != nil {
		return readResult{}, err
	}
	defer p.Close()
	cl := b.client(p.URL(), n)
	layout := shard.Layout{Table: table, PartitionKey: "pk", SortKey: "sk", Strategy: st}
	def, err := scatter.New(cl, layout)
	if err != nil {
		return readResult{}, err
	}
	all, err := scatter.New(cl, layout, func(o *scatter.Options) { o.MaxConcurrency = n })
	if err != nil {
		return readResult{}, err
	}

	scatterRead := func(s *scatter.Scatter) func(context.Context) (int, error) {
		return func(ctx context.Context) (int, error) {
			got := 0
			for _, err := range s.All(ctx, base) {
				if err != nil {
					return got, err
				}
				got++
			}
			return got, nil
		}
	}
	sequential := func(ctx context.Context) (int, error) {
		var all []map[string]types.AttributeValue
		for s := 1; s <= n; s++ {
			got, err := queryAll(ctx, cl, table, shard.Key(base, s))
			if err != nil {
				return 0, err
			}
			all = append(all, got...)
		}
		slices.SortStableFunc(all, func(a, b map[string]types.AttributeValue) int {
			return strings.Compare(a["sk"].(*types.AttributeValueMemberS).Value, b["sk"].(*types.AttributeValueMemberS).Value)
		})
		return len(all), nil
	}
	errgroupRead := func(ctx context.Context) (int, error) {
		all, err := errgroupSort(ctx, cl, table, base, n)
		return len(all), err
	}
	roundTrip := func(ctx context.Context) (int, error) {
		out, err := cl.Query(ctx, queryInput(table, shard.Key(base, 1), nil))
		if err != nil {
			return 0, err
		}
		return len(out.Items), nil
	}

	r = readResult{n: n, items: total}
	s0 := sampleCPU()
	defer func() { r.cpu = cpuBetween(s0, sampleCPU()) }()
	methods := []struct {
		name  string
		read  func(context.Context) (int, error)
		dst   *time.Duration
		whole bool
		times []time.Duration
	}{
		{name: "sequential", read: sequential, dst: &r.sequential, whole: true},
		{name: "errgroup + sort", read: errgroupRead, dst: &r.errgroup, whole: true},
		{name: "scatter", read: scatterRead(def), dst: &r.scatter, whole: true},
		{name: "scatter, MaxConcurrency N", read: scatterRead(all), dst: &r.unbounded, whole: true},
		{name: "one round trip", read: roundTrip, dst: &r.roundTrip},
	}
	// The methods take turns, in an order shuffled each round, so that a
	// change in the machine's load, or the garbage one method leaves to
	// the next, shows in every method's reads, not in one's.
	order := rand.New(rand.NewPCG(uint64(n), 2))
	for i := range c.reps + 1 {
		for _, j := range order.Perm(len(methods)) {
			m := &methods[j]
			b.prog.status(fmt.Sprintf("N=%d: %s", n, m.name))
			start := time.Now()
			got, err := m.read(ctx)
			d := time.Since(start)
			if err != nil {
				return r, fmt.Errorf("read at N=%d, %s: %w", n, m.name, err)
			}
			if m.whole && got != total {
				return r, fmt.Errorf("read at N=%d, %s: %d items, want %d", n, m.name, got, total)
			}
			if i > 0 { // the first read warms connections and caches
				m.times = append(m.times, d)
			}
		}
	}
	for _, m := range methods {
		*m.dst = median(m.times)
	}
	return r, nil
}

// errgroupSort is the read a user writes by hand: one goroutine per shard
// (an errgroup limited to scatter.DefaultMaxConcurrency), each paginating
// its Query to the end, then a stable sort of every item by sort key.
func errgroupSort(ctx context.Context, cl *dynamodb.Client, table, base string, n int) ([]map[string]types.AttributeValue, error) {
	per := make([][]map[string]types.AttributeValue, n)
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(scatter.DefaultMaxConcurrency)
	for s := 1; s <= n; s++ {
		g.Go(func() error {
			got, err := queryAll(gctx, cl, table, shard.Key(base, s))
			per[s-1] = got
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	all := slices.Concat(per...)
	slices.SortStableFunc(all, func(a, b map[string]types.AttributeValue) int {
		return strings.Compare(a["sk"].(*types.AttributeValueMemberS).Value, b["sk"].(*types.AttributeValueMemberS).Value)
	})
	return all, nil
}

// queryAll reads every item of one physical key, page by page.
func queryAll(ctx context.Context, c *dynamodb.Client, table, pk string) ([]map[string]types.AttributeValue, error) {
	var items []map[string]types.AttributeValue
	var esk map[string]types.AttributeValue
	for {
		out, err := c.Query(ctx, queryInput(table, pk, esk))
		if err != nil {
			return nil, err
		}
		items = append(items, out.Items...)
		if len(out.LastEvaluatedKey) == 0 {
			return items, nil
		}
		esk = out.LastEvaluatedKey
	}
}

func queryInput(table, pk string, esk map[string]types.AttributeValue) *dynamodb.QueryInput {
	return &dynamodb.QueryInput{
		TableName:                 aws.String(table),
		KeyConditionExpression:    aws.String("#pk = :pk"),
		ExpressionAttributeNames:  map[string]string{"#pk": "pk"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": &types.AttributeValueMemberS{Value: pk}},
		ExclusiveStartKey:         esk,
	}
}

func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
