package shard

import (
	"context"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynashard/dynashard/internal/attempts"
	"github.com/dynashard/dynashard/internal/backoff"
	"github.com/dynashard/dynashard/internal/observe"
	"github.com/dynashard/dynashard/internal/record"
)

// GrowOptions configures a [Grower]. The zero value of every field is its
// documented default.
type GrowOptions struct {
	// Window is the span over which a base's write attempts and throttles
	// are added up before they are judged. Zero means 1 s.
	Window time.Duration
	// Threshold is the share of a window's write attempts that came back
	// throttled (an SDK attempt that failed with a throttling error, or an
	// item BatchWriteItem left unprocessed) above which the window is hot.
	// Zero means 0.05.
	Threshold float64
	// MinAttempts is the attempts a window needs to be judged at all; a
	// quieter window is neither hot nor cold. Zero means 20.
	MinAttempts int
	// Sustain is the hysteresis: the number of consecutive hot windows
	// that grows a base. A window that is not hot (too few attempts to be
	// judged, or too few throttled) breaks the run, so bursts separated
	// by quiet windows change nothing.
	// Zero means 3.
	Sustain int
	// Factor multiplies N on each grow. Zero means 2, which keeps half of
	// a Hash base's items on their suffix and so makes the cheapest Get
	// probe (see Table.Reshard).
	Factor int
	// MaxN caps the N a grow reaches. Zero means 256.
	MaxN int
	// Cooldown is how long after a grow a base is not grown again, while
	// writers pick up the new N. Zero means Sustain windows.
	Cooldown time.Duration
	// ShrinkBelow, if positive, makes the Grower recommend (never apply)
	// a smaller N for a base whose windows stay unthrottled with fewer
	// than ShrinkBelow write attempts per second per shard, for Sustain
	// windows in a row: such a base pays N Queries per read for writes
	// that fewer shards would carry. Zero: no recommendation.
	ShrinkBelow float64
	// Now returns the current time; nil means time.Now. Tests set it to
	// drive windows without waiting.
	Now func() time.Time
	// OnDecision, if set, is called with every decision, from the
	// goroutine of the write that led to it; it must return quickly.
	OnDecision func(Decision)
}

// DecisionKind says what a [Grower] decided.
type DecisionKind int

const (
	// Grow: the base was resharded from From to To.
	Grow DecisionKind = iota + 1
	// GrowFailed: the Reshard from From to To failed with Err; the base
	// is judged again after Cooldown.
	GrowFailed
	// RecommendShrink: the base would do with To shards instead of From;
	// nothing was changed. The saving is on reads: an exact read of the
	// whole base is one Query per shard, each charged at least half a
	// read unit, so From shards cost at least From/2 read units per page
	// and To shards To/2 (see "What a page costs" in package scatter).
	RecommendShrink
)

func (k DecisionKind) String() string {
	switch k {
	case Grow:
		return "grow"
	case GrowFailed:
		return "grow failed"
	case RecommendShrink:
		return "recommend shrink"
	}
	return fmt.Sprintf("DecisionKind(%d)", int(k))
}

// Decision is one decision of a [Grower], with the window that led to it.
type Decision struct {
	Kind      DecisionKind
	Base      string
	From, To  int
	Attempts  int // write attempts in the deciding window
	Throttled int // of which throttled or unprocessed
	At        time.Time
	Err       error // GrowFailed only
}

// GrowStats counts a [Grower]'s observations and decisions.
type GrowStats struct {
	Attempts, Throttled int // write attempts observed, and throttled ones
	HotWindows          int // windows judged hot
	Grows, Failed       int // Grow and GrowFailed decisions
	Shrinks             int // RecommendShrink decisions
}

// Grower is the auto-grow policy, off unless set as a Table's
// Options.Grower: it watches each base's write attempts and throttles as
// the Table's Put, Update and Load see them (every SDK attempt, and every
// item BatchWriteItem leaves unprocessed), and when Sustain windows in a
// row are hot it reshards the base to Factor times its N (up to MaxN) with
// [Table.Reshard], from the goroutine of the write that closed the last
// window. Every decision is counted in Stats and passed to OnDecision. A
// Grower keeps a little state per base and judges bases by name, so use
// one per table. It is safe for concurrent use.
type Grower struct {
	o     GrowOptions
	mu    sync.Mutex
	bases map[string]*baseWatch
	stats GrowStats
}

type baseWatch struct {
	start               time.Time
	attempts, throttled int
	hot, cold           int // windows in a row
	quietUntil          time.Time
}

// NewGrower returns a Grower with the options optFns set. It returns an
// error matching ErrInvalid for a negative field, a NaN Threshold or
// ShrinkBelow, a Threshold above 1, an infinite ShrinkBelow, a Factor of
// 1, or a MaxN above [MaxN].
func NewGrower(optFns ...func(*GrowOptions)) (*Grower, error) {
	var o GrowOptions
	for _, f := range optFns {
		if f != nil {
			f(&o)
		}
	}
	switch {
	case math.IsNaN(o.Threshold), math.IsNaN(o.ShrinkBelow):
		return nil, fmt.Errorf("%w: NewGrower: Threshold %v, ShrinkBelow %v: NaN compares false with every share and rate", ErrInvalid, o.Threshold, o.ShrinkBelow)
	case math.IsInf(o.ShrinkBelow, 1):
		return nil, fmt.Errorf("%w: NewGrower: ShrinkBelow %v: every unthrottled window would count as cold", ErrInvalid, o.ShrinkBelow)
	case o.Window < 0, o.Threshold < 0, o.MinAttempts < 0, o.Sustain < 0, o.Factor < 0, o.MaxN < 0, o.Cooldown < 0, o.ShrinkBelow < 0:
		return nil, fmt.Errorf("%w: NewGrower: negative option in %+v", ErrInvalid, o)
	case o.Threshold > 1:
		return nil, fmt.Errorf("%w: NewGrower: Threshold %v above 1", ErrInvalid, o.Threshold)
	case o.Factor == 1:
		return nil, fmt.Errorf("%w: NewGrower: Factor 1 never grows", ErrInvalid)
	case o.MaxN > MaxN:
		return nil, fmt.Errorf("%w: NewGrower: MaxN %d above %d", ErrInvalid, o.MaxN, MaxN)
	}
	if o.Window == 0 {
		o.Window = time.Second
	}
	if o.Threshold == 0 {
		o.Threshold = 0.05
	}
	if o.MinAttempts == 0 {
		o.MinAttempts = 20
	}
	if o.Sustain == 0 {
		o.Sustain = 3
	}
	if o.Factor == 0 {
		o.Factor = 2
	}
	if o.MaxN == 0 {
		o.MaxN = 256
	}
	if o.Cooldown == 0 {
		o.Cooldown = time.Duration(o.Sustain) * o.Window
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Grower{o: o, bases: map[string]*baseWatch{}}, nil
}

// Stats returns the totals so far.
func (g *Grower) Stats() GrowStats {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.stats
}

// observe adds attempts and throttled ones of base, whose newest N is n,
// and returns the N to grow it to (0: none) and the decisions made.
func (g *Grower) observe(base string, n, attempts, throttled int) (int, []Decision) {
	now := g.o.Now()
	g.mu.Lock()
	defer g.mu.Unlock()
	g.stats.Attempts += attempts
	g.stats.Throttled += throttled
	w := g.bases[base]
	if w == nil {
		if len(g.bases) >= 1<<12 {
			clear(g.bases)
		}
		w = &baseWatch{start: now}
		g.bases[base] = w
	}
	var out []Decision
	grow := 0
	for now.Sub(w.start) >= g.o.Window {
		if d, to := g.judge(base, n, w); d != nil {
			out = append(out, *d)
			if d.Kind == Grow {
				grow = to
			}
		}
		w.start = w.start.Add(g.o.Window)
		w.attempts, w.throttled = 0, 0
		if now.Sub(w.start) >= g.o.Window { // idle windows since: not hot
			w.hot, w.cold = 0, 0
			w.start = now
		}
	}
	w.attempts += attempts
	w.throttled += throttled
	return grow, out
}

// judge closes base's current window; a non-nil decision is what it led
// to (Grow's Kind is provisional until the Reshard is done).
func (g *Grower) judge(base string, n int, w *baseWatch) (*Decision, int) {
	end := w.start.Add(g.o.Window)
	if w.attempts < g.o.MinAttempts { // a quiet window breaks a run
		w.hot, w.cold = 0, 0
		return nil, 0
	}
	d := &Decision{Base: base, From: n, Attempts: w.attempts, Throttled: w.throttled, At: end}
	if float64(w.throttled) > g.o.Threshold*float64(w.attempts) {
		g.stats.HotWindows++
		w.hot++
		w.cold = 0
		if w.hot < g.o.Sustain || end.Before(w.quietUntil) || n >= g.o.MaxN {
			return nil, 0
		}
		w.hot = 0
		w.quietUntil = end.Add(g.o.Cooldown)
		d.Kind, d.To = Grow, min(n*g.o.Factor, g.o.MaxN)
		return d, d.To
	}
	w.hot = 0
	perShard := float64(w.attempts) / g.o.Window.Seconds() / float64(n)
	if w.throttled > 0 || g.o.ShrinkBelow <= 0 || perShard >= g.o.ShrinkBelow || n == 1 {
		w.cold = 0
		return nil, 0
	}
	w.cold++
	if w.cold < g.o.Sustain || end.Before(w.quietUntil) {
		return nil, 0
	}
	w.cold = 0
	w.quietUntil = end.Add(g.o.Cooldown)
	g.stats.Shrinks++
	d.Kind, d.To = RecommendShrink, max(1, n/g.o.Factor)
	return d, 0
}

// report feeds the Table's Grower, if any, with a write's outcome, and
// carries out a grow it decides.
func (t *Table[T]) report(ctx context.Context, base string, attempts, throttled int) {
	g := t.opts.Grower
	if g == nil || attempts == 0 {
		return
	}
	n := t.l.N()
	if v, ok := t.rec.Newest(record.Database(ctx, t.c), base); ok {
		n = v.WriteN()
		if v.Pending { // a grow is under way: count, judge nothing
			g.mu.Lock()
			g.stats.Attempts += attempts
			g.stats.Throttled += throttled
			g.mu.Unlock()
			return
		}
	}
	to, decisions := g.observe(base, n, attempts, throttled)
	for _, d := range decisions {
		if d.Kind == Grow && to > 0 {
			if err := t.grow(ctx, base, to); err != nil {
				d.Kind, d.Err = GrowFailed, err
			}
		}
		t.obs.Grow(ctx, t.l.Table, growKind(d.Kind), d.To)
		g.mu.Lock()
		switch d.Kind {
		case Grow:
			g.stats.Grows++
		case GrowFailed:
			g.stats.Failed++
		}
		g.mu.Unlock()
		if g.o.OnDecision != nil {
			g.o.OnDecision(d)
		}
	}
}

// grow is a Grower's grow of base to n, a logical call of its own
// ("shard.Grow", within the write that decided it): it announces the
// count and returns; the writers of the base make it theirs once the
// fence has passed (activateDue).
func (t *Table[T]) grow(ctx context.Context, base string, n int) (err error) {
	ctx, call := t.begin(ctx, "shard.Grow", base)
	defer func() { call.End(ctx, err) }()
	call.SetInt(observe.AttrShardsTo, n)
	_, err = t.l.reshard(ctx, t.c, base, n)
	return err
}

// reportAttempts reports what a's request saw; a client that ignores
// per-request options counts as one attempt, throttled if err is.
func (t *Table[T]) reportAttempts(ctx context.Context, base string, a *attempts.Counter, err error) {
	if t.opts.Grower == nil {
		return
	}
	sent, throttled := a.Counts()
	if sent == 0 {
		sent = 1
		if backoff.IsThrottle(err) {
			throttled = 1
		}
	}
	t.report(ctx, base, sent, throttled)
}

// perBase counts the table's write requests by base.
func (t *Table[T]) perBase(reqs map[string][]types.WriteRequest) map[string]int {
	out := map[string]int{}
	for _, r := range reqs[t.l.Table] {
		var item map[string]types.AttributeValue
		switch {
		case r.PutRequest != nil:
			item = r.PutRequest.Item
		case r.DeleteRequest != nil:
			item = r.DeleteRequest.Key
		}
		if base, _, err := t.l.Codec.Parse(keyString(item[t.l.PartitionKey])); err == nil {
			out[base]++
		}
	}
	return out
}
