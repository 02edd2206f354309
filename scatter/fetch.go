package scatter

// The request goroutine's side of a run: it sends a shard's Query, and
// prepares the page for the merge while the page is in its cache.

import (
	"fmt"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"

	"github.com/dynashard/dynashard/internal/adapt"
	"github.com/dynashard/dynashard/internal/keyorder"
	"github.com/dynashard/dynashard/internal/observe"
)

type request struct {
	ord int
	in  *dynamodb.QueryInput
	rng *keyRange // items outside it are dropped (see clip)
	buf page      // space for the page, if large enough
}

// page is space for a page of items and their sort keys. A shard's
// requests reuse the space of its page before last, drained: a shard
// allocates only while its pages grow, and never writes to the slices
// the client returned.
type page struct {
	items []map[string]types.AttributeValue
	keys  []keyorder.Key // for clipping to a range
	words [][3]uint64    // for the merge
}

type result struct {
	ord    int
	items  []map[string]types.AttributeValue
	keys   []keyorder.Key // parsed where the page arrived, while it is in cache, to clip it
	words  [][3]uint64    // the keys' prefixes, for an ordered merge
	kind   keyorder.Kind  // the keys' kind, for an ordered merge
	lek    map[string]types.AttributeValue
	err    error
	ticket adapt.Ticket // the request's slot, given back by receive
	signal adapt.Signal // what the request told about throttling
}

// fetch runs one request. Its result's signal tells the fan-out's limiter
// whether DynamoDB throttled it: a final throttling error, or one the
// SDK's retryer retried (adapt.Observe); a cancelled or otherwise failed
// request tells nothing.
func (r *run) fetch(req request) result {
	sig := adapt.Neutral
	fail := func(err error) result {
		return result{ord: req.ord, err: r.shardErr(req.ord, err), signal: sig}
	}
	if err := r.ctx.Err(); err != nil {
		return fail(err)
	}
	out, err := observe.Do(r.ctx, r.s.c.Query, req.in)
	if err != nil {
		if r.ctx.Err() == nil && adapt.Observe(middleware.Metadata{}, err) == adapt.Throttled {
			sig = adapt.Throttled
			r.s.countThrottle()
		}
		return fail(err)
	}
	sig = adapt.Success
	if r.s.addQuery(out) {
		sig = adapt.Throttled
	}
	items := append(req.buf.items[:0], out.Items...)
	unhide(items)
	res := result{ord: req.ord, items: items, lek: out.LastEvaluatedKey, signal: sig}
	if r.p.skAttr == "" {
		return res
	}
	if req.rng != nil {
		if res.keys, err = parseKeys(req.buf.keys, items, r.p.skAttr); err != nil {
			return fail(err)
		}
		if err := r.clip(&res, req.rng); err != nil {
			return fail(err)
		}
	}
	if r.p.ordered {
		if res.words, res.kind, err = prefixes(req.buf.words, res.items, res.keys, r.p.skAttr); err != nil {
			return fail(err)
		}
	}
	return res
}

// parseKeys parses every item's sort key, for clipping a page to a range.
// The keys go into buf when it is large enough (the keys of the shard's
// page before last, drained), so that a shard allocates key space only
// while its pages grow.
func parseKeys(buf []keyorder.Key, items []map[string]types.AttributeValue, attr string) ([]keyorder.Key, error) {
	keys := resize(buf, len(items))
	for i, it := range items {
		k, err := parseKey(it, attr)
		if err != nil {
			return nil, err
		}
		keys[i] = k
	}
	return keys, nil
}

// prefixes returns the prefix words of every item's sort key (from keys if
// parsed already) and their one kind, for the merge. The request goroutine
// does it, in parallel with the merge and while the fresh page is in cache,
// which leaves the merge comparing 24 bytes per item, laid out densely and
// without pointers, instead of looking keys up in maps spread over memory.
func prefixes(buf [][3]uint64, items []map[string]types.AttributeValue, keys []keyorder.Key, attr string) ([][3]uint64, keyorder.Kind, error) {
	words := resize(buf, len(items))
	var kind keyorder.Kind
	for i := range items {
		var k keyorder.Kind
		if keys != nil {
			k, words[i] = keys[i].Kind(), keys[i].Prefix()
		} else {
			v, ok := items[i][attr]
			if !ok {
				return nil, 0, fmt.Errorf("scatter: item has no sort key attribute %q", attr)
			}
			var err error
			if k, err = keyorder.ParsePrefix(v, &words[i]); err != nil {
				return nil, 0, fmt.Errorf("scatter: sort key %q: %w", attr, err)
			}
		}
		if i == 0 {
			kind = k
		} else if k != kind {
			return nil, 0, fmt.Errorf("scatter: sort key %q is %c in one item and %c in another", attr, k, kind)
		}
	}
	return words, kind, nil
}

func parseKey(item map[string]types.AttributeValue, attr string) (keyorder.Key, error) {
	v, ok := item[attr]
	if !ok {
		return keyorder.Key{}, fmt.Errorf("scatter: item has no sort key attribute %q", attr)
	}
	k, err := keyorder.Parse(v)
	if err != nil {
		return keyorder.Key{}, fmt.Errorf("scatter: sort key %q: %w", attr, err)
	}
	return k, nil
}

// resize returns buf resized to n, reallocated if its capacity is smaller.
func resize[T any](buf []T, n int) []T {
	if cap(buf) < n {
		return make([]T, n)
	}
	return buf[:n]
}

// clip keeps the items of a page read with a rendered range that lie in
// it: the items on an excluded near end, which BETWEEN cannot leave out,
// are dropped, and an item or LastEvaluatedKey past the far end (a
// KeyCondition's excluded end, likewise) ends the shard.
func (r *run) clip(res *result, rng *keyRange) error {
	n := 0
	for i := range res.items {
		k := &res.keys[i]
		if rng.past(k, r.p.desc) {
			res.lek = nil
			break
		}
		if rng.contains(k) {
			res.items[n], res.keys[n] = res.items[i], res.keys[i]
			n++
		}
	}
	res.items, res.keys = res.items[:n], res.keys[:n]
	if res.lek == nil {
		return nil
	}
	k, err := keyorder.Parse(res.lek[r.p.skAttr])
	if err != nil {
		return fmt.Errorf("scatter: LastEvaluatedKey: sort key %q: %w", r.p.skAttr, err)
	}
	if rng.past(&k, r.p.desc) {
		res.lek = nil
	}
	return nil
}
