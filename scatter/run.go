package scatter

import (
	"context"
	"math"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynashard/dynashard/internal/adapt"
	"github.com/dynashard/dynashard/internal/keyorder"
)

// A run is one call's fan-out and merge. Only the goroutine that calls next
// touches its state; request goroutines see an immutable request and send
// one result back, so there are no locks. Each shard has at most one
// request in flight and at most two pages in memory: the one being merged
// and the next one, fetched ahead while the first drains. The merge order
// is the merger's (merge.go); the request goroutines' side is in fetch.go,
// and the cursor is made in runcursor.go.
type run struct {
	s      *Scatter
	p      *plan
	ctx    context.Context // cancelled by close
	cancel context.CancelFunc
	parent context.Context // the caller's
	done   <-chan struct{} // parent.Done(), looked up once
	fan    fanout
	lim    *adapt.Limiter // the fan-out's limit on requests in flight
	learnt bool           // lim started at the Scatter's learned limit
	m      merger
	shards []shardState
	from   *position // the cursor's default position; nil: the beginning
	fromID struct {  // how the cursor names the item at from (see resumedItem)
		digest uint64 // itemDigest, if ok
		ok     bool
		byKey  bool // by its sort key
	}
	resuming bool  // an ordered run from an item's position: see resumedItem
	seen     seen  // what an unordered run remembers (copies.go)
	equal    equal // what an ordered run under Random remembers (copies.go)

	tmpl     *dynamodb.QueryInput // what every request without a rendered range shares (see query)
	limit    int                  // items still wanted; -1: no limit
	maxPgs   int                  // pages per shard; 0: no limit
	started  bool
	probing  bool // more: one request per shard at most
	stopped  bool // a shard needed a page it may not read
	spent    bool // a shard needed a page beyond maxPgs
	last     *shardState
	lastItem map[string]types.AttributeValue
	failures []*ShardError
}

type shardState struct {
	ord   int
	start *position // where the shard resumes (nil: the beginning)
	rng   *keyRange // its requests read this range (see plan.start)
	esk   map[string]types.AttributeValue

	items []map[string]types.AttributeValue // current page
	i     int                               // next item in items
	words [][3]uint64                       // prefixes of items' sort keys, for an ordered merge
	kind  keyorder.Kind                     // of the items' sort keys, for an ordered merge
	spare page                              // a drained page's space, for the next request to fill
	lek   map[string]types.AttributeValue   // LastEvaluatedKey of the current page

	vals     map[string]types.AttributeValue // its requests' ExpressionAttributeValues, without a rendered range
	in       dynamodb.QueryInput             // its request, without a rendered range (one in flight at a time)
	limitBuf int32                           // its request's Limit, pointed to by the request
	pending  *result                         // next page, arrived but not installed: &arrival or nil
	arrival  result                          // where the next page is parked (a shard has one at a time)
	inflight bool
	pages    int
	probed   bool
	done     bool // read to its end and drained
	failed   bool
	// pos is the last item returned; readTo the LastEvaluatedKey of a page
	// all of whose items were returned or filtered out. Nil: not moved.
	pos, readTo map[string]types.AttributeValue
}

func (s *Scatter) newRun(ctx context.Context, p *plan, from resume, limit, maxPages int) *run {
	parent := ctx
	ctx, cancel := context.WithCancel(ctx)
	n := len(p.suffixes)
	r := &run{
		s: s, p: p, ctx: ctx, cancel: cancel, parent: parent, done: parent.Done(),
		m:      newMerger(p),
		shards: make([]shardState, n),
		from:   from.def,
		limit:  limit,
		maxPgs: maxPages,
	}
	r.fromID.digest, r.fromID.ok, r.fromID.byKey = from.digest, from.hasDigest, from.byKey
	r.resuming = p.ordered && from.def != nil && p.skIndex >= 0
	r.lim, r.learnt = s.limiter(concurrency(p.o, n))
	r.fan.init(n, r.lim, s.backedOff, r.fetch)
	for i := range r.shards {
		sh := &r.shards[i]
		sh.ord = i
		if from.starts != nil {
			sh.start = from.starts[i]
		}
		st := p.start(i, sh.start)
		sh.done, sh.esk, sh.rng = st.none, st.esk, st.rng
	}
	return r
}

// close cancels what is in flight and waits for every goroutine.
func (r *run) close() {
	r.cancel()
	r.fan.wait()
	r.s.settle(r.ctx, r.lim, r.learnt)
}

func (r *run) shardErr(ord int, err error) *ShardError {
	return &ShardError{Suffix: r.p.suffixes[ord], Key: r.p.pks[ord], Err: err}
}

// launch sends the shard's next request, unless its page budget is spent.
func (r *run) launch(sh *shardState) bool {
	if r.maxPgs > 0 && sh.pages >= r.maxPgs {
		r.spent = true
		return false
	}
	if r.probing && sh.probed {
		return false
	}
	sh.probed = r.probing
	limit := r.pageLimit(sh.pages)
	sh.pages++
	sh.inflight = true
	r.fan.send(request{ord: sh.ord, in: r.query(sh, limit), rng: sh.rng, buf: sh.spare})
	sh.spare = page{}
	return true
}

// query returns the shard's next Query. Requests without a rendered range
// share the run's template (table, expressions, names) and the shard's
// values, which the SDK only reads, so a request allocates only its
// QueryInput. The Limit points into the shard's state: a shard has one
// request at a time, and the next one is made after the last returned.
func (r *run) query(sh *shardState, limit int32) *dynamodb.QueryInput {
	if sh.rng != nil {
		return r.p.input(sh.ord, sh.esk, sh.rng, limit)
	}
	if sh.vals == nil {
		in := r.p.input(sh.ord, nil, nil, 0)
		sh.vals = in.ExpressionAttributeValues
		if r.tmpl == nil {
			r.tmpl = in
		}
	}
	in := &sh.in
	*in = *r.tmpl
	in.ExpressionAttributeValues, in.ExclusiveStartKey = sh.vals, sh.esk
	if limit > 0 {
		sh.limitBuf = limit
		in.Limit = &sh.limitBuf
	}
	return in
}

// pageLimit is the Limit of a shard's request after sent earlier ones:
// Options.PageSize if set; for Page, one item more than the page still
// needs, so that a shard that can fill the page also tells whether
// anything follows; for All (and Count's merge), growing pages (see
// growPage), unless a Filter is set: DynamoDB counts Limit before
// filtering, so small pages would multiply the requests a selective filter
// needs, and filtered reads ask for DynamoDB's 1 MB page throughout.
func (r *run) pageLimit(sent int) int32 {
	limit := r.p.o.PageSize
	if r.limit >= 0 {
		want := int32(min(r.limit, math.MaxInt32-1) + 1)
		if limit == 0 || want < limit {
			limit = want
		}
		return limit
	}
	if limit == 0 && r.p.filter == "" {
		limit = growPage(sent, len(r.shards))
	}
	return limit
}

// wait receives one result and parks it with its shard.
func (r *run) wait() error {
	res, err := r.fan.receive(r.ctx)
	if err != nil {
		return err
	}
	sh := &r.shards[res.ord]
	sh.inflight = false
	if res.err != nil {
		if err := r.ctx.Err(); err != nil {
			return err
		}
		if !r.p.o.Partial {
			return res.err
		}
	}
	sh.arrival = res
	sh.pending = &sh.arrival
	r.m.arrived(sh)
	return nil
}

// install makes the shard's pending page current. Call only when the
// current page is drained.
func (r *run) install(sh *shardState) {
	res := *sh.pending
	sh.pending, sh.arrival = nil, result{}
	if res.err != nil { // only under Options.Partial
		sh.failed = true
		r.failures = append(r.failures, res.err.(*ShardError))
		return
	}
	sh.items, sh.words, sh.kind, sh.i, sh.lek = res.items, res.words, res.kind, 0, res.lek
	sh.spare.keys = res.keys[:0] // parsed for clipping only: space for the next page
	if res.lek == nil {
		sh.done = len(res.items) == 0
		return
	}
	sh.esk = res.lek
	if len(res.items) == 0 {
		sh.readTo = res.lek // everything up to here was filtered out
	}
	if r.limit < 0 || len(res.items) < r.limit {
		r.launch(sh) // fetch ahead; if the budget is spent, head will find out
	}
}

// next returns the next item in merged order, or false at the end (or
// when Page's limit or page budget stops the run).
func (r *run) next() (Item, bool, error) {
	if r.limit == 0 {
		return Item{}, false, nil
	}
	select {
	case <-r.done:
		// Items already fetched are not worth returning after a cancel.
		return Item{}, false, r.parent.Err()
	default:
	}
	if !r.started {
		r.started = true
		for i := range r.shards {
			if sh := &r.shards[i]; !sh.done && !r.launch(sh) {
				r.stopped = true
			}
		}
	}
	sh, err := r.m.next(r)
	if err != nil || sh == nil {
		return Item{}, false, err
	}
	return r.take(sh), true, nil
}

// take returns the shard's current item and moves past it.
func (r *run) take(sh *shardState) Item {
	it := sh.items[sh.i]
	sh.items[sh.i] = nil // the caller's now: the page no longer holds it
	sh.i++
	sh.pos = it
	r.last, r.lastItem = sh, it
	if sh.i == len(sh.items) {
		sh.spare.items, sh.spare.words = sh.items[:0], sh.words[:0]
		sh.items, sh.words, sh.i = nil, nil, 0
		if sh.lek != nil {
			sh.readTo = sh.lek
		} else {
			sh.done = true
		}
	}
	if r.limit > 0 {
		r.limit--
	}
	return Item{Suffix: r.p.suffixes[sh.ord], Attrs: it}
}

// head makes sure the shard's current item is available, fetching and
// waiting as needed. False means the shard has no more items in this run.
func (r *run) head(sh *shardState) (bool, error) {
	for {
		switch {
		case sh.done || sh.failed:
			return false, nil
		case sh.i < len(sh.items):
			return true, nil
		case sh.pending != nil:
			r.install(sh)
		case sh.inflight:
			if err := r.wait(); err != nil {
				return false, err
			}
		case !r.launch(sh):
			r.stopped = true
			return false, nil
		}
	}
}

// refill requests a drained shard's next page if it has one and none is
// on its way.
func (r *run) refill(sh *shardState) {
	if sh.done || sh.failed || sh.pending != nil || sh.inflight {
		return
	}
	if !r.launch(sh) {
		r.stopped = true
	}
}

// more reports whether anything follows the items returned, once Page has
// its limit. Usually every shard's next item is in memory already (each
// was asked for one item more than the page needed), so this reads
// nothing; a shard whose page ran out gets one more request at most.
func (r *run) more() (bool, error) {
	for i := range r.shards {
		if sh := &r.shards[i]; sh.i < len(sh.items) {
			return true, nil
		}
	}
	r.probing = true
	for i := range r.shards {
		if ok, err := r.head(&r.shards[i]); ok || err != nil {
			return ok, err
		}
	}
	return r.stopped, nil
}

// Growing pages: what All asks of each shard at the default PageSize.
const (
	// firstPage is the Limit of each shard's first Query: small, so that
	// every shard's first page, which the ordered merge needs before its
	// first item, comes back after about one round trip, and large enough
	// that a shard of a hundred items is read in one Query.
	firstPage = 100
	// Each later Query asks for growFactor times the one before, up to
	// pageCap(N) items.
	growFactor = 4
	// pageBudget and minPageCap set pageCap: a call holds at most two
	// pages per shard, so at most 2 × max(pageBudget, N × minPageCap) items.
	pageBudget = 32768
	minPageCap = 256
)

// pageCap is the most items a Query of a call over n shards asks for.
func pageCap(n int) int { return max(minPageCap, pageBudget/max(n, 1)) }

// growPage is the Limit of a shard's request after sent earlier ones, in
// a call over n shards.
func growPage(sent, n int) int32 {
	size, limit := firstPage, pageCap(n)
	for range sent {
		if size *= growFactor; size >= limit {
			return int32(limit)
		}
	}
	return int32(min(size, limit))
}
