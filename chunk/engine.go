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

// putChunks writes the chunks seq yields, parallel and retried.
func (s *Store) putChunks(ctx context.Context, parentKey types.AttributeValue, seq iter.Seq[chunkWrite]) error {
	writes := func(yield func(batch.Write) bool) {
		for c := range seq {
			item := map[string]types.AttributeValue{
				s.opts.ChunkKeyAttribute: &types.AttributeValueMemberS{Value: c.key},
				attrData:                 &types.AttributeValueMemberB{Value: c.data},
				attrParent:               parentKey,
			}
			if !yield(batch.Write{Table: s.chunks, Put: item}) {
				return
			}
		}
	}
	_, err := batch.WriteSeq(ctx, s.c, writes, s.batchOptions(false))
	return err
}

// deleteChunks deletes chunks 1..n of a version. It is best effort: what it
// cannot delete is an orphan that Sweep removes.
func (s *Store) deleteChunks(ctx context.Context, prefix, version string, n int) error {
	return s.deleteSeq(ctx, func(yield func(string) bool) {
		for seq := 1; seq <= n; seq++ {
			if !yield(chunkKey(prefix, version, seq)) {
				return
			}
		}
	})
}

// deleteSeq deletes the chunk items with the keys seq yields.
func (s *Store) deleteSeq(ctx context.Context, keys iter.Seq[string]) error {
	writes := func(yield func(batch.Write) bool) {
		for k := range keys {
			key := map[string]types.AttributeValue{s.opts.ChunkKeyAttribute: &types.AttributeValueMemberS{Value: k}}
			if !yield(batch.Write{Table: s.chunks, Delete: key}) {
				return
			}
		}
	}
	_, err := batch.WriteSeq(ctx, s.c, writes, s.batchOptions(false))
	return err
}

// groupSize is how many chunk items of up to item bytes one BatchGetItem
// request can return whole: 40 at the default ChunkSize.
func groupSize(item int64) int {
	return int(max(1, min(maxBatchGetKeys, maxBatchGetBytes/item)))
}

// getChunks reads the chunks with the given keys, group keys per request,
// and returns the data of those that exist by key: from attribute Data, or
// for guide chunks from Options.Guide's data attribute. The groups are
// read on goroutines of their own; a panic on one (in the Client) is
// raised again in the caller's goroutine once all have ended.
func (s *Store) getChunks(ctx context.Context, keys []string, group int, consistent, guide bool) (map[string][]byte, error) {
	attr, typ := attrData, types.ScalarAttributeTypeB
	if guide {
		attr, typ = s.opts.Guide.DataAttribute, s.opts.Guide.DataType
	}
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
				req[i] = batch.Key{Table: s.chunks, Key: map[string]types.AttributeValue{
					s.opts.ChunkKeyAttribute: &types.AttributeValueMemberS{Value: k},
				}}
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
