package shard

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynashard/dynashard/internal/attempts"
	"github.com/dynashard/dynashard/internal/ddbsize"
	"github.com/dynashard/dynashard/internal/observe"
	"github.com/dynashard/dynashard/internal/record"
)

// Put writes item under the logical key base: the physical key comes from
// the strategy, at the base's newest shard count, applied to the item's
// sort key (its id). While the base's history puts id at several keys,
// the Put is a transaction that writes the item where it is (or at the
// newest count's key if it is nowhere) and checks that no other key holds
// it (see "Resharding" in the package doc), so a Put, conditional or not,
// always replaces the one copy of the item. With Random, each Put of the
// same id may land on a different suffix, creating a second copy rather
// than overwriting; use a calculated strategy when ids are rewritten.
func (t *Table[T]) Put(ctx context.Context, base string, item T, optFns ...func(*Options)) (err error) {
	ctx, call := t.begin(ctx, "shard.Put", base)
	defer func() { call.End(ctx, err) }()
	o, err := t.options(ctx, optFns)
	if err != nil {
		return err
	}
	c, err := t.condition(base, "", o)
	if err != nil {
		return err
	}
	av, id, err := t.marshal(base, item, o, t.l.Strategy)
	if err != nil {
		return err
	}
	if err := t.needTransactions(ctx, base, o); err != nil {
		return err
	}
	v, keys, err := t.writeTarget(ctx, base, id)
	if err != nil {
		return err
	}
	call.SetInts(observe.AttrHistory, v.Shards)
	av[t.l.PartitionKey] = &types.AttributeValueMemberS{Value: keys[0]}
	if _, err := ddbsize.CheckItem(av); err != nil { // the suffix may be longer
		return t.itemErr(base, id, err)
	}
	_, err = t.write(ctx, v, base, id, keys, txOp{put: av, cond: c, once: o.ExactlyOnce}, func(ctx context.Context, opts []func(*dynamodb.Options)) error {
		in := &dynamodb.PutItemInput{TableName: aws.String(t.l.Table), Item: av}
		in.ConditionExpression, in.ExpressionAttributeNames, in.ExpressionAttributeValues = c.expr, c.names, c.values
		_, err := observe.Do(ctx, t.c.PutItem, in, opts...)
		return err
	})
	return err
}

// Get reads the item with id under base. While the base's history puts
// id at one key, it is one GetItem. Otherwise, with ConsistentRead, it is
// one TransactGetItems over every key the history gives id (a snapshot:
// an item being moved is never missed); without, it tries the keys one
// GetItem at a time, newest count first, and confirms a miss with a
// TransactGetItems. With ConsistentRead the base's record is read again
// too (one more GetItem), so that a Reshard in another process is seen at
// once. It returns an error matching ErrNotFound if no key holds the item.
func (t *Table[T]) Get(ctx context.Context, base, id string, optFns ...func(*Options)) (_ T, err error) {
	ctx, call := t.begin(ctx, "shard.Get", base)
	defer func() { call.End(ctx, err) }()
	var zero T
	o, err := t.itemOptions(ctx, base, id, optFns)
	if err != nil {
		return zero, err
	}
	v, err := t.readView(ctx, base, o.ConsistentRead)
	if err != nil {
		return zero, err
	}
	call.SetInts(observe.AttrHistory, v.Shards)
	keys, err := t.writeKeys(v, base, id)
	if err != nil {
		return zero, err
	}
	fctx, cancel := context.WithDeadline(ctx, v.Deadline(t.rec.TTL))
	defer cancel()
	item, err := t.find(fctx, base, id, keys, o.ConsistentRead)
	if err != nil {
		return zero, t.late(ctx, v, err)
	}
	if item == nil {
		return zero, fmt.Errorf("%w: table %s key %q id %q", ErrNotFound, t.l.Table, keys[0], id)
	}
	return t.unmarshal(item, o)
}

// find reads id at keys as Get describes; a nil item if none holds it.
func (t *Table[T]) find(ctx context.Context, base, id string, keys []string, consistent bool) (map[string]types.AttributeValue, error) {
	if len(keys) > 1 && consistent {
		item, _, err := t.txGet(ctx, base, id, keys)
		return item, err
	}
	for _, pk := range keys {
		out, err := observe.Do(ctx, t.c.GetItem, &dynamodb.GetItemInput{
			TableName: aws.String(t.l.Table), Key: t.keyAt(pk, id), ConsistentRead: aws.Bool(consistent),
		})
		if err != nil {
			return nil, t.requestErr("GetItem", pk, id, err)
		}
		if out.Item != nil {
			return out.Item, nil
		}
	}
	if len(keys) == 1 {
		return nil, nil
	}
	// The item may have moved between two of the reads above.
	item, _, err := t.txGet(ctx, base, id, keys)
	return item, err
}

// Update applies update to the item with id under base and returns the item
// as it is after the update (ReturnValues ALL_NEW). Like UpdateItem, it
// creates the item if it does not exist unless the condition forbids it.
// An update that sets, removes, adds to or deletes from a key attribute is
// an *ItemError (ErrInvalidKey) before any request.
//
// The update applies where the item is. While the base's history puts id
// at several keys, it is a transaction as Put's is, and the item returned
// is read after it with a consistent GetItem: if another write of the
// same item came between the two, the item returned includes that write
// too.
func (t *Table[T]) Update(ctx context.Context, base, id string, update expression.UpdateBuilder, optFns ...func(*Options)) (_ T, err error) {
	ctx, call := t.begin(ctx, "shard.Update", base)
	defer func() { call.End(ctx, err) }()
	var zero T
	o, err := t.itemOptions(ctx, base, id, optFns)
	if err != nil {
		return zero, err
	}
	e, _, err := expr(o.Condition, &update)
	if err != nil {
		return zero, t.itemErr(base, id, fmt.Errorf("update expression: %w", err))
	}
	for _, name := range updatedNames(aws.ToString(e.Update()), e.Names()) {
		if name == t.l.PartitionKey || name == t.l.SortKey || name == attrToken {
			return zero, t.itemErr(base, id, fmt.Errorf("%w: the update changes key attribute %q", ErrInvalidKey, name))
		}
	}
	if err := t.needTransactions(ctx, base, o); err != nil {
		return zero, err
	}
	v, keys, err := t.writeTarget(ctx, base, id)
	if err != nil {
		return zero, err
	}
	call.SetInts(observe.AttrHistory, v.Shards)
	var after map[string]types.AttributeValue
	op := txOp{update: e.Update(), cond: condition{e.Condition(), e.Names(), e.Values()}, once: o.ExactlyOnce}
	if len(keys) > 1 { // the transaction also sets the item's token
		op.token = newToken()
		te, _, err := expr(o.Condition, ptr(update.Set(expression.Name(attrToken), expression.Value(op.token))))
		if err != nil {
			return zero, t.itemErr(base, id, fmt.Errorf("update expression: %w", err))
		}
		op.update, op.cond = te.Update(), condition{te.Condition(), te.Names(), te.Values()}
	}
	pk, err := t.write(ctx, v, base, id, keys, op, func(ctx context.Context, opts []func(*dynamodb.Options)) error {
		out, err := observe.Do(ctx, t.c.UpdateItem, &dynamodb.UpdateItemInput{
			TableName:                 aws.String(t.l.Table),
			Key:                       t.keyAt(keys[0], id),
			UpdateExpression:          e.Update(),
			ConditionExpression:       e.Condition(),
			ExpressionAttributeNames:  e.Names(),
			ExpressionAttributeValues: e.Values(),
			ReturnValues:              types.ReturnValueAllNew,
		}, opts...)
		if err == nil {
			after = out.Attributes
		}
		return err
	})
	if err != nil {
		return zero, err
	}
	if after == nil {
		out, err := observe.Do(ctx, t.c.GetItem, &dynamodb.GetItemInput{TableName: aws.String(t.l.Table), Key: t.keyAt(pk, id), ConsistentRead: aws.Bool(true)})
		if err != nil {
			return zero, t.requestErr("GetItem", pk, id, err)
		}
		after = out.Item
		delete(after, attrToken)
	}
	return t.unmarshal(after, o)
}

// Delete deletes the item with id under base. Deleting an absent item is
// not an error (as in DynamoDB, and everywhere in dynashard) unless the
// condition says so. While the base's history puts id at several keys, it
// is a transaction as Put's is: the one copy of the item is deleted, and
// the condition is tested on it.
func (t *Table[T]) Delete(ctx context.Context, base, id string, optFns ...func(*Options)) (err error) {
	ctx, call := t.begin(ctx, "shard.Delete", base)
	defer func() { call.End(ctx, err) }()
	o, err := t.itemOptions(ctx, base, id, optFns)
	if err != nil {
		return err
	}
	c, err := t.condition(base, id, o)
	if err != nil {
		return err
	}
	if err := t.needTransactions(ctx, base, o); err != nil {
		return err
	}
	v, keys, err := t.writeTarget(ctx, base, id)
	if err != nil {
		return err
	}
	call.SetInts(observe.AttrHistory, v.Shards)
	_, err = t.write(ctx, v, base, id, keys, txOp{delete: true, cond: c, once: o.ExactlyOnce}, func(ctx context.Context, opts []func(*dynamodb.Options)) error {
		in := &dynamodb.DeleteItemInput{TableName: aws.String(t.l.Table), Key: t.keyAt(keys[0], id)}
		in.ConditionExpression, in.ExpressionAttributeNames, in.ExpressionAttributeValues = c.expr, c.names, c.values
		_, err := observe.Do(ctx, t.c.DeleteItem, in, opts...)
		return err
	})
	return err
}

// write sends one write of id under v: plain, at keys[0], when that is
// the only key the history gives id; otherwise as a transaction (txWrite).
// Either way it must be done by v's deadline. It returns the key written.
// optFns apply to every request it sends.
func (t *Table[T]) write(ctx context.Context, v record.View, base, id string, keys []string, op txOp, plain func(context.Context, []func(*dynamodb.Options)) error, optFns ...func(*dynamodb.Options)) (string, error) {
	fctx, cancel := context.WithDeadline(ctx, v.Deadline(t.rec.TTL))
	defer cancel()
	var a attempts.Counter
	optFns = append(slices.Clip(optFns), a.Option)
	pk, err := keys[0], error(nil)
	if len(keys) == 1 && !op.once {
		if err = plain(fctx, optFns); err != nil {
			err = t.plainErr(opName(op), pk, id, &a, err)
		}
	} else {
		pk, err = t.txWrite(fctx, base, id, keys, op, optFns...)
	}
	t.reportAttempts(ctx, base, &a, err)
	return pk, t.late(ctx, v, err)
}

// plainErr is requestErr for a plain write, whose SDK retries may follow
// an attempt that was applied but whose response was lost: a condition
// that fails after such an attempt may have failed on the write's own
// result, so the outcome is unknown, not a conflict (internal/attempts).
func (t *Table[T]) plainErr(op, pk, id string, a *attempts.Counter, err error) error {
	var ccf *types.ConditionalCheckFailedException
	if a.MaybeApplied() && errors.As(err, &ccf) {
		return fmt.Errorf("shard: %s table %s key %q id %q: outcome unknown: an attempt that may have been applied was retried, and the retry's condition failed (%v)", op, t.l.Table, pk, id, err)
	}
	return t.requestErr(op, pk, id, err)
}

func opName(op txOp) string {
	switch {
	case op.put != nil:
		return "PutItem"
	case op.update != nil:
		return "UpdateItem"
	}
	return "DeleteItem"
}

// late marks an error of a request abandoned at v's deadline (while the
// caller's ctx was still live) as ErrTooLate, naming the fence and the
// setting that sets it.
func (t *Table[T]) late(ctx context.Context, v record.View, err error) error {
	if err != nil && ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
		fence := v.Deadline(t.rec.TTL).Sub(v.At)
		return fmt.Errorf("%w of %v (table %s; HistoryTTL %v, the shorter of the Layout's and the base record's: raise the shorter one, the record's by a Reshard, to give requests longer): %w",
			ErrTooLate, fence, t.l.Table, v.Trust(t.rec.TTL), err)
	}
	return err
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

func ptr[T any](v T) *T { return &v }

// needTransactions fails with ErrNoTransactions if o asks for ExactlyOnce
// on a server without transactions, before anything is written: the
// base's record would otherwise be written first. One TransactGetItems
// of base's record per Table, until one is not refused as unknown.
func (t *Table[T]) needTransactions(ctx context.Context, base string, o Options) error {
	if !o.ExactlyOnce || t.txOK.Load() {
		return nil
	}
	if err := probeTransactions(ctx, t.c, t.rec, base, "ExactlyOnce write of"); err != nil {
		return err
	}
	t.txOK.Store(true)
	return nil
}
