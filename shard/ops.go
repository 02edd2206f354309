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
// the strategy applied to the item's sort key (its id). With Random, each
// Put of the same id may land on a different suffix, creating a second copy
// rather than overwriting; use a calculated strategy when ids are rewritten.
func (t *Table[T]) Put(ctx context.Context, base string, item T, optFns ...func(*Options)) error {
	o, err := t.options(ctx, optFns)
	if err != nil {
		return err
	}
	av, id, err := t.marshal(base, item, o)
	if err != nil {
		return err
	}
	in := &dynamodb.PutItemInput{TableName: aws.String(t.l.Table), Item: av}
	c, err := t.condition(base, id, o)
	if err != nil {
		return err
	}
	in.ConditionExpression, in.ExpressionAttributeNames, in.ExpressionAttributeValues = c.expr, c.names, c.values
	if err := t.l.Record(ctx, t.c, base); err != nil {
		return err
	}
	if _, err := t.c.PutItem(ctx, in); err != nil {
		return t.requestErr("PutItem", keyString(av[t.l.PartitionKey]), id, err)
	}
	return nil
}

// Get reads the item with id under base with one GetItem on the computed
// physical key. It returns an error matching ErrNotFound if there is none.
func (t *Table[T]) Get(ctx context.Context, base, id string, optFns ...func(*Options)) (T, error) {
	var zero T
	o, err := t.options(ctx, optFns)
	if err != nil {
		return zero, err
	}
	key, pk, err := t.key(base, id)
	if err != nil {
		return zero, err
	}
	if err := t.l.Verify(ctx, t.c, base); err != nil {
		return zero, err
	}
	out, err := t.c.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(t.l.Table), Key: key, ConsistentRead: aws.Bool(o.ConsistentRead),
	})
	if err != nil {
		return zero, t.requestErr("GetItem", pk, id, err)
	}
	if out.Item == nil {
		return zero, fmt.Errorf("%w: table %s key %q id %q", ErrNotFound, t.l.Table, pk, id)
	}
	return t.unmarshal(out.Item, o)
}

// Update applies update to the item with id under base and returns the item
// as it is after the update (ReturnValues ALL_NEW). Like UpdateItem, it
// creates the item if it does not exist unless the condition forbids it.
// An update that sets, removes, adds to or deletes from a key attribute is
// an *ItemError (ErrInvalidKey) before any request.
func (t *Table[T]) Update(ctx context.Context, base, id string, update expression.UpdateBuilder, optFns ...func(*Options)) (T, error) {
	var zero T
	o, err := t.options(ctx, optFns)
	if err != nil {
		return zero, err
	}
	key, pk, err := t.key(base, id)
	if err != nil {
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
	if err := t.l.Record(ctx, t.c, base); err != nil {
		return zero, err
	}
	out, err := t.c.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(t.l.Table),
		Key:                       key,
		UpdateExpression:          e.Update(),
		ConditionExpression:       e.Condition(),
		ExpressionAttributeNames:  e.Names(),
		ExpressionAttributeValues: e.Values(),
		ReturnValues:              types.ReturnValueAllNew,
	})
	if err != nil {
		return zero, t.requestErr("UpdateItem", pk, id, err)
	}
	return t.unmarshal(out.Attributes, o)
}

// Delete deletes the item with id under base. Deleting an absent item is not
// an error (as in DynamoDB, and everywhere in dynashard) unless the
// condition says so.
func (t *Table[T]) Delete(ctx context.Context, base, id string, optFns ...func(*Options)) error {
	o, err := t.options(ctx, optFns)
	if err != nil {
		return err
	}
	key, pk, err := t.key(base, id)
	if err != nil {
		return err
	}
	in := &dynamodb.DeleteItemInput{TableName: aws.String(t.l.Table), Key: key}
	c, err := t.condition(base, id, o)
	if err != nil {
		return err
	}
	in.ConditionExpression, in.ExpressionAttributeNames, in.ExpressionAttributeValues = c.expr, c.names, c.values
	if err := t.l.Verify(ctx, t.c, base); err != nil {
		return err
	}
	if _, err := t.c.DeleteItem(ctx, in); err != nil {
		return t.requestErr("DeleteItem", pk, id, err)
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
