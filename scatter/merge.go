package scatter

import (
	"fmt"

	"github.com/dynashard/dynashard/internal/keyorder"
)

// A merger decides which shard's current item comes next.
type merger interface {
	// next returns the shard whose current item comes next, fetching as
	// needed, or nil when the run has nothing more to return.
	next(r *run) (*shardState, error)
	// arrived tells that a page of sh has arrived (run.wait).
	arrived(sh *shardState)
}

func newMerger(p *plan) merger {
	if p.ordered {
		return &ordered{desc: p.desc, skAttr: p.skAttr}
	}
	return &unordered{}
}

// ordered merges with a loser tree (tournament): each item costs exactly
// ⌈log2 N⌉ comparisons, half of what a binary heap needs. tree[0] is the
// ordinal of the shard with the smallest head; tree[i] for i ≥ 1 is the
// loser of the match at internal node i, whose children are 2i and 2i+1;
// shard j is the leaf N+j. The matches compare heads, a dense copy of each
// shard's head key (parsed by the request goroutine), so that a replay
// touches N small entries and no shard state or page.
type ordered struct {
	desc   bool
	skAttr string
	tree   []int32
	heads  []head
	dirty  bool          // tree[0] was taken from and needs its next head
	kind   keyorder.Kind // of the sort keys seen; 0 before the first
}

// head is a shard's current item's sort key, if it has a current item.
type head struct {
	key keyorder.Key // zero without a sort key: all equal, suffix decides
	has bool
}

func (o *ordered) arrived(*shardState) {}

func (o *ordered) next(r *run) (*shardState, error) {
	if o.tree == nil {
		o.heads = make([]head, len(r.shards))
		for i := range r.shards {
			if err := o.refresh(r, &r.shards[i]); err != nil {
				return nil, err
			}
		}
		o.build()
	} else if o.dirty {
		o.dirty = false
		w := o.tree[0]
		if err := o.refresh(r, &r.shards[w]); err != nil {
			return nil, err
		}
		o.replay(w)
	}
	// A shard that cannot be read further may hold the next item: stop.
	if w := o.tree[0]; !r.stopped && o.heads[w].has {
		o.dirty = true
		return &r.shards[w], nil
	}
	return nil, nil
}

// refresh finds the shard's head item and its key.
func (o *ordered) refresh(r *run, sh *shardState) error {
	h := &o.heads[sh.ord]
	ok, err := r.head(sh)
	if ok && err == nil && o.skAttr != "" {
		err = o.headKey(r, sh, h)
	}
	h.has = ok && err == nil
	return err
}

// headKey makes the shard's current item's key its head key.
func (o *ordered) headKey(r *run, sh *shardState, h *head) error {
	k := &sh.keys[sh.i]
	if o.kind == 0 {
		o.kind = k.Kind()
	} else if k.Kind() != o.kind {
		return r.shardErr(sh.ord, fmt.Errorf("scatter: sort key %q is %c, other shards have %c", o.skAttr, k.Kind(), o.kind))
	}
	h.key = *k
	return nil
}

func (o *ordered) build() {
	k := len(o.heads)
	o.tree = make([]int32, k)
	win := make([]int32, 2*k)
	for i := range k {
		win[k+i] = int32(i)
	}
	for i := k - 1; i >= 1; i-- {
		a, b := win[2*i], win[2*i+1]
		if o.less(b, a) {
			a, b = b, a
		}
		win[i], o.tree[i] = a, b
	}
	o.tree[0] = win[1] // with one shard, leaf 1 is shard 0 itself
}

// replay re-runs the matches on the path of shard w, whose head changed.
func (o *ordered) replay(w int32) {
	t := o.tree
	for i := (len(t) + int(w)) / 2; i >= 1; i /= 2 {
		if o.less(t[i], w) {
			t[i], w = w, t[i]
		}
	}
	t[0] = w
}

// less orders shards by their head items: sort key, then suffix, both
// reversed when descending (so a descending result is the reverse of the
// ascending one); a shard without a head sorts last.
func (o *ordered) less(a, b int32) bool {
	ha, hb := &o.heads[a], &o.heads[b]
	if !ha.has {
		return false
	}
	if !hb.has {
		return true
	}
	c := 0
	if o.skAttr != "" {
		// Keys hold their order-preserving prefix words, so this rarely
		// reads the items themselves.
		c = ha.key.Compare(&hb.key)
	}
	if c == 0 {
		c = int(a - b)
	}
	if o.desc {
		return c > 0
	}
	return c < 0
}

// unordered returns items as pages arrive: it drains one shard's page at
// a time, then the next page to have arrived.
type unordered struct {
	cur   *shardState   // the shard being drained
	ready []*shardState // shards whose next page arrived, in arrival order
}

func (u *unordered) arrived(sh *shardState) { u.ready = append(u.ready, sh) }

func (u *unordered) next(r *run) (*shardState, error) {
	for {
		switch c := u.cur; {
		case c != nil && c.i < len(c.items):
			return c, nil
		case c != nil:
			u.cur = nil
			u.take(r, c)
		case len(u.ready) > 0:
			sh := u.ready[0]
			u.ready = u.ready[1:]
			if sh.pending != nil { // else installed already, as cur
				u.take(r, sh)
			}
		case r.fan.outstanding == 0:
			return nil, nil
		default:
			if err := r.wait(); err != nil {
				return nil, err
			}
		}
	}
}

// take makes a drained shard current if its next page has arrived with
// items, and otherwise requests that page.
func (u *unordered) take(r *run, sh *shardState) {
	if sh.pending != nil {
		r.install(sh)
		if sh.i < len(sh.items) {
			u.cur = sh
			return
		}
	}
	r.refill(sh)
}
