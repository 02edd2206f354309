package shard

import (
	"context"
	"fmt"
	"maps"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynashard/dynashard/internal/observe"
	"github.com/dynashard/dynashard/internal/parentio"
	"github.com/dynashard/dynashard/internal/record"
	"github.com/dynashard/dynashard/internal/setclause"
)

// Package repo stores a large value through a chunk store, which reads,
// switches and deletes the value's parent item itself. Those requests come
// here (internal/parentio), so that they act on the item where the base's
// history puts it, exactly as Get, Update and Delete do: a Rebalance move
// or a write from a stale view can then never separate the parent from
// its value or leave two copies of it.
func init() {
	parentio.ForItem = func(ctx context.Context, table any, base, id string, write bool) (parentio.Client, error) {
		t, ok := table.(interface {
			placed(ctx context.Context, base, id string, write bool) (parentio.Client, error)
		})
		if !ok {
			return nil, fmt.Errorf("shard: %T is not a *shard.Table", table)
		}
		return t.placed(ctx, base, id, write)
	}
}

// placed returns the placement of the item with id under base. With
// write set it first checks the layout against base's record, writing
// the record if the base has none, as a write through the Table does:
// repo's Put of a large value calls it so before the chunk store writes
// any chunk, so that a layout mismatch leaves nothing behind.
func (t *Table[T]) placed(ctx context.Context, base, id string, write bool) (parentio.Client, error) {
	if err := t.check(base, id); err != nil {
		return nil, err
	}
	if write {
		if _, err := t.rec.Recorded(ctx, t.c, base, t.rec.TTL); err != nil {
			return nil, err
		}
	}
	return placedItem[T]{t, base, id}, nil
}

// placedItem sends the parent requests of one item (base, id); the Key
// of a request is ignored.
type placedItem[T any] struct {
	t        *Table[T]
	base, id string
}

// GetItem reads the item as Get does, with the request's consistency, but
// from the cached view whatever the consistency: within the view's
// deadline its keys are every key that can hold the item.
func (p placedItem[T]) GetItem(ctx context.Context, in *dynamodb.GetItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	consistent := aws.ToBool(in.ConsistentRead)
	v, err := p.t.readView(ctx, p.base, false)
	if err != nil {
		return nil, err
	}
	keys, err := p.t.writeKeys(v, p.base, p.id)
	if err != nil {
		return nil, err
	}
	fctx, cancel := context.WithDeadline(ctx, v.Deadline(p.t.rec.TTL))
	defer cancel()
	item, err := p.t.find(fctx, p.base, p.id, keys, consistent)
	if err != nil {
		return nil, p.t.late(ctx, v, err)
	}
	return &dynamodb.GetItemOutput{Item: item}, nil
}

// UpdateItem applies the update where the item is, as Update does.
func (p placedItem[T]) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	v, keys, err := p.view(ctx)
	if err != nil {
		return nil, err
	}
	op := txOp{update: in.UpdateExpression, cond: condition{in.ConditionExpression, in.ExpressionAttributeNames, in.ExpressionAttributeValues}}
	if len(keys) > 1 {
		op.token = newToken()
		op.update, op.cond = withToken(op, op.token)
	}
	out := &dynamodb.UpdateItemOutput{}
	_, err = p.t.write(ctx, v, p.base, p.id, keys, op, func(ctx context.Context, opts []func(*dynamodb.Options)) error {
		req := *in
		req.TableName, req.Key = aws.String(p.t.l.Table), p.t.keyAt(keys[0], p.id)
		o, err := observe.Do(ctx, p.t.c.UpdateItem, &req, opts...)
		if err == nil {
			out = o
		}
		return err
	}, optFns...)
	return out, err
}

// DeleteItem deletes the item where it is, as Delete does.
func (p placedItem[T]) DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	v, keys, err := p.view(ctx)
	if err != nil {
		return nil, err
	}
	op := txOp{delete: true, cond: condition{in.ConditionExpression, in.ExpressionAttributeNames, in.ExpressionAttributeValues}}
	_, err = p.t.write(ctx, v, p.base, p.id, keys, op, func(ctx context.Context, opts []func(*dynamodb.Options)) error {
		req := *in
		req.TableName, req.Key = aws.String(p.t.l.Table), p.t.keyAt(keys[0], p.id)
		_, err := observe.Do(ctx, p.t.c.DeleteItem, &req, opts...)
		return err
	}, optFns...)
	return &dynamodb.DeleteItemOutput{}, err
}

func (p placedItem[T]) view(ctx context.Context) (record.View, []string, error) {
	return p.t.writeTarget(ctx, p.base, p.id)
}

// withToken adds the setting of the item's token to op's update: to its
// SET clause, or as one.
func withToken(op txOp, tok string) (*string, condition) {
	update := aws.ToString(op.update)
	c := op.cond
	c.names, c.values = maps.Clone(c.names), maps.Clone(c.values)
	if c.names == nil {
		c.names = map[string]string{}
	}
	if c.values == nil {
		c.values = map[string]types.AttributeValue{}
	}
	c.names["#dynashard_w"] = attrToken
	c.values[":dynashard_w"] = &types.AttributeValueMemberS{Value: tok}
	return aws.String(setclause.Add(update, "#dynashard_w = :dynashard_w")), c
}
