package scatter

import (
	"fmt"
	"math"

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
// shard's head key's prefix words (parsed by the request goroutine), so
// that a replay touches N small entries and no shard state or page.
type ordered struct {
	desc   bool
	skAttr string
	shards []shardState // the run's, for ties
	tree   []int32
	heads  []head
	dirty  bool          // tree[0] was taken from and needs its next head
	kind   keyorder.Kind // of the sort keys seen; 0 before the first
}

// head is a shard's current item's sort-key prefix, complemented when
// descending so that every match compares upward, if it has a current item.
type head struct {
	w   [3]uint64 // zero without a sort key: all equal, suffix decides
	has bool
}

func (o *ordered) arrived(*shardState) {}

func (o *ordered) next(r *run) (*shardState, error) {
	if o.tree == nil {
		o.shards = r.shards
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
	ok, err := sh.i < len(sh.items), error(nil) // most often the page has more
	if !ok {
		ok, err = r.head(sh)
	}
	if ok && err == nil && o.skAttr != "" {
		err = o.headKey(r, sh, h)
	}
	h.has = ok && err == nil
	if !h.has {
		h.w = none
	}
	return err
}

// none is the head words of a shard without a head: it loses every match
// its words decide.
var none = [3]uint64{math.MaxUint64, math.MaxUint64, math.MaxUint64}

// headKey makes the shard's current item's key its head key.
func (o *ordered) headKey(r *run, sh *shardState, h *head) error {
	if sh.kind != o.kind {
		if o.kind != 0 {
			return r.shardErr(sh.ord, fmt.Errorf("scatter: sort key %q is %c, other shards have %c", o.skAttr, sh.kind, o.kind))
		}
		o.kind = sh.kind
	}
	// Word by word: a whole-array copy goes through the stack.
	w := &sh.words[sh.i]
	if o.desc {
		h.w[0], h.w[1], h.w[2] = ^w[0], ^w[1], ^w[2]
	} else {
		h.w[0], h.w[1], h.w[2] = w[0], w[1], w[2]
	}
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
// Which of two heads wins is as good as random, so a branch on it would be
// mispredicted half the time: the loop compares the words in place and
// swaps winner and loser with masks instead.
func (o *ordered) replay(w int32) {
	t, heads := o.tree, o.heads
	for i := (len(t) + int(w)) / 2; i >= 1; i /= 2 {
		l := t[i]
		hl, hw := &heads[l], &heads[w]
		var won bool // l beats w
		switch {
		case hl.w[0] != hw.w[0]:
			won = hl.w[0] < hw.w[0]
		case hl.w[1] != hw.w[1]:
			won = hl.w[1] < hw.w[1]
		case hl.w[2] != hw.w[2]:
			won = hl.w[2] < hw.w[2]
		default:
			won = o.tie(hl, hw, l, w)
		}
		swap := (l ^ w) & -b2i(won)
		t[i], w = l^swap, w^swap
	}
	t[0] = w
}

func b2i(b bool) int32 {
	if b {
		return 1
	}
	return 0
}

// less orders shards by their head items (see beats).
func (o *ordered) less(a, b int32) bool { return o.beats(&o.heads[a], &o.heads[b], a, b) }

// beats reports whether shard a's head, ha, comes before shard b's, hb:
// by sort key, then suffix, both reversed when descending (so a descending
// result is the reverse of the ascending one); a shard without a head
// sorts last. The prefix words decide almost every match without reading
// an item; a shard without a head has the greatest words (see refresh).
func (o *ordered) beats(ha, hb *head, a, b int32) bool {
	if ha.w[0] != hb.w[0] {
		return ha.w[0] < hb.w[0]
	}
	if ha.w[1] != hb.w[1] {
		return ha.w[1] < hb.w[1]
	}
	if ha.w[2] != hb.w[2] {
		return ha.w[2] < hb.w[2]
	}
	return o.tie(ha, hb, a, b)
}

// tie orders two shards whose heads have equal prefix words: one without
// a head last, else by the whole keys, read from the items (they parsed
// once already), then by suffix.
func (o *ordered) tie(ha, hb *head, a, b int32) bool {
	if !ha.has || !hb.has {
		return ha.has
	}
	c := 0
	if o.skAttr != "" {
		sa, sb := &o.shards[a], &o.shards[b]
		ka, _ := keyorder.Parse(sa.items[sa.i][o.skAttr])
		kb, _ := keyorder.Parse(sb.items[sb.i][o.skAttr])
		c = ka.Compare(&kb)
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
