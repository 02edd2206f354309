package scatter

import (
	"context"
	"iter"
	"sync"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"
	"golang.org/x/sync/errgroup"

	"github.com/dynashard/dynashard/internal/adapt"
	"github.com/dynashard/dynashard/internal/observe"
	"github.com/dynashard/dynashard/internal/panics"
)

// All returns the items of base, merged across shards in sort-key order
// (or as they arrive, with Options.Unordered), under the Scatter's
// Options with optFns applied for this call. Nothing is sent before the
// first iteration; then the layout is checked against base's record
// (shard.Table.Shards) and every shard is queried in parallel,
// paginating through each. Breaking out of the loop, or cancelling ctx,
// cancels the requests in flight and waits for them before the loop ends.
//
// An error ends the sequence as its last pair: an invalid call
// (ErrInvalidQuery), a layout that differs from base's record (a
// *shard.LayoutError, matching shard.ErrLayoutMismatch), ctx's error, or
// the first failed shard as a *ShardError. Under Options.Partial, failed
// shards are left out and the last pair carries a *PartialError.
func (s *Scatter) All(ctx context.Context, base string, optFns ...func(*Options)) iter.Seq2[Item, error] {
	return func(yield func(Item, error) bool) {
		ctx, call := s.begin(ctx, "scatter.All", base)
		var p *plan
		n, err := 0, error(nil)
		defer func() { s.end(ctx, call, p, n, err) }()
		refreshed, broke := func(bool) {}, false
		if p, err = s.plan(ctx, base, optFns); err == nil {
			refreshed, err = s.checkLayout(ctx, p)
		}
		defer func() { refreshed(broke) }()
		if err != nil {
			yield(Item{}, err)
			return
		}
		r := s.newRun(ctx, p, resume{}, -1, 0)
		defer r.close()
		for {
			var it Item
			var ok bool
			if it, ok, err = r.nextOne(); err != nil {
				yield(Item{}, err)
				return
			}
			if !ok {
				break
			}
			n++
			if !yield(it, nil) {
				broke = true
				return
			}
		}
		if err = r.partialErr(); err != nil {
			yield(Item{}, err)
		}
	}
}

// Page returns up to limit items of base following the position after
// (the empty Cursor: from the beginning) and the cursor that continues
// after the last item returned, or the empty Cursor when no items remain.
// Resuming behaves as one Query over the merged key resumed after the
// last item returned: concatenating the pages of successive calls yields
// exactly what All yields while the data does not change, and when it
// does, each page holds what follows that item at the time of the call,
// whichever shard it is in (see the package doc). It is meant for
// stateless handlers that hand the cursor to a client.
//
// Page stops requesting as soon as limit items are merged; each shard's
// requests ask for at most one item more than the page still needs, which
// tells whether anything follows. It returns fewer than limit items before
// the end only under Options.MaxShardPages (or Options.Partial). A cursor
// made for another read (layout, base, condition, filter, direction or
// suffix set), truncated, garbled, failing its signature, or holding a key
// the read cannot have (wrong type, too long, outside the KeyCondition) is
// rejected with a *CursorError matching ErrInvalidCursor before any
// request, and so is a limit below 1 (ErrInvalidQuery). Then the layout
// is checked as for All. Errors are as for All; under Options.Partial,
// Page returns the healthy shards' items, a cursor that retries the
// failed shards from where they stood, and a *PartialError.
func (s *Scatter) Page(ctx context.Context, base string, limit int, after Cursor, optFns ...func(*Options)) (items []Item, next Cursor, err error) {
	ctx, call := s.begin(ctx, "scatter.Page", base)
	var p *plan
	defer func() { s.end(ctx, call, p, len(items), err) }()
	p, err = s.plan(ctx, base, optFns)
	if err != nil {
		return nil, "", err
	}
	if limit < 1 {
		return nil, "", invalid("limit %d < 1", limit)
	}
	from := resume{}
	if after != "" {
		if from, err = decodeEarly(p, after, p.o.CursorKey); err != nil {
			return nil, "", err
		}
	}
	refreshed, err := s.checkLayout(ctx, p)
	defer refreshed(false)
	if err != nil {
		return nil, "", err
	}
	if from, err = from.fit(p); err != nil {
		return nil, "", err
	}
	r := s.newRun(ctx, p, from, limit, p.o.MaxShardPages)
	defer r.close()
	items = make([]Item, 0, min(limit, 1024))
	for len(items) < limit {
		it, ok, err := r.nextOne()
		if err != nil {
			return nil, "", err
		}
		if !ok {
			break
		}
		items = append(items, it)
	}
	if len(items) == limit {
		if _, err := r.more(); err != nil { // settles which shards are finished
			return nil, "", err
		}
	}
	c, err := r.cursor()
	if err != nil {
		return nil, "", err
	}
	return items, c, r.partialErr()
}

// Count returns how many items of base match, using Select COUNT so that
// no item is transferred; the KeyCondition and Filter apply, Projection,
// order and Unordered do not. While a Rebalance may move items under it
// (base's shard-count history holds more than one count; under Random,
// suffixes above its newest count), a read may meet an item twice, and
// Count reads the items through the ordered merge instead, to count each
// once (see "Resharding" in the package doc). After the layout check,
// shards are counted in parallel under Options.MaxConcurrency. Errors are as for All; under
// Options.Partial the count covers the healthy shards and comes with a
// *PartialError.
func (s *Scatter) Count(ctx context.Context, base string, optFns ...func(*Options)) (n int64, err error) {
	ctx, call := s.begin(ctx, "scatter.Count", base)
	var p *plan
	defer func() { s.end(ctx, call, p, int(n), err) }()
	if p, err = s.plan(ctx, base, optFns); err != nil {
		return 0, err
	}
	refreshed, err := s.checkLayout(ctx, p)
	defer refreshed(false)
	if err != nil {
		return 0, err
	}
	if q, ok := p.countKeys(); ok {
		return s.countMerged(ctx, q)
	}
	ceiling := concurrency(p.o, len(p.suffixes))
	lim, learnt := s.limiter(ceiling)
	defer s.settle(ctx, lim, learnt)
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(ceiling)
	var (
		mu       sync.Mutex
		total    int64
		failures []*ShardError
		panicked panics.Group
	)
	for ord := range p.suffixes {
		g.Go(func() (err error) {
			defer panicked.Recover(&err)
			n, err := s.countShard(gctx, p, ord, lim)
			mu.Lock()
			defer mu.Unlock()
			total += n
			if se, ok := err.(*ShardError); ok && p.o.Partial && ctx.Err() == nil {
				failures = append(failures, se)
				return nil
			}
			return err
		})
	}
	err = g.Wait()
	panicked.Raise() // even if another shard's error came first
	if err != nil {
		if ctx.Err() != nil {
			return 0, ctx.Err()
		}
		return 0, err
	}
	return total, partialError(failures)
}

// countShard counts the matches of shard ord, page by page, each request
// taking a slot of the call's limiter; what it counted before failing is
// counted too, as Options.Partial reports it.
func (s *Scatter) countShard(ctx context.Context, p *plan, ord int, lim *adapt.Limiter) (int64, error) {
	var n int64
	var esk map[string]types.AttributeValue
	for {
		t, err := lim.Acquire(ctx)
		if err != nil {
			return n, &ShardError{Suffix: p.suffixes[ord], Key: p.pks[ord], Err: err}
		}
		out, err := observe.Do(ctx, s.c.Query, p.countInput(ord, esk))
		if err != nil {
			sig := adapt.Neutral
			if ctx.Err() == nil && adapt.Observe(middleware.Metadata{}, err) == adapt.Throttled {
				sig = adapt.Throttled
				s.countThrottle()
			}
			if lim.Release(t, sig) {
				s.backedOff(lim.Limit())
			}
			return n, &ShardError{Suffix: p.suffixes[ord], Key: p.pks[ord], Err: err}
		}
		sig := adapt.Success
		if s.addQuery(out) {
			sig = adapt.Throttled
		}
		if lim.Release(t, sig) {
			s.backedOff(lim.Limit())
		}
		n += int64(out.Count)
		if out.LastEvaluatedKey == nil {
			return n, nil
		}
		esk = out.LastEvaluatedKey
	}
}
