package repo

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynashard/dynashard/chunk"
)

// LargeField stores one attribute of T through a chunk store, so its value
// may exceed DynamoDB's 400 KB item limit. The Repo's item is the chunk
// store's parent item: the store keeps a value up to its InlineLimit inside
// the item and a larger one in chunk items, and switches the item's other
// attributes and the value together in one conditional update, so a reader
// never sees a new item with an old value. That is the threshold: set it
// with chunk.Options.InlineLimit.
//
// The attribute must marshal to B ([]byte) or S (string); reading gives
// back the same type.
//
// Get reads the item itself, with the Repo's consistency (strongly
// consistent to fill the cache, else as Options.ConsistentRead says),
// whatever the store's EventuallyConsistent option says; the store then
// reads the chunks the item names.
type LargeField struct {
	// Attribute is the attribute name, as T marshals it.
	Attribute string
	// Store is a chunk store whose parent table is the Repo's table.
	Store *chunk.Store
}

func (l *LargeField) check(table, pk, sk, version string) error {
	switch {
	case l.Store == nil:
		return fmt.Errorf("repo: table %s: LargeField %q has no chunk store", table, l.Attribute)
	case l.Attribute == "" || l.Attribute == pk || l.Attribute == sk || l.Attribute == version:
		return fmt.Errorf("repo: table %s: LargeField attribute %q must be a non-key, non-version attribute", table, l.Attribute)
	}
	return nil
}

// largeAttr records whether the large value was a string, so reads give
// back the type T declared.
const largeIsString = "dynashard_large_s"

func (r *Repo[T]) chunkKey(base, id string) (chunk.Key, error) {
	pk, err := r.table.Key(base, id)
	if err != nil {
		return chunk.Key{}, err
	}
	return chunk.Key{
		PartitionName: r.pk, Partition: &types.AttributeValueMemberS{Value: pk},
		SortName: r.sk, Sort: &types.AttributeValueMemberS{Value: id},
	}, nil
}

func (r *Repo[T]) putLarge(ctx context.Context, base, id string, av map[string]types.AttributeValue, cond expression.ConditionBuilder) error {
	key, err := r.chunkKey(base, id)
	if err != nil {
		return err
	}
	attr := r.opts.Large.Attribute
	var data []byte
	switch v := av[attr].(type) {
	case nil, *types.AttributeValueMemberNULL:
	case *types.AttributeValueMemberB:
		data = v.Value
	case *types.AttributeValueMemberS:
		data = []byte(v.Value)
		av[largeIsString] = &types.AttributeValueMemberBOOL{Value: true}
	default:
		return invalidError{fmt.Errorf("repo: table %s id %q: large attribute %q is %T, want B or S", r.name, id, attr, v)}
	}
	delete(av, attr)
	delete(av, r.pk) // the key goes in as key, not as attributes
	delete(av, r.sk)
	if _, ok := av[largeIsString]; !ok {
		// Clear a flag left by an earlier string value.
		av[largeIsString] = &types.AttributeValueMemberNULL{Value: true}
	}
	_, err = r.opts.Large.Store.Put(ctx, key, data, func(o *chunk.PutOptions) {
		o.Attributes = av
		o.Condition = cond
	})
	return err
}

// readLarge completes an item Get has read (with the consistency it chose,
// whatever the store's EventuallyConsistent says): the payload is inline
// in it or in the chunks it names.
func (r *Repo[T]) readLarge(ctx context.Context, pk, id string, item map[string]types.AttributeValue) (map[string]types.AttributeValue, error) {
	key := chunk.Key{
		PartitionName: r.pk, Partition: &types.AttributeValueMemberS{Value: pk},
		SortName: r.sk, Sort: &types.AttributeValueMemberS{Value: id},
	}
	data, info, err := r.opts.Large.Store.Resolve(ctx, key, item)
	if errors.Is(err, chunk.ErrNotFound) {
		return nil, fmt.Errorf("%w: table %s key %q id %q", ErrNotFound, r.name, pk, id)
	}
	if err != nil {
		return nil, classify(err)
	}
	return r.assemble(key, data, info.Attributes), nil
}

// resolveLarge completes an item read by a Query: the payload is inline in
// it or in the chunks it names.
func (r *Repo[T]) resolveLarge(ctx context.Context, base string, item map[string]types.AttributeValue) (map[string]types.AttributeValue, error) {
	id, _ := item[r.sk].(*types.AttributeValueMemberS)
	if id == nil {
		return nil, fmt.Errorf("repo: table %s: listed item lacks id %q", r.name, r.sk)
	}
	key, err := r.chunkKey(base, id.Value)
	if err != nil {
		return nil, classify(err)
	}
	data, info, err := r.opts.Large.Store.Resolve(ctx, key, item)
	if err != nil {
		return nil, classify(err)
	}
	return r.assemble(key, data, info.Attributes), nil
}

// assemble returns the item as T marshals it: the store's attributes, the
// key, and the payload under the large attribute.
func (r *Repo[T]) assemble(key chunk.Key, data []byte, attrs map[string]types.AttributeValue) map[string]types.AttributeValue {
	av := make(map[string]types.AttributeValue, len(attrs)+3)
	for k, v := range attrs {
		av[k] = v
	}
	av[r.pk], av[r.sk] = key.Partition, key.Sort
	if s, ok := av[largeIsString].(*types.AttributeValueMemberBOOL); ok && s.Value {
		av[r.opts.Large.Attribute] = &types.AttributeValueMemberS{Value: string(data)}
	} else if data != nil {
		av[r.opts.Large.Attribute] = &types.AttributeValueMemberB{Value: data}
	}
	delete(av, largeIsString)
	return av
}

func (r *Repo[T]) deleteLarge(ctx context.Context, base, id string) error {
	key, err := r.chunkKey(base, id)
	if err != nil {
		return err
	}
	err = r.opts.Large.Store.Delete(ctx, key)
	if errors.Is(err, chunk.ErrNotFound) {
		return nil
	}
	return err
}
