package scatter

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"hash"
	"hash/fnv"
	"maps"
	"reflect"
	"slices"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynashard/dynashard/shard"
)

// While a base's history holds more than one shard count, one item may be
// in two shards at once: written under an older count and again under the
// newest (Put leaves the older copy), or half-way through a move by
// shard.Table.Rebalance (put at the new key, then deleted at the old). Copies
// have the same sort key, so the ordered merge returns them next to each
// other (ties go by suffix), and All and Page return one of them: under a
// calculated strategy (the sort key is the id, as in shard.Table) the copy
// at the newest count's suffix for that id, else the one at the newest
// count that has one; under Random, where equal sort keys may be distinct
// items, only copies whose attributes are all equal (a move's) are one
// item. Count, which cannot tell copies apart in a Select COUNT, then
// reads the keys through the ordered merge instead (countKeys). Unordered
// reads and Lookup do not merge copies.

// nextOne is run.next, merging copies when the plan may have them.
func (r *run) nextOne() (Item, bool, error) {
	first := r.last == nil
	for {
		it, ok, err := r.next()
		if err == nil && ok && r.movedFrom(it) {
			continue // the cursor's own item, moved since: returned already
		}
		if err != nil || !ok || !r.p.copies {
			return it, ok, err
		}
		if first && r.resumedCopy(it) {
			continue // the previous page returned this item
		}
		for {
			sh, err := r.m.next(r)
			if err != nil {
				return Item{}, false, err
			}
			if sh == nil || !r.p.sameItem(it, sh.items[sh.i]) {
				break
			}
			limit := r.limit
			cp := r.take(sh)
			r.limit = limit // a copy is not an item of the page
			if r.p.rank(cp) > r.p.rank(it) {
				it = cp
			}
		}
		return it, true, nil
	}
}

// resumedCopy reports whether it, the first item a resumed Page takes, is
// a copy of the item the cursor's position names. Page takes every copy
// of an item before returning it, so this happens only when a page stopped
// at its MaxShardPages budget between two copies.
func (r *run) resumedCopy(it Item) bool {
	if r.from == nil || r.p.skIndex < 0 {
		return false
	}
	prev := map[string]types.AttributeValue{r.p.skAttr: r.from.key[r.p.skIndex]}
	return shard.Calculated(r.p.l.Strategy) && r.p.sameSortKey(it.Attrs, prev)
}

// movedFrom reports whether it, taken by an ordered Page resumed from a
// cursor, is the item the cursor's position names, found in another shard:
// a Rebalance moved it there since the cursor was made, to a shard that
// reads the position's sort key inclusively. Its sort key and its digest
// (every attribute but the partition key) tell it from another item with
// that sort key. Only items with the position's sort key, the first the
// Page takes, are digested.
func (r *run) movedFrom(it Item) bool {
	f := r.from
	if !r.fromID.ok || f == nil || !r.p.ordered || r.p.skIndex < 0 || it.Suffix == r.p.suffixes[f.ord] {
		return false
	}
	prev := map[string]types.AttributeValue{r.p.skAttr: f.key[r.p.skIndex]}
	return r.p.sameSortKey(it.Attrs, prev) && r.p.itemDigest(it.Attrs) == r.fromID.digest
}

// itemDigest is a 64-bit FNV-1a hash of item's attributes but the
// partition key, in a canonical form (names sorted, set members sorted):
// equal for an item and its copy at another physical key.
func (p *plan) itemDigest(item map[string]types.AttributeValue) uint64 {
	h := fnv.New64a()
	names := slices.Sorted(maps.Keys(item))
	for _, name := range names {
		if name == p.pkAttr {
			continue
		}
		writeField(h, []byte(name))
		writeValue(h, item[name])
	}
	return h.Sum64()
}

func writeField(h hash.Hash64, b []byte) {
	var n [binary.MaxVarintLen64]byte
	h.Write(n[:binary.PutUvarint(n[:], uint64(len(b)))])
	h.Write(b)
}

func writeValue(h hash.Hash64, v types.AttributeValue) {
	set := func(tag byte, members [][]byte) {
		slices.SortFunc(members, bytes.Compare)
		h.Write([]byte{tag})
		writeField(h, binary.AppendUvarint(nil, uint64(len(members))))
		for _, m := range members {
			writeField(h, m)
		}
	}
	strs := func(ss []string) [][]byte {
		out := make([][]byte, len(ss))
		for i, s := range ss {
			out[i] = []byte(s)
		}
		return out
	}
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		h.Write([]byte{'S'})
		writeField(h, []byte(v.Value))
	case *types.AttributeValueMemberN:
		h.Write([]byte{'N'})
		writeField(h, []byte(v.Value))
	case *types.AttributeValueMemberB:
		h.Write([]byte{'B'})
		writeField(h, v.Value)
	case *types.AttributeValueMemberBOOL:
		h.Write([]byte{'T', map[bool]byte{false: 0, true: 1}[v.Value]})
	case *types.AttributeValueMemberNULL:
		h.Write([]byte{'0'})
	case *types.AttributeValueMemberSS:
		set('s', strs(v.Value))
	case *types.AttributeValueMemberNS:
		set('n', strs(v.Value))
	case *types.AttributeValueMemberBS:
		set('b', slices.Clone(v.Value))
	case *types.AttributeValueMemberL:
		h.Write([]byte{'L'})
		writeField(h, binary.AppendUvarint(nil, uint64(len(v.Value))))
		for _, e := range v.Value {
			writeValue(h, e)
		}
	case *types.AttributeValueMemberM:
		h.Write([]byte{'M'})
		for _, k := range slices.Sorted(maps.Keys(v.Value)) {
			writeField(h, []byte(k))
			writeValue(h, v.Value[k])
		}
		h.Write([]byte{'m'})
	default:
		h.Write([]byte{'?'})
	}
}

func (p *plan) sameSortKey(a, b map[string]types.AttributeValue) bool {
	x, ok1 := a[p.skAttr].(*types.AttributeValueMemberS)
	y, ok2 := b[p.skAttr].(*types.AttributeValueMemberS)
	if ok1 && ok2 {
		return x.Value == y.Value
	}
	return reflect.DeepEqual(a[p.skAttr], b[p.skAttr])
}

// sameItem reports whether next is a copy of it.
func (p *plan) sameItem(it Item, next map[string]types.AttributeValue) bool {
	if !p.sameSortKey(it.Attrs, next) {
		return false
	}
	if shard.Calculated(p.l.Strategy) {
		return true
	}
	a, b := maps.Clone(it.Attrs), maps.Clone(next)
	delete(a, p.pkAttr)
	delete(b, p.pkAttr)
	return reflect.DeepEqual(a, b)
}

// rank orders copies: 1 + the index in the history of the newest count
// whose suffix for the item's id is the copy's; 0 for none (and for every
// copy under Random).
func (p *plan) rank(it Item) int {
	id, ok := it.Attrs[p.skAttr].(*types.AttributeValueMemberS)
	rs, resizable := p.l.Strategy.(shard.Resizable)
	if !ok || !resizable || !shard.Calculated(p.l.Strategy) {
		return 0
	}
	for i := len(p.history) - 1; i >= 0; i-- {
		if s := rs.WithN(p.history[i]); s != nil && s.Pick(id.Value) == it.Suffix {
			return i + 1
		}
	}
	return 0
}

// countKeys returns, for a Count whose base may hold copies, the plan of
// an ordered read of the keys alone, which Count merges to count each
// item once: the same items are read (the read units are the same), only
// their keys travel.
func (p *plan) countKeys() (*plan, bool) {
	if len(p.history) < 2 || p.skAttr == "" || p.l.Index != "" {
		return nil, false
	}
	o := p.o.clone()
	o.Unordered, o.Projection = false, ""
	q, err := newPlan(p.l, p.base, o)
	if err != nil {
		return nil, false
	}
	// The library's own placeholders, which a caller's Projection may
	// not use: the partition key (Lookup's too) and the resume key.
	q.projection = pkName
	for i, k := range q.keyAttrs {
		ph := fmt.Sprintf("%sk%d", reservedName, i)
		q.names[ph] = k
		q.projection += ", " + ph
	}
	q.rangePlaceholders()
	if err := q.widen(p.history); err != nil {
		return nil, false
	}
	return q, true
}

// countMerged counts q's items through the merge that returns copies once.
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
