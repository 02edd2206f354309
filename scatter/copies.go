package scatter

import (
	"context"
	"fmt"
	"hash"
	"hash/fnv"
	"hash/maphash"
	"reflect"
	"slices"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynashard/dynashard/internal/itemhash"
	"github.com/dynashard/dynashard/shard"
)

// A base stores each item once (package shard's one-copy protocol). But
// while the base's history holds more than one count, a read may meet an
// item twice: shard.Table.Rebalance moves it, in one transaction, from an
// older count's key to the newest count's, between the Queries of two
// suffixes. (A table written before that protocol may also hold an id at
// two keys.) Which items are one:
//
//   - Under a calculated strategy the sort key is the id (byKey): items
//     with equal sort keys are one item.
//   - Under Random equal sort keys may be distinct items: only items equal
//     in every attribute returned but the partition key are one (the
//     hidden attributes are gone already, see hidden.go). A Random
//     Rebalance moves only items above the newest count, so a history
//     whose newest count is its largest has nothing to merge (plan.twice).
//
// The ordered merge returns the sightings of an item among the items
// with its sort key and takes them together (takeCopies): under a
// calculated strategy it returns the one of the highest rank, else the
// first. Under Random it returns the first, and remembers the items
// returned with the current sort key once another item with that key
// follows, so that a sighting behind it is dropped too (equal). An
// unordered call remembers every item it meets and drops one met again
// (seen). Count reads through the ordered merge (countKeys), and Lookup
// merges its items (lookupOnce). A resumed Page drops the item its cursor
// names if a move put it in a shard read after the position
// (resumedItem).

// nextOne is run.next, returning each item once.
func (r *run) nextOne() (Item, bool, error) {
	for {
		it, ok, err := r.next()
		if err != nil || !ok {
			return it, ok, err
		}
		if r.again(it) {
			r.giveBack()
			continue
		}
		if r.p.twice && r.p.ordered {
			if it, err = r.takeCopies(it); err != nil {
				return Item{}, false, err
			}
		}
		return it, true, nil
	}
}

// giveBack undoes take's count of an item the call does not return.
func (r *run) giveBack() {
	if r.limit >= 0 {
		r.limit++
	}
}

// again reports whether the call has returned it already, or the cursor
// it resumes from names it.
func (r *run) again(it Item) bool {
	switch {
	case r.resumedItem(it):
		return true
	case !r.p.twice:
		return false
	case !r.p.ordered:
		return r.seen.met(r.p, it)
	case !r.p.byKey():
		return r.equal.has(r.p, it)
	}
	return false // takeCopies took every sighting
}

// takeCopies takes the items that follow it in merged order and are it,
// met at another key, and returns the one to return.
func (r *run) takeCopies(it Item) (Item, error) {
	for {
		sh, err := r.m.next(r)
		if err != nil {
			return Item{}, err
		}
		if sh == nil || !r.p.sameSortKey(it.Attrs, sh.items[sh.i]) {
			return it, nil
		}
		if !r.p.byKey() && !r.p.sameAttrs(it.Attrs, sh.items[sh.i]) {
			// Another item with this sort key: a sighting of it may follow.
			r.equal.add(r.p, it)
			return it, nil
		}
		limit := r.limit
		cp := r.take(sh)
		r.limit = limit // a sighting is not an item of the page
		if r.p.rank(cp) > r.p.rank(it) {
			it = cp
		}
	}
}

// resumedItem reports whether it, taken by an ordered Page resumed from a
// cursor, is the item the cursor's position names, met in another shard:
// a Rebalance moved it there since the cursor was made, to a shard that
// reads the position's sort key inclusively. Its sort key names it when
// namedByKey; otherwise its sort key and its digest (itemDigest) do.
func (r *run) resumedItem(it Item) bool {
	f := r.from
	if !r.resuming || it.Suffix == r.p.suffixes[f.ord] || !sameValue(it.Attrs[r.p.skAttr], f.key[r.p.skIndex]) {
		return false
	}
	if r.namedByKey() {
		return true
	}
	return r.fromID.ok && r.p.itemDigest(it.Attrs) == r.fromID.digest
}

// namedByKey reports whether the item at the run's default position is
// named by its sort key alone: under a calculated strategy, in a base
// known to follow package shard's protocol (see plan.recorded), now or
// when the cursor was made. Only such a base can have moved the item, and
// in it the sort key is the id. A base written by other code may hold
// distinct items with one sort key in several shards.
func (r *run) namedByKey() bool {
	return r.p.byKey() && (r.fromID.byKey || r.p.recorded())
}

// seen is what an unordered call over a history of several counts
// remembers of the items it met, to drop an item it meets again: under a
// calculated strategy their sort keys, under Random their sort keys and
// digests (memDigest). It remembers every item, wherever met: responses
// arrive in any order, so an item's new key may come before its old one
// even when the server read the old one first. Nothing is allocated
// until the first item.
type seen struct {
	ids     map[string]struct{}
	digests map[string][]uint64
}

// met reports whether the call met it already, and remembers it.
func (s *seen) met(p *plan, it Item) bool {
	sk, ok := keyString(it.Attrs[p.skAttr])
	if !ok {
		return false
	}
	if p.byKey() {
		if _, ok := s.ids[sk]; ok {
			return true
		}
		if s.ids == nil {
			s.ids = map[string]struct{}{}
		}
		s.ids[sk] = struct{}{}
		return false
	}
	d := p.memDigest(it.Attrs)
	if slices.Contains(s.digests[sk], d) {
		return true
	}
	if s.digests == nil {
		s.digests = map[string][]uint64{}
	}
	s.digests[sk] = append(s.digests[sk], d)
	return false
}

// keyString is a key value's bytes, as a map key: sort keys have one type.
func keyString(v types.AttributeValue) (string, bool) {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return v.Value, true
	case *types.AttributeValueMemberN:
		return v.Value, true
	case *types.AttributeValueMemberB:
		return string(v.Value), true
	}
	return "", false
}

// equal is, for an ordered call under Random, the digests (memDigest) of
// the items returned with the current sort key, kept once another item
// with that key has followed one of them.
type equal struct {
	key     types.AttributeValue
	digests []uint64
}

// has reports whether it is an item returned with the current sort key,
// and forgets them when its sort key is another.
func (e *equal) has(p *plan, it Item) bool {
	if e.key == nil {
		return false
	}
	if !sameValue(e.key, it.Attrs[p.skAttr]) {
		e.key, e.digests = nil, e.digests[:0]
		return false
	}
	return slices.Contains(e.digests, p.memDigest(it.Attrs))
}

func (e *equal) add(p *plan, it Item) {
	e.key = it.Attrs[p.skAttr]
	e.digests = append(e.digests, p.memDigest(it.Attrs))
}

// itemDigest is a 64-bit FNV-1a hash of item's attributes but the
// partition key and the hidden ones, in a canonical form (names sorted,
// set members sorted): equal for an item and the same item moved to
// another physical key. A cursor carries it.
func (p *plan) itemDigest(item map[string]types.AttributeValue) uint64 {
	return p.digest(fnv.New64a(), item)
}

// seed keys memDigest, so that no stored item can be made to collide
// with another on purpose.
var seed = maphash.MakeSeed()

// memDigest is itemDigest with maphash, for what a call remembers.
func (p *plan) memDigest(item map[string]types.AttributeValue) uint64 {
	var h maphash.Hash
	h.SetSeed(seed)
	return p.digest(&h, item)
}

func (p *plan) digest(h hash.Hash64, item map[string]types.AttributeValue) uint64 {
	itemhash.Write(h, item, func(name string) bool { return name == p.pkAttr || isHidden(name) })
	return h.Sum64()
}

// byKey reports whether the sort key names an item: under a calculated
// strategy it is the id (see shard.Table), and a table holds an id once.
// Under Random, and in an index, it does not.
func (p *plan) byKey() bool {
	return p.skAttr != "" && p.l.Index == "" && shard.Calculated(p.l.Strategy)
}

// recorded reports whether the base's history shows that the base has a
// record, and so follows package shard's protocol: a history of several
// counts, or of one count other than the layout's N, comes from a record;
// a base without one is read at the layout's N.
func (p *plan) recorded() bool {
	return len(p.history) > 1 || len(p.history) == 1 && p.history[0] != p.l.N()
}

func (p *plan) sameSortKey(a, b map[string]types.AttributeValue) bool {
	return sameValue(a[p.skAttr], b[p.skAttr])
}

// sameAttrs reports whether a and b have equal attributes but the
// partition key (hidden ones are gone already).
func (p *plan) sameAttrs(a, b map[string]types.AttributeValue) bool {
	n := len(a)
	if _, ok := a[p.pkAttr]; ok {
		n--
	}
	if _, ok := b[p.pkAttr]; ok {
		n++
	}
	if n != len(b) {
		return false
	}
	for name, v := range a {
		if name == p.pkAttr {
			continue
		}
		w, ok := b[name]
		if !ok || !reflect.DeepEqual(v, w) {
			return false
		}
	}
	return true
}

// rank orders an item's sightings: 1 + the index in the history of the
// newest count whose suffix for the item's id is the sighting's; 0 for
// none (and for every sighting under Random).
func (p *plan) rank(it Item) int {
	id, ok := it.Attrs[p.skAttr].(*types.AttributeValueMemberS)
	if !ok {
		return 0
	}
	return p.rankOf(id.Value, it.Suffix)
}

// rankOf is rank for the id id met at suffix.
func (p *plan) rankOf(id string, suffix int) int {
	if p.home == nil {
		return 0
	}
	if p.home.Pick(id) == suffix {
		return len(p.history)
	}
	rs := p.l.Strategy.(shard.Resizable) // p.home is set for Resizable strategies only
	for i := len(p.history) - 2; i >= 0; i-- {
		if s := rs.WithN(p.history[i]); s != nil && s.Pick(id) == suffix {
			return i + 1
		}
	}
	return 0
}

// countKeys returns, for a Count over a history in which a read may meet
// an item twice, the plan of an ordered read that Count merges to count
// each item once: the same items are read (the read units are the same);
// under a calculated strategy only their keys travel, under Random whole
// items, which tell items with equal sort keys apart.
func (p *plan) countKeys() (*plan, bool) {
	if !p.twice {
		return nil, false
	}
	o := p.o.clone()
	o.Unordered, o.Projection = false, ""
	q, err := newPlan(p.l, p.base, o)
	if err != nil {
		return nil, false
	}
	if p.byKey() {
		// The library's own placeholders, which a caller's Projection may
		// not use: the partition key (Lookup's too) and the resume key.
		q.projection = pkName
		for i, k := range q.keyAttrs {
			ph := fmt.Sprintf("%sk%d", reservedName, i)
			q.names[ph] = k
			q.projection += ", " + ph
		}
		q.rangePlaceholders()
	}
	if err := q.widen(p.history); err != nil {
		return nil, false
	}
	return q, true
}

// countMerged counts q's items through the merge that returns each once.
func (s *Scatter) countMerged(ctx context.Context, q *plan) (int64, error) {
	r := s.newRun(ctx, q, resume{}, -1, 0)
	defer r.close()
	var n int64
	for {
		_, ok, err := r.nextOne()
		if err != nil {
			return 0, err
		}
		if !ok {
			return n, r.partialErr()
		}
		n++
	}
}

// lookupOnce returns Lookup's items (of sort key sk, in suffix order)
// with each item once while the history may show it twice: under a
// calculated strategy the one at the newest count's suffix for the id,
// else the first; under Random the items at or below the newest count,
// and those above it that equal none of them.
func (p *plan) lookupOnce(items []Item, sk types.AttributeValue) []Item {
	if !p.twice || len(items) < 2 {
		return items
	}
	if p.byKey() {
		id, _ := sk.(*types.AttributeValueMemberS)
		best, rank := 0, -1
		for i, it := range items {
			r := 0
			if id != nil {
				r = p.rankOf(id.Value, it.Suffix)
			}
			if r > rank {
				best, rank = i, r
			}
		}
		return items[best : best+1]
	}
	newest := p.history[len(p.history)-1]
	out := make([]Item, 0, len(items))
	for _, it := range items {
		moved := it.Suffix > newest && slices.ContainsFunc(items, func(o Item) bool {
			return o.Suffix <= newest && p.sameAttrs(o.Attrs, it.Attrs)
		})
		if !moved {
			out = append(out, it)
		}
	}
	return out
}
