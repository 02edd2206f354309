package scatter

import (
	"context"
	"iter"
	"sync"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"golang.org/x/sync/errgroup"
)

// All returns the items of the logical query q, merged across shards in
// sort-key order (or as they arrive, with q.Unordered). Nothing is sent
// before the first iteration; then every shard is queried in parallel,
// paginating through each. Breaking out of the loop, or cancelling ctx,
// cancels the requests in flight and waits for them before the loop ends.
//
// An error ends the sequence as its last pair: an invalid query
// (ErrInvalidQuery), ctx's error, or the first failed shard as a
// *ShardError. Under Options.Partial, failed shards are left out and the
// last pair carries a *PartialError.
func (s *Scatter) All(ctx context.Context, q Query) iter.Seq2[Item, error] {
	return func(yield func(Item, error) bool) {
		p, err := newPlan(q)
		if err != nil {
			yield(Item{}, err)
			return
		}
		r := s.newRun(ctx, p, nil, -1, 0)
		defer r.close()
		for {
			it, ok, err := r.next()
			if err != nil {
				yield(Item{}, err)
				return
			}
			if !ok {
				break
			}
			if !yield(it, nil) {
				return
			}
		}
		if err := r.partialErr(); err != nil {
			yield(Item{}, err)
		}
	}
}

// Page returns up to limit items of q following the position after (the
// empty Cursor: from the beginning) and the cursor that continues after
// the last item returned, or the empty Cursor when no items remain.
// Concatenating the pages of successive calls yields exactly what All
// yields: no duplicate, no gap, same order, as long as the data does not
// change in between. It is meant for stateless handlers that hand the
// cursor to a client.
//
// Page stops requesting as soon as limit items are merged; each shard's
// requests ask for at most the items still wanted. It returns fewer than
// limit items before the end only under Options.MaxShardPages (or
// Options.Partial). A cursor made for another query, truncated, garbled,
// or failing its signature is rejected with a *CursorError matching
// ErrBadCursor before any request. Errors are as for All; under
// Options.Partial, Page returns the healthy shards' items, a cursor that
// retries the failed shards, and a *PartialError.
func (s *Scatter) Page(ctx context.Context, q Query, limit int, after Cursor) ([]Item, Cursor, error) {
	if limit < 1 {
		return nil, "", invalid("limit %d < 1", limit)
	}
	p, err := newPlan(q)
	if err != nil {
		return nil, "", err
	}
	var from []position
	if after != "" {
		if from, err = decodeCursor(p, after, s.opts.CursorKey); err != nil {
			return nil, "", err
		}
	}
	r := s.newRun(ctx, p, from, limit, s.opts.MaxShardPages)
	defer r.close()
	items := make([]Item, 0, min(limit, 1024))
	for {
		it, ok, err := r.next()
		if err != nil {
			return nil, "", err
		}
		if !ok {
			break
		}
		items = append(items, it)
	}
	c, err := r.cursor()
	if err != nil {
		return nil, "", err
	}
	return items, c, r.partialErr()
}

// Count returns how many items match q across all shards, using Select
// COUNT so that no item is transferred; q's filter applies, its
// projection, order and Unordered do not. Shards are counted in parallel
// under Options.MaxConcurrency. Errors are as for All; under
// Options.Partial the count covers the healthy shards and comes with a
// *PartialError.
func (s *Scatter) Count(ctx context.Context, q Query) (int64, error) {
	p, err := newPlan(q)
	if err != nil {
		return 0, err
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(s.concurrency(len(p.suffixes)))
	var (
		mu       sync.Mutex
		total    int64
		failures []*ShardError
	)
	for ord := range p.suffixes {
		g.Go(func() error {
			var esk map[string]types.AttributeValue
			for {
				out, err := s.c.Query(gctx, p.countInput(ord, esk))
				if err != nil {
					se := &ShardError{Suffix: p.suffixes[ord], Key: p.pks[ord], Err: err}
					if s.opts.Partial && ctx.Err() == nil {
						mu.Lock()
						failures = append(failures, se)
						mu.Unlock()
						return nil
					}
					return se
				}
				s.addQuery(out)
				mu.Lock()
				total += int64(out.Count)
				mu.Unlock()
				if out.LastEvaluatedKey == nil {
					return nil
				}
				esk = out.LastEvaluatedKey
			}
		})
	}
	if err := g.Wait(); err != nil {
		if ctx.Err() != nil {
			return 0, ctx.Err()
		}
		return 0, err
	}
	return total, partialError(failures)
}
