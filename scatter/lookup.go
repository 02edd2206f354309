package scatter

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynashard/dynashard/internal/batch"
	"github.com/dynashard/dynashard/internal/ddbsize"
)

// Lookup finds an item by its sort key when its suffix is unknown, as under
// shard.Random: it reads the key (Base<Sep>i, sortKey) for every suffix i
// with BatchGetItem, ⌈N/100⌉ requests, retrying unprocessed keys with
// backoff. It returns the items found in suffix order: none, one, or
// several if the same sort key was written under several suffixes. For a
// table without a sort key (q.SortKey empty) sortKey must be nil and
// Lookup returns every shard's item.
//
// Lookup uses q's Table, PartitionKey, SortKey, Base, Strategy or
// Suffixes, Codec, Projection, Names and ConsistentRead; BatchGetItem has
// no index, key condition or filter, so a q with Index, KeyCondition or
// Filter is an invalid query. Keys that could not be read after the
// retries are reported as *ShardError values, joined (errors.As finds
// each); under Options.Partial the items found come back with a
// *PartialError.
func (s *Scatter) Lookup(ctx context.Context, q Query, sortKey types.AttributeValue) ([]Item, error) {
	switch {
	case q.Index != "":
		return nil, invalid("Lookup cannot read index %q (BatchGetItem reads tables)", q.Index)
	case q.KeyCondition != "" || q.Filter != "":
		return nil, invalid("Lookup takes no KeyCondition or Filter")
	case q.SortKey == "" && sortKey != nil:
		return nil, invalid("sort key value given, but the query has no SortKey")
	}
	p, err := newPlan(q)
	if err != nil {
		return nil, err
	}
	if q.SortKey != "" {
		if err := ddbsize.CheckKeyValue(q.SortKey, sortKey, true); err != nil {
			return nil, invalid("sort key: %v", err)
		}
	}
	keys := make([]batch.Key, len(p.pks))
	for i, pk := range p.pks {
		k := map[string]types.AttributeValue{q.PartitionKey: &types.AttributeValueMemberS{Value: pk}}
		if q.SortKey != "" {
			k[q.SortKey] = sortKey
		}
		keys[i] = batch.Key{Table: q.Table, Key: k}
	}
	keyAttrs := []string{q.PartitionKey}
	if q.SortKey != "" {
		keyAttrs = append(keyAttrs, q.SortKey)
	}
	requests := (len(keys) + batch.MaxKeysPerRequest - 1) / batch.MaxKeysPerRequest
	opts := func(o *batch.Options) {
		o.MaxConcurrency = s.concurrency(requests)
		o.KeyAttributes = map[string][]string{q.Table: keyAttrs}
		o.ConsistentRead = q.ConsistentRead
		if q.Projection != "" {
			o.Projections = map[string]batch.Projection{q.Table: lookupProjection(q)}
		}
	}
	found, st, err := batch.Get(ctx, s.c, keys, opts)
	s.mu.Lock()
	s.stats.BatchGets += int64(st.Requests)
	s.stats.Items += int64(len(found))
	s.stats.ConsumedCapacity += st.ConsumedCapacity
	s.mu.Unlock()

	items := make([]Item, 0, len(found))
	for _, f := range found {
		pk, _ := f.Item[q.PartitionKey].(*types.AttributeValueMemberS)
		if pk == nil {
			return nil, fmt.Errorf("scatter: lookup: item without partition key %q", q.PartitionKey)
		}
		_, suffix, perr := q.Codec.Parse(pk.Value)
		if perr != nil {
			return nil, fmt.Errorf("scatter: lookup: %w", perr)
		}
		items = append(items, Item{Suffix: suffix, Attrs: f.Item})
	}
	slices.SortFunc(items, func(a, b Item) int { return a.Suffix - b.Suffix })
	if err == nil {
		return items, nil
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	var ue *batch.UnprocessedError
	if !errors.As(err, &ue) {
		return nil, fmt.Errorf("scatter: lookup: %w", err)
	}
	cause := ue.Err
	if cause == nil {
		cause = err
	}
	failures := make([]*ShardError, 0, len(ue.Keys))
	for _, k := range ue.Keys {
		pk := k.Key[q.PartitionKey].(*types.AttributeValueMemberS).Value
		_, suffix, _ := q.Codec.Parse(pk)
		failures = append(failures, &ShardError{Suffix: suffix, Key: pk, Err: cause})
	}
	slices.SortFunc(failures, func(a, b *ShardError) int { return a.Suffix - b.Suffix })
	if s.opts.Partial {
		return items, &PartialError{Errs: failures}
	}
	errs := make([]error, len(failures))
	for i, f := range failures {
		errs[i] = f
	}
	return nil, errors.Join(errs...)
}

// lookupProjection is q's projection plus the partition key, which tells
// which suffix an item came from, with only the names it uses.
func lookupProjection(q Query) batch.Projection {
	expr := q.Projection
	names := map[string]string{}
	used := placeholders('#', expr)
	for k, v := range q.Names {
		if used[k] {
			names[k] = v
		}
	}
	if !projected(expr, q.Names)[q.PartitionKey] {
		expr += ", " + pkName
		names[pkName] = q.PartitionKey
	}
	if len(names) == 0 {
		names = nil
	}
	return batch.Projection{Expression: expr, Names: maps.Clone(names)}
}
