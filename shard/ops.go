package shard

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Put writes item under the logical key base: the physical key comes from
// the strategy, at the base's newest shard count, applied to the item's
// sort key (its id). A copy of the item written under an older count of
// the base's history stays where it is: reads prefer the newest one, and
// [Rebalance] removes it. With a Condition, while the history puts id
// elsewhere too, an older copy is first moved to the newest key (as Update
// does) so that the condition tests the item as it stands. With Random, each Put of the same id may land on
// a different suffix, creating a second copy rather than overwriting; use
// a calculated strategy when ids are rewritten.
func (t *Table[T]) Put(ctx context.Context, base string, item T, optFns ...func(*Options)) error {
	o, err := t.options(ctx, optFns)
	if err != nil {
		return err
	}
	c, err := t.condition(base, "", o)
	if err != nil {
		return err
	}
	av, id, err := t.marshalFor(ctx, base, item, o)
	if err != nil {
		return err
	}
	if c.expr != nil {
		// The condition is about the item as it stands: bring an older
		// copy to where the Put writes before testing it there.
		if err := t.settleAt(ctx, base, id, keyString(av[t.l.PartitionKey])); err != nil {
			return err
		}
	}
	in := &dynamodb.PutItemInput{TableName: aws.String(t.l.Table), Item: av}
	in.ConditionExpression, in.ExpressionAttributeNames, in.ExpressionAttributeValues = c.expr, c.names, c.values
	var a attempts
	_, err = t.c.PutItem(ctx, in, t.observe(&a))
	t.reportAttempts(ctx, base, &a, err)
	if err != nil {
		return t.requestErr("PutItem", keyString(av[t.l.PartitionKey]), id, err)
	}
	return nil
}

// Get reads the item with id under base. It tries the physical key of the
// base's newest shard count first, then those of older counts in the
// base's history (each key once), so it costs one GetItem for an item
// written since the last Reshard and at most one per count of the history
// otherwise; with ConsistentRead the base's record is read again too (one
// more GetItem), so that a Reshard in another process is seen at once. It
// returns an error matching ErrNotFound if no key holds the item.
func (t *Table[T]) Get(ctx context.Context, base, id string, optFns ...func(*Options)) (T, error) {
	var zero T
	o, err := t.options(ctx, optFns)
	if err != nil {
		return zero, err
	}
	if err := t.check(base, id); err != nil {
		return zero, err
	}
	pks, err := t.candidates(ctx, base, id, o.ConsistentRead)
	if err != nil {
		return zero, err
	}
	item, _, err := t.find(ctx, pks, id, o.ConsistentRead)
	if err != nil {
		return zero, err
	}
	if item == nil {
		return zero, fmt.Errorf("%w: table %s key %q id %q", ErrNotFound, t.l.Table, pks[0], id)
	}
	return t.unmarshal(item, o)
}

// find reads id at each key of pks in turn and returns the first item
// found and its key's index; a nil item if none holds it.
func (t *Table[T]) find(ctx context.Context, pks []string, id string, consistent bool) (map[string]types.AttributeValue, int, error) {
	for i, pk := range pks {
		out, err := t.c.GetItem(ctx, &dynamodb.GetItemInput{
			TableName: aws.String(t.l.Table), Key: t.keyAt(pk, id), ConsistentRead: aws.Bool(consistent),
		})
		if err != nil {
			return nil, 0, t.requestErr("GetItem", pk, id, err)
		}
		if out.Item != nil {
			return out.Item, i, nil
		}
	}
	return nil, 0, nil
}

// Update applies update to the item with id under base and returns the item
// as it is after the update (ReturnValues ALL_NEW). Like UpdateItem, it
// creates the item if it does not exist unless the condition forbids it.
// An update that sets, removes, adds to or deletes from a key attribute is
// an *ItemError (ErrInvalidKey) before any request.
//
// The update applies at the base's newest shard count. While the base's
// history has counts that put id elsewhere, Update first looks for the
// item there with consistent GetItems and moves it (as [Rebalance] does)
// before updating, so that an update never starts a new item beside an
// old one.
func (t *Table[T]) Update(ctx context.Context, base, id string, update expression.UpdateBuilder, optFns ...func(*Options)) (T, error) {
	var zero T
	o, err := t.options(ctx, optFns)
	if err != nil {
		return zero, err
	}
	if err := t.check(base, id); err != nil {
		return zero, err
	}
	e, _, err := expr(o.Condition, &update)
	if err != nil {
		return zero, t.itemErr(base, id, fmt.Errorf("update expression: %w", err))
	}
	for _, name := range updatedNames(aws.ToString(e.Update()), e.Names()) {
		if name == t.l.PartitionKey || name == t.l.SortKey {
			return zero, t.itemErr(base, id, fmt.Errorf("%w: the update changes key attribute %q", ErrInvalidKey, name))
		}
	}
	h, err := t.l.recorded(ctx, t.c, base, t.l.historyTTL())
	if err != nil {
		return zero, err
	}
	pks, err := t.keysOf(base, id, h)
	if err != nil {
		return zero, err
	}
	if err := t.settle(ctx, pks, id); err != nil {
		return zero, err
	}
	var a attempts
	out, err := t.c.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(t.l.Table),
		Key:                       t.keyAt(pks[0], id),
		UpdateExpression:          e.Update(),
		ConditionExpression:       e.Condition(),
		ExpressionAttributeNames:  e.Names(),
		ExpressionAttributeValues: e.Values(),
		ReturnValues:              types.ReturnValueAllNew,
	}, t.observe(&a))
	t.reportAttempts(ctx, base, &a, err)
	if err != nil {
		return zero, t.requestErr("UpdateItem", pks[0], id, err)
	}
	return t.unmarshal(out.Attributes, o)
}

// settleAt is settle for the item id that Put writes at pk.
func (t *Table[T]) settleAt(ctx context.Context, base, id, pk string) error {
	h, err := t.l.recorded(ctx, t.c, base, t.l.historyTTL())
	if err != nil {
		return err
	}
	pks, err := t.keysOf(base, id, h)
	if err != nil || pks[0] != pk {
		return err // a history newer than the Put's: settle nothing
	}
	return t.settle(ctx, pks, id)
}

// settle makes sure that id, if it exists under any of pks, exists under
// pks[0]: if pks[0] lacks it, the first copy found elsewhere is moved
// there. Nothing is read when pks has one key.
func (t *Table[T]) settle(ctx context.Context, pks []string, id string) error {
	if len(pks) < 2 {
		return nil
	}
	item, i, err := t.find(ctx, pks, id, true)
	if err != nil || item == nil || i == 0 {
		return err
	}
	_, err = t.l.move(ctx, t.c, item, pks[i], pks[0])
	return err
}

// Delete deletes the item with id under base: at the physical key of
// every shard count in the base's history (one DeleteItem per distinct
// key), so that no older copy survives it. Deleting an absent item is not
// an error (as in DynamoDB, and everywhere in dynashard) unless the
// condition says so. With a condition and more than one key, Delete first
// moves the item to the newest key (as Update does), applies the
// condition there, and deletes the older keys only if it held.
func (t *Table[T]) Delete(ctx context.Context, base, id string, optFns ...func(*Options)) error {
	o, err := t.options(ctx, optFns)
	if err != nil {
		return err
	}
	if err := t.check(base, id); err != nil {
		return err
	}
	c, err := t.condition(base, id, o)
	if err != nil {
		return err
	}
	pks, err := t.candidates(ctx, base, id, c.expr != nil)
	if err != nil {
		return err
	}
	if c.expr != nil {
		if err := t.settle(ctx, pks, id); err != nil {
			return err
		}
	}
	for i, pk := range pks {
		in := &dynamodb.DeleteItemInput{TableName: aws.String(t.l.Table), Key: t.keyAt(pk, id)}
		if i == 0 {
			in.ConditionExpression, in.ExpressionAttributeNames, in.ExpressionAttributeValues = c.expr, c.names, c.values
		}
		if _, err := t.c.DeleteItem(ctx, in); err != nil {
			return t.requestErr("DeleteItem", pk, id, err)
		}
	}
	return nil
}

// condition is Options.Condition as a request's expression fields, all nil
// when there is none.
type condition struct {
	expr   *string
	names  map[string]string
	values map[string]types.AttributeValue
}

func (t *Table[T]) condition(base, id string, o Options) (condition, error) {
	e, ok, err := expr(o.Condition, nil)
	if err != nil {
		return condition{}, t.itemErr(base, id, fmt.Errorf("condition: %w", err))
	}
	if !ok {
		return condition{}, nil
	}
	return condition{e.Condition(), e.Names(), e.Values()}, nil
}
