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
	"github.com/dynashard/dynashard/shard"
)

// Lookup finds an item of base by its sort key when its suffix is unknown,
// as under shard.Random: it reads the key (base<Sep>i, sortKey) for every
// suffix i (of Options.Suffixes, or 1..N, N the largest count of the
// base's shard-count history, so that every count's suffixes are covered)
// with BatchGetItem, ⌈N/100⌉ requests, retrying unprocessed keys with
// backoff. It returns the items found in suffix order: none, one, or
// several if the same sort key was written under several suffixes. While
// a Rebalance may move items under it, an item met at two keys is
// returned once (see "Resharding" in the package doc). For a layout
// without a sort key, sortKey must be nil and Lookup returns every
// shard's item.
//
// Lookup uses the Options' Projection, Names, ConsistentRead and
// Suffixes; BatchGetItem has no index, key condition or filter, so an
// index layout, a KeyCondition or a Filter (or a sortKey that is not a
// valid key value) makes an invalid query, rejected before any request.
// Then the layout is checked as for All. Keys that could not be read
// after the retries are reported as *ShardError values, joined
// (errors.As finds each); under Options.Partial the items found come back
// with a *PartialError.
func (s *Scatter) Lookup(ctx context.Context, base string, sortKey types.AttributeValue, optFns ...func(*Options)) (items []Item, err error) {
	ctx, call := s.begin(ctx, "scatter.Lookup", base)
	var p *plan
	defer func() { s.end(ctx, call, p, len(items), err) }()
	if p, err = s.plan(ctx, base, optFns); err != nil {
		return nil, err
	}
	if err := checkLookup(p, sortKey); err != nil {
		return nil, err
	}
	refreshed, err := s.checkLayout(ctx, p)
	defer refreshed(false)
	if err != nil {
		return nil, err
	}
	l, o := p.l, p.o
	keys := make([]batch.Key, len(p.pks))
	for i, pk := range p.pks {
		k := map[string]types.AttributeValue{l.PartitionKey: &types.AttributeValueMemberS{Value: pk}}
		if l.SortKey != "" {
			k[l.SortKey] = sortKey
		}
		keys[i] = batch.Key{Table: l.Table, Key: k}
	}
	keyAttrs := []string{l.PartitionKey}
	if l.SortKey != "" {
		keyAttrs = append(keyAttrs, l.SortKey)
	}
	requests := (len(keys) + batch.MaxKeysPerRequest - 1) / batch.MaxKeysPerRequest
	found, st, err := batch.Get(ctx, s.c, keys, func(bo *batch.Options) {
		bo.MaxConcurrency = concurrency(o, requests)
		bo.KeyAttributes = map[string][]string{l.Table: keyAttrs}
		bo.ConsistentRead = o.ConsistentRead
		if o.Projection != "" {
			bo.Projections = map[string]batch.Projection{l.Table: lookupProjection(l, o)}
		}
	})
	s.mu.Lock()
	s.stats.BatchGets += int64(st.Requests)
	s.stats.Items += int64(len(found))
	s.mu.Unlock()

	items = make([]Item, 0, len(found))
	for _, f := range found {
		pk, _ := f.Item[l.PartitionKey].(*types.AttributeValueMemberS)
		if pk == nil {
			return nil, fmt.Errorf("scatter: lookup: item without partition key %q", l.PartitionKey)
		}
		_, suffix, perr := l.Codec.Parse(pk.Value)
		if perr != nil {
			return nil, fmt.Errorf("scatter: lookup: %w", perr)
		}
		attrs := f.Item
		if hasHidden(attrs) {
			attrs = withoutHidden(attrs)
		}
		items = append(items, Item{Suffix: suffix, Attrs: attrs})
	}
	slices.SortFunc(items, func(a, b Item) int { return a.Suffix - b.Suffix })
	items = p.lookupOnce(items, sortKey)
	if err == nil {
		return items, nil
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	return lookupFailed(p, items, err)
}

// checkLookup checks what Lookup needs beyond a plan: a table layout, no
// condition or filter, and a sort-key value of the layout's type (nil
// without a sort key).
func checkLookup(p *plan, sortKey types.AttributeValue) error {
	l, o := p.l, p.o
	switch {
	case l.Index != "":
		return invalid("Lookup cannot read index %q (BatchGetItem reads tables)", l.Index)
	case o.KeyCondition != "" || o.Filter != "":
		return invalid("Lookup takes no KeyCondition or Filter")
	case l.SortKey == "" && sortKey != nil:
		return invalid("sort key value given, but the layout has no SortKey")
	case l.SortKey == "":
		return nil
	}
	if err := ddbsize.CheckKeyValue(l.SortKey, sortKey, true); err != nil {
		return invalid("sort key: %v", err)
	}
	if kind, _ := valueKind(sortKey); kind != sortKind(l) {
		return invalid("sort key value is %c, the layout's SortKeyType is %c", kind, sortKind(l))
	}
	return nil
}

// lookupFailed turns batch.Get's error into Lookup's: one *ShardError per
// key left unread, joined, or under Options.Partial the items found with a
// *PartialError.
func lookupFailed(p *plan, items []Item, err error) ([]Item, error) {
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
		pk := k.Key[p.l.PartitionKey].(*types.AttributeValueMemberS).Value
		_, suffix, _ := p.l.Codec.Parse(pk)
		failures = append(failures, &ShardError{Suffix: suffix, Key: pk, Err: cause})
	}
	slices.SortFunc(failures, func(a, b *ShardError) int { return a.Suffix - b.Suffix })
	if p.o.Partial {
		return items, &PartialError{Errs: failures}
	}
	errs := make([]error, len(failures))
	for i, f := range failures {
		errs[i] = f
	}
	return nil, errors.Join(errs...)
}

// lookupProjection is o's projection plus the partition key, which tells
// which suffix an item came from, with only the names it uses.
func lookupProjection(l shard.Layout, o Options) batch.Projection {
	expr := o.Projection
	names := map[string]string{}
	used := placeholders('#', expr)
	for k, v := range o.Names {
		if used[k] {
			names[k] = v
		}
	}
	if !projected(expr, o.Names)[l.PartitionKey] {
		expr += ", " + pkName
		names[pkName] = l.PartitionKey
	}
	if len(names) == 0 {
		names = nil
	}
	return batch.Projection{Expression: expr, Names: maps.Clone(names)}
}
