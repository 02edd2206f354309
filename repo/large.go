package repo

import (
	"context"
	"errors"
	"fmt"
	"maps"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynashard/dynashard/chunk"
	"github.com/dynashard/dynashard/internal/parentio"
	"github.com/dynashard/dynashard/shard"
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
// back the same type. An item that holds no payload (written by
// shard.Table, its Load or other code) reads as it is stored: with its own
// attribute of that name if it has one, else the field's zero value. An
// error reading a payload names the table, the id and the attribute.
//
// Get reads the item itself, with the Repo's consistency (strongly
// consistent to fill the cache, else as Options.ConsistentRead says),
// whatever the store's ConsistentRead option says; the store then reads
// the chunks the item names. Put records or checks the base's layout
// record (shard.Table.Shards) before writing anything.
//
// The store reads, switches and deletes the item where the base's
// shard-count history puts it, as shard.Table's Get, Update and Delete
// do: while a Reshard leaves the item several keys, its switch is one
// TransactWriteItems with checks on the other keys (so a version check
// runs on the one copy, wherever it is). With a checked layout the chunks
// (and S3 objects) are named after the item's logical key (base and id;
// chunk.Key.Name), not its physical key, so that shard.Table.Rebalance moves
// the item without separating it from its value; Sweep leaves such
// chunks alone. With an Unchecked layout, whose items never move, they
// are named as the guide names them, after the physical key.
//
// The zero value has no store; New refuses it.
type LargeField struct {
	// Attribute is the attribute name, as T marshals it. It must not be a
	// key or the version attribute.
	Attribute string
	// Store is a chunk store whose parent table is the Repo's table.
	Store *chunk.Store
}

func (l *LargeField) check(layout shard.Layout, version string) error {
	switch {
	case l.Store == nil:
		return fmt.Errorf("%w: repo: table %s: LargeField %q has no chunk store", ErrInvalid, layout.Table, l.Attribute)
	case l.Attribute == "" || l.Attribute == layout.PartitionKey || l.Attribute == layout.SortKey || l.Attribute == version:
		return fmt.Errorf("%w: repo: table %s: LargeField attribute %q must be a non-key, non-version attribute", ErrInvalid, layout.Table, l.Attribute)
	}
	return nil
}

// largeIsString records whether the large value was a string, so reads
// give back the type T declared.
const largeIsString = "dynashard_large_s"

// consistent makes a chunk call read its parent with strong consistency:
// the store's default is eventually consistent.
func consistent(o *chunk.Options) { o.ConsistentRead = true }

func (r *Repo[T]) chunkKey(base, id string) (chunk.Key, error) {
	pk, err := r.table.Key(base, id)
	if err != nil {
		return chunk.Key{}, err
	}
	return r.keyOf(base, pk, id), nil
}

// keyOf is the chunk key of id under base at physical key pk. With a
// checked layout its Name is the item's logical key, the same at every
// physical key the item may have, so that a move by Rebalance keeps the
// item's chunks (and objects) its own; the suffix 0 is one no shard count
// gives. An Unchecked layout has no history and its items never move:
// their chunks are named after the physical key, as the guide names them.
func (r *Repo[T]) keyOf(base, pk, id string) chunk.Key {
	k := chunk.Key{
		PartitionName: r.layout.PartitionKey, Partition: &types.AttributeValueMemberS{Value: pk},
		SortName: r.layout.SortKey, Sort: &types.AttributeValueMemberS{Value: id},
	}
	if !r.layout.Unchecked {
		k.Name = r.layout.Codec.Key(base, 0) + "#" + id
	}
	return k
}

// placed returns ctx with the item's parent requests going through shard's
// placement (internal/parentio): the chunk store reads, switches and
// deletes the parent where the base's history puts the item, in one
// transaction with checks on its other keys while there are several.
// write first records the base, or checks its record (see
// parentio.ForItem).
func (r *Repo[T]) placed(ctx context.Context, base, id string, write bool) (context.Context, error) {
	pc, err := parentio.ForItem(ctx, r.table, base, id, write)
	if err != nil {
		return nil, err
	}
	return parentio.With(ctx, pc), nil
}

func (r *Repo[T]) putLarge(ctx context.Context, base, id string, av map[string]types.AttributeValue, cond expression.ConditionBuilder) error {
	if _, err := r.chunkKey(base, id); err != nil { // checked before anything is sent
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
		return r.invalid("id %q: large attribute %q is %T, want B or S", id, attr, v)
	}
	delete(av, attr)
	delete(av, r.layout.PartitionKey) // the key goes in as key, not as attributes
	delete(av, r.layout.SortKey)
	if _, ok := av[largeIsString]; !ok {
		// Clear a flag left by an earlier string value.
		av[largeIsString] = &types.AttributeValueMemberNULL{Value: true}
	}
	// The store writes the parent itself, past shard.Table's check, at
	// the base's newest shard count, which the record tells: placed
	// records the base before the store writes any chunk.
	pctx, err := r.placed(ctx, base, id, true)
	if err != nil {
		return err
	}
	key, err := r.chunkKey(base, id)
	if err != nil {
		return err
	}
	_, err = r.opts.Large.Store.Put(pctx, key, data, func(o *chunk.PutOptions) {
		o.Attributes = av
		o.Condition = cond
	})
	return err
}

// readLarge completes an item Get has read (with the consistency it chose,
// whatever the store's ConsistentRead says): the payload is inline in it
// or in the chunks it names.
func (r *Repo[T]) readLarge(ctx context.Context, base, pk, id string, item map[string]types.AttributeValue, strong bool) (map[string]types.AttributeValue, error) {
	return r.complete(ctx, r.keyOf(base, pk, id), id, item, strong)
}

// resolveLarge completes an item read by a Query: the payload is inline in
// it or in the chunks it names.
func (r *Repo[T]) resolveLarge(ctx context.Context, base string, item map[string]types.AttributeValue, strong bool) (map[string]types.AttributeValue, error) {
	id, _ := item[r.layout.SortKey].(*types.AttributeValueMemberS)
	if id == nil {
		return nil, fmt.Errorf("repo: table %s: listed item lacks id %q", r.layout.Table, r.layout.SortKey)
	}
	key, err := r.chunkKey(base, id.Value)
	if err != nil {
		return nil, err
	}
	if pk, ok := item[r.layout.PartitionKey].(*types.AttributeValueMemberS); ok {
		key = r.keyOf(base, pk.Value, id.Value) // where the item is, whatever the base's newest N
	}
	return r.complete(ctx, key, id.Value, item, strong)
}

// complete puts the payload of item (its large value) under the large
// attribute. An item that holds no payload (written by shard.Table, Load
// or other code) is returned as it is: its large attribute, if it has one
// of its own, or the field's zero value.
func (r *Repo[T]) complete(ctx context.Context, key chunk.Key, id string, item map[string]types.AttributeValue, strong bool) (map[string]types.AttributeValue, error) {
	data, info, err := r.opts.Large.Store.Resolve(ctx, key, item, chunkRead(strong))
	switch {
	case errors.Is(err, chunk.ErrNotFound):
		return item, nil
	case err != nil:
		return nil, fmt.Errorf("repo: table %s id %q: large attribute %q: %w", r.layout.Table, id, r.opts.Large.Attribute, err)
	}
	return r.assemble(key, data, info.Attributes), nil
}

// chunkRead returns the chunk option for a read that follows a parent
// read of that consistency.
func chunkRead(strong bool) func(*chunk.Options) {
	if strong {
		return consistent
	}
	return nil
}

// assemble returns the item as T marshals it: the store's attributes, the
// key, and the payload under the large attribute.
func (r *Repo[T]) assemble(key chunk.Key, data []byte, attrs map[string]types.AttributeValue) map[string]types.AttributeValue {
	av := make(map[string]types.AttributeValue, len(attrs)+3)
	maps.Copy(av, attrs)
	av[r.layout.PartitionKey], av[r.layout.SortKey] = key.Partition, key.Sort
	if s, ok := av[largeIsString].(*types.AttributeValueMemberBOOL); ok && s.Value {
		av[r.opts.Large.Attribute] = &types.AttributeValueMemberS{Value: string(data)}
	} else if data != nil {
		av[r.opts.Large.Attribute] = &types.AttributeValueMemberB{Value: data}
	}
	delete(av, largeIsString)
	return av
}

// deleteLarge deletes the item and its chunks through the store, which
// returns nil for an absent item, after the layout check.
func (r *Repo[T]) deleteLarge(ctx context.Context, base, id string) error {
	key, err := r.chunkKey(base, id)
	if err != nil {
		return err
	}
	pctx, err := r.placed(ctx, base, id, false)
	if err != nil {
		return err
	}
	return r.opts.Large.Store.Delete(pctx, key)
}
