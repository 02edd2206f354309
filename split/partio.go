package split

import (
	"context"
	"errors"
	"maps"
	"slices"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynashard/dynashard/internal/observe"
	"github.com/dynashard/dynashard/internal/parentio"
)

// partIO sends the requests a chunk store makes on a large part's item
// during one write (internal/parentio), so that the item's flip or delete
// carries the call's other parts in one TransactWriteItems, and a Put
// stops at its first read if the part is missing or its version is not
// the value's. A chunk call sends its parent requests one at a time.
type partIO[T any] struct {
	s     *Store[T]
	op    string
	k     Key
	ws    []write                   // the call's writes
	li    int                       // the large part's
	items []types.TransactWriteItem // the others' actions, li empty
	tx    bool                      // send the large part's write in a transaction
	check bool                      // check the part at the first read

	reads int  // GetItems sent
	sent  bool // a DeleteItem was asked for
}

var _ parentio.Client = (*partIO[struct{}])(nil)

// GetItem reads the part's item. At a Put's first read (the store's read
// of the version it replaces) it also reads the part's key and version,
// and fails with errPartMissing or errPartStale: the store then writes
// nothing.
func (c *partIO[T]) GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	check := c.check && c.reads == 0
	c.reads++
	req := *in
	w := c.ws[c.li]
	var added []string
	if check && req.ProjectionExpression != nil {
		names := maps.Clone(req.ExpressionAttributeNames)
		if names == nil {
			names = map[string]string{}
		}
		proj := aws.ToString(req.ProjectionExpression) + ", #splitKey"
		names["#splitKey"] = w.p.keys[0]
		added = append(added, w.p.keys[0])
		if w.p.Version != "" {
			proj += ", #splitVersion"
			names["#splitVersion"] = w.p.Version
			added = append(added, w.p.Version)
		}
		req.ProjectionExpression, req.ExpressionAttributeNames = aws.String(proj), names
	}
	out, err := observe.Do(ctx, c.s.c.GetItem, &req, optFns...)
	if err != nil {
		return out, err
	}
	if !check {
		return out, nil
	}
	switch {
	case out.Item[w.p.keys[0]] == nil:
		return nil, errPartMissing
	case w.versioned && versionOf(out.Item, w.p.Version) != w.expect:
		return nil, errPartStale
	}
	if len(added) > 0 {
		o := *out
		o.Item = maps.Clone(out.Item)
		for _, a := range added {
			delete(o.Item, a)
		}
		out = &o
	}
	return out, nil
}

// UpdateItem sends the store's flip: alone, or as the large part's action
// of the call's transaction. A cancelled transaction is returned as
// DynamoDB answered it (a 400 the store takes as a refusal, not as a lost
// race), for txError to name the parts.
func (c *partIO[T]) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	if !c.tx {
		return observe.Do(ctx, c.s.c.UpdateItem, in, optFns...)
	}
	update := types.TransactWriteItem{Update: &types.Update{
		TableName: in.TableName, Key: in.Key, UpdateExpression: in.UpdateExpression,
		ConditionExpression: in.ConditionExpression, ExpressionAttributeNames: in.ExpressionAttributeNames,
		ExpressionAttributeValues: in.ExpressionAttributeValues,
	}}
	items := slices.Clone(c.items)
	items[c.li] = update
	return &dynamodb.UpdateItemOutput{}, c.send(ctx, items, optFns)
}

// DeleteItem sends the store's delete of the part's item, which is on
// condition of the version it read and nothing else (a Delete refuses a
// caller's condition on a large part): alone, or as the large part's
// action of the call's transaction. When that condition failed it answers
// as DeleteItem would, with a ConditionalCheckFailedException, so that the
// store reads the new version and tries again.
func (c *partIO[T]) DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	c.sent = true
	if !c.tx {
		return observe.Do(ctx, c.s.c.DeleteItem, in, optFns...)
	}
	items := slices.Clone(c.items)
	items[c.li] = types.TransactWriteItem{Delete: &types.Delete{
		TableName: in.TableName, Key: in.Key, ConditionExpression: in.ConditionExpression,
		ExpressionAttributeNames: in.ExpressionAttributeNames, ExpressionAttributeValues: in.ExpressionAttributeValues,
	}}
	err := c.send(ctx, items, optFns)
	var tce *types.TransactionCanceledException
	if errors.As(err, &tce) && reasonAt(tce, c.li) == "ConditionalCheckFailed" {
		return nil, &types.ConditionalCheckFailedException{Message: aws.String("split: the large part's value was replaced: " + err.Error())}
	}
	return &dynamodb.DeleteItemOutput{}, err
}

func (c *partIO[T]) send(ctx context.Context, items []types.TransactWriteItem, optFns []func(*dynamodb.Options)) error {
	in := &dynamodb.TransactWriteItemsInput{TransactItems: items}
	_, err := observe.Do(ctx, c.s.c.TransactWriteItems, in, optFns...)
	return err
}
