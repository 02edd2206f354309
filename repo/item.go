package repo

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynashard/dynashard/internal/avmap"
	"github.com/dynashard/dynashard/internal/ddbsize"
	"github.com/dynashard/dynashard/internal/parentio"
	"github.com/dynashard/dynashard/shard"
)

// Create stores v under base only if no item has its id yet; otherwise it
// fails with ErrConflict. With optimistic locking it stores version 1, and
// refuses a value whose version is not 0 with ErrInvalid. Unlike a Put of
// version 0, it never takes over an item without a version. It takes no
// per-call options: every field of Options that a write uses shapes the
// Repo (New's).
func (r *Repo[T]) Create(ctx context.Context, base string, v T) (T, error) {
	return r.put(ctx, "repo.Create", base, v, true)
}

// Put stores v under base and returns it as stored: with optimistic
// locking, its version attribute is the new version. The id is v's
// sort-key attribute. Before writing it checks the Layout against the
// base's record, writing the record for a base never written
// (shard.Table.Shards); a mismatch is a *shard.LayoutError. Like Create
// and Delete, it takes no per-call options.
func (r *Repo[T]) Put(ctx context.Context, base string, v T) (T, error) {
	return r.put(ctx, "repo.Put", base, v, false)
}

func (r *Repo[T]) put(ctx context.Context, op, base string, v T, create bool) (_ T, err error) {
	ctx, call := r.start(ctx, op, base)
	defer func() { call.End(ctx, err) }()
	if _, err := r.call(ctx, nil); err != nil {
		return v, err
	}
	av, err := avmap.Marshal(v, r.encoder())
	if err != nil {
		return v, r.invalid("marshal %T: %w", v, err)
	}
	sk, pk := r.layout.SortKey, r.layout.PartitionKey
	id, _ := av[sk].(*types.AttributeValueMemberS)
	if id == nil {
		return v, r.invalid("%T has no string attribute %q (the id)", v, sk)
	}
	call.SetString(attrID, id.Value)
	var cond expression.ConditionBuilder
	if create {
		cond = expression.AttributeNotExists(expression.Name(pk))
	}
	if r.opts.Version != "" {
		if cond, err = r.advance(av, id.Value, create); err != nil {
			return v, err
		}
		if v, err = r.decode(av); err != nil {
			return v, err
		}
	}
	if r.cache != nil {
		defer r.cache.invalidate(r.cacheKey(base, id.Value))
	}
	if r.opts.Large != nil {
		return v, r.putLarge(ctx, base, id.Value, av, cond)
	}
	return v, r.table.Put(ctx, base, v, func(o *shard.Options) { o.Condition = cond })
}

// advance sets av's version to the next one and returns the condition
// that the stored version is av's current one.
func (r *Repo[T]) advance(av map[string]types.AttributeValue, id string, create bool) (expression.ConditionBuilder, error) {
	var cond expression.ConditionBuilder
	name := r.opts.Version
	cur, err := versionOf(av, name)
	switch {
	case err != nil:
		return cond, r.invalid("id %q: %v", id, err)
	case cur == math.MaxInt64:
		return cond, r.invalid("id %q: version attribute %q = %d cannot be advanced", id, name, cur)
	case cur == 0 && create:
		cond = expression.AttributeNotExists(expression.Name(r.layout.PartitionKey))
	case cur == 0:
		// No item, or one whose version is absent, NULL or 0 (written
		// without versions, e.g. bulk-loaded), which Get reads as 0.
		v := expression.Name(name)
		cond = expression.AttributeNotExists(v).Or(v.AttributeType(expression.Null), v.Equal(expression.Value(0)))
	case create:
		return cond, r.invalid("id %q: Create of a value with version %d, want 0", id, cur)
	default:
		cond = expression.Name(name).Equal(expression.Value(cur))
	}
	av[name] = &types.AttributeValueMemberN{Value: strconv.FormatInt(cur+1, 10)}
	return cond, nil
}

func versionOf(av map[string]types.AttributeValue, name string) (int64, error) {
	switch n := av[name].(type) {
	case nil, *types.AttributeValueMemberNULL:
		return 0, nil
	case *types.AttributeValueMemberN:
		v, err := strconv.ParseInt(n.Value, 10, 64)
		if err != nil || v < 0 {
			return 0, fmt.Errorf("version attribute %q = %q, want a whole number >= 0", name, n.Value)
		}
		return v, nil
	default:
		return 0, fmt.Errorf("version attribute %q is %T, want a number", name, n)
	}
}

// Get returns the item with id under base, read as shard.Table.Get reads
// it (after the layout check, one GetItem while the base's history puts
// id at one key; a TransactGetItems snapshot of its keys with
// ConsistentRead while there are several), except that the layout check
// uses the cached record even with ConsistentRead (shard.Table.Get then
// reads the record again), plus the chunk reads of a
// large attribute; or a cache hit. It returns an
// error matching ErrNotFound if there is none. The value is the caller's
// own, also on a cache hit: changing it changes nothing stored. Per call,
// ConsistentRead applies to a Repo without a cache (a cache is always
// filled by strongly consistent reads).
func (r *Repo[T]) Get(ctx context.Context, base, id string, optFns ...func(*Options)) (_ T, err error) {
	ctx, call := r.start(ctx, "repo.Get", base)
	defer func() { call.End(ctx, err) }()
	call.SetString(attrID, id)
	var zero T
	o, err := r.call(ctx, optFns)
	if err != nil {
		return zero, err
	}
	pk, err := r.table.Key(base, id)
	if err != nil {
		return zero, err
	}
	if r.cache == nil {
		av, err := r.read(ctx, base, pk, id, o.ConsistentRead)
		if err != nil {
			return zero, err
		}
		return r.decode(av)
	}
	av, err := r.cache.get(ctx, r.cacheKey(base, id), func(ctx context.Context) (map[string]types.AttributeValue, int64, error) {
		// Only a strongly consistent read may fill the cache: an eventually
		// consistent one just after a write through this Repo may return
		// the previous value, which would then be served for the TTL.
		av, err := r.read(ctx, base, pk, id, true)
		if err != nil {
			return nil, 0, err
		}
		// Weigh the entry by its stored size, the closest cheap measure of
		// the memory it holds.
		size, err := ddbsize.ItemSize(av)
		return av, int64(size), err
	})
	if err != nil {
		return zero, err
	}
	// The stored item is shared by every Get: decode a copy, so that
	// neither T's unmarshaller nor the caller can reach it.
	return r.decode(cloneItem(av))
}

// read returns the stored item with id under base, with its large
// attribute (if any) in place, read as shard.Table.Get reads it: after the
// layout check against base's record, at the key the base's history puts
// it (a snapshot of every such key with consistent, while there are
// several).
func (r *Repo[T]) read(ctx context.Context, base, pk, id string, consistent bool) (map[string]types.AttributeValue, error) {
	pc, err := parentio.ForItem(ctx, r.table, base, id, false)
	if err != nil {
		return nil, err
	}
	out, err := pc.GetItem(ctx, &dynamodb.GetItemInput{ConsistentRead: aws.Bool(consistent)})
	if err != nil {
		return nil, fmt.Errorf("repo: get table %s id %q: %w", r.layout.Table, id, err)
	}
	if out.Item == nil {
		return nil, fmt.Errorf("%w: table %s key %q id %q", ErrNotFound, r.layout.Table, pk, id)
	}
	if r.opts.Large == nil {
		return out.Item, nil
	}
	at, _ := out.Item[r.layout.PartitionKey].(*types.AttributeValueMemberS)
	if at == nil {
		return nil, fmt.Errorf("repo: table %s id %q: stored item lacks its key %q", r.layout.Table, id, r.layout.PartitionKey)
	}
	return r.readLarge(ctx, base, at.Value, id, out.Item, consistent)
}

// Delete removes the item with id under base, after the layout check
// (shard.Table.Shards). Deleting an absent item is not an error, as
// everywhere in dynashard. It takes no per-call options.
func (r *Repo[T]) Delete(ctx context.Context, base, id string) (err error) {
	ctx, call := r.start(ctx, "repo.Delete", base)
	defer func() { call.End(ctx, err) }()
	call.SetString(attrID, id)
	if _, err := r.call(ctx, nil); err != nil {
		return err
	}
	if r.cache != nil {
		defer r.cache.invalidate(r.cacheKey(base, id))
	}
	if r.opts.Large != nil {
		return r.deleteLarge(ctx, base, id)
	}
	return r.table.Delete(ctx, base, id)
}

// cloneItem returns a deep copy of item: no slice, map or pointer of the
// copy is shared with item.
func cloneItem(item map[string]types.AttributeValue) map[string]types.AttributeValue {
	if item == nil {
		return nil
	}
	out := make(map[string]types.AttributeValue, len(item))
	for k, v := range item {
		out[k] = cloneValue(v)
	}
	return out
}

func cloneValue(v types.AttributeValue) types.AttributeValue {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		c := *v
		return &c
	case *types.AttributeValueMemberN:
		c := *v
		return &c
	case *types.AttributeValueMemberBOOL:
		c := *v
		return &c
	case *types.AttributeValueMemberNULL:
		c := *v
		return &c
	case *types.AttributeValueMemberB:
		return &types.AttributeValueMemberB{Value: bytes.Clone(v.Value)}
	case *types.AttributeValueMemberSS:
		return &types.AttributeValueMemberSS{Value: slices.Clone(v.Value)}
	case *types.AttributeValueMemberNS:
		return &types.AttributeValueMemberNS{Value: slices.Clone(v.Value)}
	case *types.AttributeValueMemberBS:
		var bs [][]byte
		if v.Value != nil {
			bs = make([][]byte, len(v.Value))
			for i, b := range v.Value {
				bs[i] = bytes.Clone(b)
			}
		}
		return &types.AttributeValueMemberBS{Value: bs}
	case *types.AttributeValueMemberL:
		var l []types.AttributeValue
		if v.Value != nil {
			l = make([]types.AttributeValue, len(v.Value))
			for i, e := range v.Value {
				l[i] = cloneValue(e)
			}
		}
		return &types.AttributeValueMemberL{Value: l}
	case *types.AttributeValueMemberM:
		return &types.AttributeValueMemberM{Value: cloneItem(v.Value)}
	}
	return v // nil, or a member type this SDK version does not know
}
