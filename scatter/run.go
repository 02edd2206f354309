package scatter

import (
	"context"
	"fmt"
	"math"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"golang.org/x/sync/errgroup"

	"github.com/dynashard/dynashard/internal/keyorder"
)

// A run is one call's fan-out and merge. Only the goroutine that calls next
// touches its state; request goroutines see an immutable request and send
// one result back, so there are no locks. Each shard has at most one
// request in flight and at most two pages in memory: the one being merged
// and the next one, fetched ahead while the first drains.
type run struct {
	s       *Scatter
	p       *plan
	ctx     context.Context
	cancel  context.CancelFunc
	parent  context.Context // the caller's
	stop    <-chan struct{} // parent.Done(); nil if it never ends
	shards  []shardState
	limit   int // items still wanted; -1: no limit
	maxPgs  int // pages per shard; 0: no limit
	partial bool

	reqs         chan request
	results      chan result
	g            errgroup.Group
	dispatching  bool
	dispatchDone chan struct{}
	inflight     int

	started  bool
	desc     bool
	tree     []*shardState // ordered: the loser tree, see nextOrdered
	dirty    bool          // ordered: tree[0] was popped and needs its next head
	cur      *shardState   // unordered: the shard being drained
	ready    []*shardState // unordered: shards whose next page arrived, FIFO
	stopped  bool          // a shard needed a page beyond maxPgs
	kindSet  bool
	kind     keyorder.Kind
	failures []*ShardError
}

type shardState struct {
	ord      int
	items    []map[string]types.AttributeValue // current page
	i        int                               // next item in items
	keys     []keyorder.Key                    // sort keys of items (ordered)
	key      *keyorder.Key                     // &keys[i], or a zero Key without sort key
	lek      map[string]types.AttributeValue   // LastEvaluatedKey of the current page
	esk      map[string]types.AttributeValue   // ExclusiveStartKey of the next request
	pending  *result                           // next page, arrived but not installed
	inflight bool
	pages    int
	has      bool // ordered: items[i] is this shard's head in the tree
	done     bool // every item has been returned
	failed   bool
	// pos is what a cursor records: the last item returned, or the
	// LastEvaluatedKey of a page all of whose items have been returned
	// (which skips what the filter removed). Nil: not moved.
	pos map[string]types.AttributeValue
}

type request struct {
	ord int
	in  *dynamodb.QueryInput
}

type result struct {
	ord   int
	items []map[string]types.AttributeValue
	keys  []keyorder.Key // parsed where the page arrived, while it is in cache
	lek   map[string]types.AttributeValue
	err   error
}

func (s *Scatter) newRun(ctx context.Context, p *plan, from []position, limit, maxPages int) *run {
	parent := ctx
	ctx, cancel := context.WithCancel(ctx)
	n := len(p.suffixes)
	r := &run{
		s: s, p: p, ctx: ctx, cancel: cancel, parent: parent, stop: parent.Done(),
		shards:  make([]shardState, n),
		limit:   limit,
		maxPgs:  maxPages,
		partial: s.opts.Partial,
		desc:    p.desc,
		reqs:    make(chan request, n),
		results: make(chan result, n), // one request per shard at most: sends never block
	}
	r.g.SetLimit(s.concurrency(n))
	for i := range r.shards {
		r.shards[i].ord = i
	}
	for _, ps := range from {
		sh := &r.shards[ps.ord]
		if ps.done {
			sh.done = true
			continue
		}
		sh.esk = p.esk(ps.ord, ps.key)
		sh.pos = sh.esk
	}
	return r
}

// close cancels what is in flight and waits for every goroutine.
func (r *run) close() {
	r.cancel()
	if r.dispatching {
		close(r.reqs)
		<-r.dispatchDone
		r.g.Wait()
	}
}

func (r *run) dispatch() {
	defer close(r.dispatchDone)
	for req := range r.reqs {
		// Go blocks at the concurrency limit; the merge never does, since
		// reqs has room for one request per shard.
		r.g.Go(func() error {
			r.results <- r.fetch(req)
			return nil
		})
	}
}

func (r *run) fetch(req request) result {
	if err := r.ctx.Err(); err != nil {
		return result{ord: req.ord, err: r.shardErr(req.ord, err)}
	}
	out, err := r.s.c.Query(r.ctx, req.in)
	if err != nil {
		return result{ord: req.ord, err: r.shardErr(req.ord, err)}
	}
	r.s.addQuery(out)
	res := result{ord: req.ord, items: out.Items, lek: out.LastEvaluatedKey}
	if r.p.ordered && r.p.skAttr != "" {
		if res.keys, err = parseKeys(out.Items, r.p.skAttr); err != nil {
			return result{ord: req.ord, err: r.shardErr(req.ord, err)}
		}
	}
	return res
}

// parseKeys parses every item's sort key. The request goroutine does it,
// in parallel with the merge and while the fresh page is in cache, which
// leaves the merge comparing compact keys instead of looking them up in
// maps spread over memory.
func parseKeys(items []map[string]types.AttributeValue, attr string) ([]keyorder.Key, error) {
	keys := make([]keyorder.Key, len(items))
	for i, it := range items {
		v, ok := it[attr]
		if !ok {
			return nil, fmt.Errorf("scatter: item has no sort key attribute %q", attr)
		}
		k, err := keyorder.Parse(v)
		if err != nil {
			return nil, fmt.Errorf("scatter: sort key %q: %w", attr, err)
		}
		keys[i] = k
	}
	return keys, nil
}

func (r *run) shardErr(ord int, err error) *ShardError {
	return &ShardError{Suffix: r.p.suffixes[ord], Key: r.p.pks[ord], Err: err}
}

// launch sends the shard's next request, unless its page budget is spent.
func (r *run) launch(sh *shardState) bool {
	if r.maxPgs > 0 && sh.pages >= r.maxPgs {
		return false
	}
	if !r.dispatching {
		r.dispatching = true
		r.dispatchDone = make(chan struct{})
		go r.dispatch()
	}
	limit := r.p.q.PageSize
	if r.limit > 0 {
		// No shard can contribute more than the items still wanted.
		want := int32(min(r.limit, math.MaxInt32))
		if limit == 0 || want < limit {
			limit = want
		}
	}
	sh.pages++
	sh.inflight = true
	r.inflight++
	r.reqs <- request{ord: sh.ord, in: r.p.input(sh.ord, sh.esk, limit)}
	return true
}

// wait receives one result and parks it with its shard.
func (r *run) wait() error {
	select {
	case res := <-r.results:
		sh := &r.shards[res.ord]
		sh.inflight = false
		r.inflight--
		if res.err != nil {
			if err := r.ctx.Err(); err != nil {
				return err
			}
			if !r.partial {
				return res.err
			}
		}
		sh.pending = &res
		if !r.p.ordered {
			r.ready = append(r.ready, sh)
		}
		return nil
	case <-r.ctx.Done():
		return r.ctx.Err()
	}
}

// install makes the shard's pending page current. Call only when the
// current page is drained.
func (r *run) install(sh *shardState) {
	res := sh.pending
	sh.pending = nil
	if res.err != nil { // only under Options.Partial
		sh.failed = true
		r.failures = append(r.failures, res.err.(*ShardError))
		return
	}
	sh.items, sh.keys, sh.i, sh.lek = res.items, res.keys, 0, res.lek
	if res.lek == nil {
		if len(res.items) == 0 {
			sh.done = true
		}
		return
	}
	sh.esk = res.lek
	if len(res.items) == 0 {
		sh.pos = res.lek // everything up to here was filtered out
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
	if r.stop != nil {
		// Items already fetched are not worth returning after a cancel.
		select {
		case <-r.stop:
			return Item{}, false, r.parent.Err()
		default:
		}
	}
	if !r.started {
		r.started = true
		for i := range r.shards {
			if sh := &r.shards[i]; !sh.done {
				if !r.launch(sh) {
					r.stopped = true
				}
			}
		}
	}
	var sh *shardState
	var err error
	if r.p.ordered {
		sh, err = r.nextOrdered()
	} else {
		sh, err = r.nextUnordered()
	}
	if err != nil || sh == nil {
		return Item{}, false, err
	}
	it := sh.items[sh.i]
	sh.i++
	sh.pos = it
	if sh.i == len(sh.items) {
		sh.items, sh.keys, sh.i = nil, nil, 0
		if sh.lek != nil {
			sh.pos = sh.lek
		} else {
			sh.done = true
		}
	}
	if r.limit > 0 {
		r.limit--
	}
	return Item{Suffix: r.p.suffixes[sh.ord], Attrs: it}, true, nil
}

// head makes sure the shard's current item is available, fetching and
// waiting as needed. False means the shard has no more items in this run.
func (r *run) head(sh *shardState) (bool, error) {
	for {
		if sh.done || sh.failed {
			return false, nil
		}
		if sh.i < len(sh.items) {
			if r.p.ordered {
				if err := r.parseKey(sh); err != nil {
					return false, err
				}
			}
			return true, nil
		}
		if sh.pending != nil {
			r.install(sh)
			continue
		}
		if !sh.inflight && !r.launch(sh) {
			r.stopped = true
			return false, nil
		}
		if err := r.wait(); err != nil {
			return false, err
		}
	}
}

var noKey keyorder.Key

// parseKey makes the shard's current item's key its head key.
func (r *run) parseKey(sh *shardState) error {
	if r.p.skAttr == "" {
		sh.key = &noKey // no sort key: all equal, suffix decides
		return nil
	}
	k := &sh.keys[sh.i]
	if !r.kindSet {
		r.kind, r.kindSet = k.Kind(), true
	} else if k.Kind() != r.kind {
		return r.shardErr(sh.ord, fmt.Errorf("scatter: sort key %q is %c, other shards have %c", r.p.skAttr, k.Kind(), r.kind))
	}
	sh.key = k
	return nil
}

// nextOrdered merges with a loser tree (tournament): each item costs
// exactly ⌈log2 N⌉ comparisons, half of what a binary heap needs.
// tree[0] is the shard with the smallest head; tree[i] for i ≥ 1 is the
// loser of the match at internal node i, whose children are 2i and 2i+1;
// shard j is the leaf N+j.
func (r *run) nextOrdered() (*shardState, error) {
	if r.tree == nil {
		for i := range r.shards {
			sh := &r.shards[i]
			ok, err := r.head(sh)
			if err != nil {
				return nil, err
			}
			sh.has = ok
		}
		r.build()
	} else if r.dirty {
		r.dirty = false
		w := r.tree[0]
		ok, err := r.head(w)
		if err != nil {
			return nil, err
		}
		w.has = ok
		r.replay(w)
	}
	// A shard that cannot be read further may hold the next item: stop.
	if w := r.tree[0]; !r.stopped && w.has {
		r.dirty = true
		return w, nil
	}
	return nil, nil
}

func (r *run) build() {
	k := len(r.shards)
	r.tree = make([]*shardState, k)
	win := make([]*shardState, 2*k)
	for i := range r.shards {
		win[k+i] = &r.shards[i]
	}
	for i := k - 1; i >= 1; i-- {
		a, b := win[2*i], win[2*i+1]
		if r.less(b, a) {
			a, b = b, a
		}
		win[i], r.tree[i] = a, b
	}
	r.tree[0] = win[1] // with one shard, leaf 1 is shard 0 itself
}

// replay re-runs the matches on the path of shard w, whose head changed.
func (r *run) replay(w *shardState) {
	t := r.tree
	for i := (len(t) + w.ord) / 2; i >= 1; i /= 2 {
		if r.less(t[i], w) {
			t[i], w = w, t[i]
		}
	}
	t[0] = w
}

// less orders shards by their head items: sort key, then suffix, both
// reversed when descending (so a descending result is the reverse of the
// ascending one); a shard without a head sorts last.
func (r *run) less(a, b *shardState) bool {
	if !a.has {
		return false
	}
	if !b.has {
		return true
	}
	// Keys hold their order-preserving prefix words, parsed with the page,
	// so this rarely reads the items themselves.
	c := a.key.Compare(b.key)
	if c == 0 {
		c = a.ord - b.ord
	}
	if r.desc {
		return c > 0
	}
	return c < 0
}

func (r *run) nextUnordered() (*shardState, error) {
	for {
		if c := r.cur; c != nil {
			if c.i < len(c.items) {
				return c, nil
			}
			r.cur = nil
			if c.pending != nil {
				r.install(c)
				if c.i < len(c.items) {
					r.cur = c
					continue
				}
			}
			r.refill(c)
		}
		if len(r.ready) > 0 {
			sh := r.ready[0]
			r.ready = r.ready[1:]
			if sh.pending == nil || sh == r.cur {
				continue // installed already, or arrived while its page drains
			}
			r.install(sh)
			if sh.i < len(sh.items) {
				r.cur = sh
			} else {
				r.refill(sh)
			}
			continue
		}
		if r.inflight == 0 {
			return nil, nil
		}
		if err := r.wait(); err != nil {
			return nil, err
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

// cursor records every shard's position; "" when all are finished.
func (r *run) cursor() (Cursor, error) {
	var pos []position
	all := true
	for i := range r.shards {
		sh := &r.shards[i]
		if !sh.done {
			all = false
		}
		switch {
		case sh.done:
			pos = append(pos, position{ord: i, done: true})
		case sh.pos != nil:
			key := make([]types.AttributeValue, len(r.p.keyAttrs))
			for j, a := range r.p.keyAttrs {
				v, ok := sh.pos[a]
				if !ok {
					return "", r.shardErr(i, fmt.Errorf("scatter: item has no key attribute %q to resume from", a))
				}
				key[j] = v
			}
			pos = append(pos, position{ord: i, key: key})
		}
	}
	if all {
		return "", nil
	}
	return encodeCursor(r.p, pos, r.s.opts.CursorKey)
}

func (r *run) partialErr() error { return partialError(r.failures) }

// partialError is nil without failures, else a *PartialError.
func partialError(failures []*ShardError) error {
	if len(failures) == 0 {
		return nil
	}
	errs := append([]*ShardError(nil), failures...)
	// Suffix order, whatever order they failed in.
	for i := 1; i < len(errs); i++ {
		for j := i; j > 0 && errs[j].Suffix < errs[j-1].Suffix; j-- {
			errs[j], errs[j-1] = errs[j-1], errs[j]
		}
	}
	return &PartialError{Errs: errs}
}
