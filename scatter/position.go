package scatter

import (
	"fmt"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynashard/dynashard/internal/keyorder"
)

// A position is a place in the merged order: just after the item of shard
// ord whose key is key (the values of plan.keyAttrs). It may name an item
// that was returned, or a LastEvaluatedKey past items the filter removed.
// Merged order is sort key, then suffix, both reversed when descending;
// within one shard, DynamoDB's order (which for an index also orders items
// with equal index keys).
type position struct {
	ord int
	key []types.AttributeValue
	sk  keyorder.Key // key's sort key, parsed; zero without a sort key
}

// positionOf returns the position of item (or LastEvaluatedKey) m of
// shard ord.
func (p *plan) positionOf(ord int, m map[string]types.AttributeValue) (*position, error) {
	pos := &position{ord: ord, key: make([]types.AttributeValue, len(p.keyAttrs))}
	for i, a := range p.keyAttrs {
		v, ok := m[a]
		if !ok {
			return nil, fmt.Errorf("scatter: shard %d: item has no key attribute %q to resume from", p.suffixes[ord], a)
		}
		pos.key[i] = v
	}
	return pos, p.parseSortKey(pos)
}

func (p *plan) parseSortKey(pos *position) error {
	if p.skIndex < 0 {
		return nil
	}
	k, err := keyorder.Parse(pos.key[p.skIndex])
	if err != nil {
		return fmt.Errorf("scatter: shard %d: sort key %q: %w", p.suffixes[pos.ord], p.skAttr, err)
	}
	pos.sk = k
	return nil
}

// compare orders positions in merged order. Positions of one shard with
// equal sort keys compare equal: only DynamoDB knows their order (an
// index's equal keys), and for other shards they are the same place.
func (p *plan) compare(a, b *position) int {
	c := 0
	if p.skIndex >= 0 {
		c = a.sk.Compare(&b.sk)
	}
	if c == 0 {
		c = a.ord - b.ord
	}
	if p.desc {
		return -c
	}
	return c
}

// later returns the later of a and b (nil is the beginning), b when they
// compare equal.
func (p *plan) later(a, b *position) *position {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	case p.compare(a, b) > 0:
		return a
	}
	return b
}

// samePosition reports whether a and b are the same place for every shard.
func samePosition(a, b *position) bool {
	if a == nil || b == nil {
		return a == b
	}
	if a.ord != b.ord {
		return false
	}
	for i := range a.key {
		if !sameValue(a.key[i], b.key[i]) {
			return false
		}
	}
	return true
}

func sameValue(a, b types.AttributeValue) bool {
	switch a := a.(type) {
	case *types.AttributeValueMemberS:
		b, ok := b.(*types.AttributeValueMemberS)
		return ok && a.Value == b.Value
	case *types.AttributeValueMemberN:
		b, ok := b.(*types.AttributeValueMemberN)
		return ok && a.Value == b.Value
	case *types.AttributeValueMemberB:
		b, ok := b.(*types.AttributeValueMemberB)
		return ok && string(a.Value) == string(b.Value)
	}
	return false
}

// start is how a shard's first request resumes after a position.
type start struct {
	none bool                            // nothing of the shard follows
	esk  map[string]types.AttributeValue // ExclusiveStartKey
	rng  *keyRange                       // read this range instead of the KeyCondition's
}

// start returns how shard ord reads what follows pos (nil: everything).
// Items of other shards with pos's sort key follow pos only in shards that
// come later among equal keys, so a shard reads the range from that key,
// inclusive or not; its own items with that key do not follow (a table's
// sort keys are unique in a shard). DynamoDB's ExclusiveStartKey cannot
// say "inclusive", nor name a place in an index without its table key, so
// the range goes into the key condition. Only an index resumes its own
// shard with ExclusiveStartKey, which orders its equal keys.
func (p *plan) start(ord int, pos *position) start {
	switch {
	case pos == nil:
		return start{}
	case pos.ord == ord && p.l.Index != "":
		return p.startIndex(ord, pos)
	}
	after := ord != pos.ord && (ord > pos.ord) != p.desc
	if p.skIndex < 0 {
		return start{none: !after} // no sort key: suffix order alone
	}
	rng := p.cond.rng.from(bound{v: pos.key[p.skIndex], k: pos.sk, incl: after}, p.desc)
	if rng.empty() {
		return start{none: true}
	}
	return start{rng: &rng}
}

// startIndex resumes an index's shard after a position of its own.
// DynamoDB Local rejects an ExclusiveStartKey at the far end of the key
// condition's range, where the shard may still hold items with that key:
// the range is then just that key.
func (p *plan) startIndex(ord int, pos *position) start {
	esk := p.esk(ord, pos.key)
	if p.skIndex < 0 || !p.cond.rng.atEnd(&pos.sk, p.desc) {
		return start{esk: esk}
	}
	b := bound{v: pos.key[p.skIndex], k: pos.sk, incl: true}
	return start{esk: esk, rng: &keyRange{lo: b, hi: b}}
}
