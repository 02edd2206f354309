package chunk

import (
	"context"
	"iter"
	"sync"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"golang.org/x/sync/errgroup"

	"github.com/dynashard/dynashard/internal/batch"
	"github.com/dynashard/dynashard/internal/panics"
)

// This file is the store's only contact with the batch engine.

// maxBatchGetBytes is the response size BatchGetItem returns at most. The
// service says 16 MB; counting it as 16,000,000 rather than 16 MiB keeps a
// group of chunks from coming back split in two.
const maxBatchGetBytes = 16_000_000

// maxBatchGetKeys is BatchGetItem's limit on keys per request.
const maxBatchGetKeys = 100

func (s *Store) batchOptions(consistent bool) func(*batch.Options) {
	return func(o *batch.Options) {
		o.MaxConcurrency = s.opts.MaxConcurrency
		o.KeyAttributes = map[string][]string{s.chunks: {s.opts.ChunkKeyAttribute}}
		o.ConsistentRead = consistent
	}
}

// putItems writes the chunk items seq yields, parallel and retried.
func (s *Store) putItems(ctx context.Context, seq iter.Seq[map[string]types.AttributeValue]) error {
	writes := func(yield func(batch.Write) bool) {
		for item := range seq {
			if !yield(batch.Write{Table: s.chunks, Put: item}) {
				return
			}
		}
	}
	_, err := batch.WriteSeq(ctx, s.c, writes, s.batchOptions(false))
	return err
}

// deleteItems deletes the chunk items with the given keys, parallel and
// retried.
func (s *Store) deleteItems(ctx context.Context, keys []string) error {
	writes := func(yield func(batch.Write) bool) {
		for _, k := range keys {
			if !yield(batch.Write{Table: s.chunks, Delete: s.chunkItemKey(k)}) {
				return
			}
		}
	}
	_, err := batch.WriteSeq(ctx, s.c, writes, s.batchOptions(false))
	return err
}

// chunkItemKey is the primary key of the chunk item with key k.
func (s *Store) chunkItemKey(k string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{s.opts.ChunkKeyAttribute: &types.AttributeValueMemberS{Value: k}}
}

// groupSize is how many chunk items of up to item bytes one BatchGetItem
// request can return whole: 40 at the default ChunkSize.
func groupSize(item int64) int {
	return int(max(1, min(maxBatchGetKeys, maxBatchGetBytes/item)))
}

// getItems reads the chunk items with the given keys, group keys per
// request, and returns attribute attr of those that exist, by key, as
// bytes of type typ (nil where it is not of that type). The groups are
// read on goroutines of their own; a panic on one (in the Client) is
// raised again in the caller's goroutine once all have ended.
func (s *Store) getItems(ctx context.Context, keys []string, group int, consistent bool, attr string, typ types.ScalarAttributeType) (map[string][]byte, error) {
	found := make(map[string][]byte, len(keys))
	var (
		mu       sync.Mutex
		panicked panics.Group
	)
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(s.opts.MaxConcurrency)
	for lo := 0; lo < len(keys); lo += group {
		part := keys[lo:min(lo+group, len(keys))]
		g.Go(func() (err error) {
			defer panicked.Recover(&err)
			req := make([]batch.Key, len(part))
			for i, k := range part {
				req[i] = batch.Key{Table: s.chunks, Key: s.chunkItemKey(k)}
			}
			items, _, err := batch.Get(gctx, s.c, req, func(o *batch.Options) {
				s.batchOptions(consistent)(o)
				o.MaxConcurrency = 1 // one request per group; the groups run in parallel
			})
			if err != nil {
				return err
			}
			mu.Lock()
			defer mu.Unlock()
			for _, it := range items {
				k, ok := asS(it.Item[s.opts.ChunkKeyAttribute])
				if !ok {
					continue
				}
				// Present but malformed (nil): reported as corrupt by the caller.
				found[k.Value], _ = untyped(typ, it.Item[attr])
			}
			return nil
		})
	}
	err := g.Wait()
	panicked.Raise()
	return found, err
}
