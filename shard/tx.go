package shard

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/dynashard/dynashard/internal/backoff"
	"github.com/dynashard/dynashard/internal/observe"
)

// While an id's keys differ between the counts of its base's history,
// every write of the item is one TransactWriteItems: the write at one key,
// and a ConditionCheck that the item is at none of the others. The write
// goes to the writers' key, or in place at the key that holds the item
// (it is never created there: that key may be swept already); the
// transaction fails as a whole if the item is elsewhere, which its
// cancellation reasons say, and the write is tried again there. So an
// item has one copy at any time, and every write sees it.

// attrToken is set to a fresh random value by every transactional write
// of an item, so that Rebalance moves an item only if nothing wrote it
// since it was read, and Update can tell its own result from a later
// write's.
const attrToken = "dynashard:w"

// namePK is the placeholder of the conditions dynashard adds to a
// caller's: the expression package names its own #0, #1, … so it cannot
// collide.
const namePK = "#dynashard_pk"

// txOp is one write of an item as a transaction action at a key.
type txOp struct {
	put    map[string]types.AttributeValue // Put: the item (its key is set per attempt)
	update *string                         // Update: the expression, which sets the token
	delete bool
	cond   condition // the caller's condition, and the update's names and values
	token  string    // the token the update sets; Put's is made per call
	once   bool      // Options.ExactlyOnce: a transaction even at one key
}

// txAttempts bounds how often a transactional write follows its item or
// waits out a conflicting transaction before it gives up.
const txAttempts = 12

// txWrite applies op to id under base at the key that holds the item,
// keys[0] (the writers') if none does. It returns the key written.
func (t *Table[T]) txWrite(ctx context.Context, base, id string, keys []string, op txOp, optFns ...func(*dynamodb.Options)) (string, error) {
	tok := op.token
	if tok == "" {
		tok = newToken()
	}
	at := 0
	var last error
	for attempt := range txAttempts {
		in := t.txInput(keys, at, id, op, tok)
		_, err := observe.Do(ctx, t.c.TransactWriteItems, in, optFns...)
		if err == nil {
			return keys[at], nil
		}
		last = err
		next, retry, err := t.txOutcome(base, id, keys, at, err)
		if err != nil {
			return "", err
		}
		if retry {
			if err := pause(ctx, attempt); err != nil {
				return "", err
			}
		}
		at = next
	}
	// Every attempt was cancelled as a whole, so nothing was written; but
	// no condition failed either, so this is no ErrConflict: the caller
	// may try again.
	return "", fmt.Errorf("shard: table %s base %q id %q: nothing written in %d transactions: the item kept moving, or other transactions kept conflicting with it: %w", t.l.Table, clip(base), clip(id), txAttempts, last)
}

// txInput is op at keys[at] with a check that no other key holds id.
func (t *Table[T]) txInput(keys []string, at int, id string, op txOp, tok string) *dynamodb.TransactWriteItemsInput {
	table := aws.String(t.l.Table)
	names := maps.Clone(op.cond.names)
	if names == nil {
		names = map[string]string{}
	}
	cond := aws.ToString(op.cond.expr)
	if at != 0 { // in place: only where the item still is
		cond = andCond("attribute_exists("+namePK+")", cond)
		names[namePK] = t.l.PartitionKey
	}
	values := op.cond.values
	if len(names) == 0 {
		names = nil
	}
	failed := types.ReturnValuesOnConditionCheckFailureAllOld
	action := types.TransactWriteItem{}
	switch {
	case op.put != nil:
		item := maps.Clone(op.put)
		item[t.l.PartitionKey] = &types.AttributeValueMemberS{Value: keys[at]}
		item[attrToken] = &types.AttributeValueMemberS{Value: tok}
		action.Put = &types.Put{TableName: table, Item: item, ConditionExpression: nilIfEmpty(cond),
			ExpressionAttributeNames: names, ExpressionAttributeValues: values, ReturnValuesOnConditionCheckFailure: failed}
	case op.update != nil:
		action.Update = &types.Update{TableName: table, Key: t.keyAt(keys[at], id), UpdateExpression: op.update,
			ConditionExpression: nilIfEmpty(cond), ExpressionAttributeNames: names, ExpressionAttributeValues: values,
			ReturnValuesOnConditionCheckFailure: failed}
	default:
		action.Delete = &types.Delete{TableName: table, Key: t.keyAt(keys[at], id), ConditionExpression: nilIfEmpty(cond),
			ExpressionAttributeNames: names, ExpressionAttributeValues: values, ReturnValuesOnConditionCheckFailure: failed}
	}
	items := []types.TransactWriteItem{action}
	for i, pk := range keys {
		if i == at {
			continue
		}
		items = append(items, types.TransactWriteItem{ConditionCheck: &types.ConditionCheck{
			TableName: table, Key: t.keyAt(pk, id),
			ConditionExpression:      aws.String("attribute_not_exists(" + namePK + ")"),
			ExpressionAttributeNames: map[string]string{namePK: t.l.PartitionKey},
		}})
	}
	return &dynamodb.TransactWriteItemsInput{TransactItems: items}
}

// txOutcome reads a failed transaction: the key to try next (where a
// check found the item, or the writers' key if the item left the key
// written in place), whether to back off first (a conflicting
// transaction or a throttle), or the error to return.
func (t *Table[T]) txOutcome(base, id string, keys []string, at int, err error) (next int, retry bool, _ error) {
	var tce *types.TransactionCanceledException
	if !errors.As(err, &tce) {
		if isUnknownOperation(err) {
			return 0, false, fmt.Errorf("shard: TransactWriteItems table %s base %q id %q: %w: %w", t.l.Table, clip(base), clip(id), ErrNoTransactions, err)
		}
		return 0, false, t.requestErr("TransactWriteItems", keys[at], id, err)
	}
	reasons := tce.CancellationReasons
	// Reasons follow the actions: the write first, then the checks of
	// every key but keys[at], in order.
	others := make([]int, 0, len(keys)-1)
	for i := range keys {
		if i != at {
			others = append(others, i)
		}
	}
	for r, reason := range reasons {
		if r == 0 || r > len(others) || aws.ToString(reason.Code) != "ConditionalCheckFailed" {
			continue
		}
		return others[r-1], false, nil // the item is there
	}
	if len(reasons) > 0 && aws.ToString(reasons[0].Code) == "ConditionalCheckFailed" {
		if at != 0 && reasons[0].Item == nil {
			return 0, false, nil // it left the key: follow it from the writers' key
		}
		ccf := &types.ConditionalCheckFailedException{Message: aws.String("The conditional request failed"), Item: reasons[0].Item}
		return 0, false, t.requestErr("TransactWriteItems", keys[at], id, ccf)
	}
	for _, reason := range reasons {
		switch aws.ToString(reason.Code) {
		case "TransactionConflict", "ThrottlingError", "ProvisionedThroughputExceeded":
			return at, true, nil
		}
	}
	return 0, false, t.requestErr("TransactWriteItems", keys[at], id, err)
}

// txGet reads id at every key of keys in one TransactGetItems, a
// snapshot in which at most one key holds the item; it returns the item
// found (the writers' key first) and its key's index.
func (t *Table[T]) txGet(ctx context.Context, base, id string, keys []string) (map[string]types.AttributeValue, int, error) {
	items := make([]types.TransactGetItem, len(keys))
	for i, pk := range keys {
		items[i] = types.TransactGetItem{Get: &types.Get{TableName: aws.String(t.l.Table), Key: t.keyAt(pk, id)}}
	}
	for attempt := 0; ; attempt++ {
		out, err := observe.Do(ctx, t.c.TransactGetItems, &dynamodb.TransactGetItemsInput{TransactItems: items})
		if err == nil {
			for i, r := range out.Responses {
				if r.Item != nil {
					return r.Item, i, nil
				}
			}
			return nil, 0, nil
		}
		var tce *types.TransactionCanceledException
		if !errors.As(err, &tce) || attempt+1 >= txAttempts {
			if isUnknownOperation(err) {
				err = fmt.Errorf("%w: %w", ErrNoTransactions, err)
			}
			return nil, 0, t.requestErr("TransactGetItems", keys[0], id, err)
		}
		// A write of the item was being committed: read again.
		if err := pause(ctx, attempt); err != nil {
			return nil, 0, err
		}
	}
}

// isUnknownOperation reports a server that does not know the operation
// (dynalite's answer to TransactWriteItems and TransactGetItems).
func isUnknownOperation(err error) bool {
	var ae smithy.APIError
	return errors.As(err, &ae) && ae.ErrorCode() == "UnknownOperationException"
}

// pause waits a capped, jittered backoff before the attempt+1st try.
func pause(ctx context.Context, attempt int) error {
	if !backoff.Sleep(ctx, nil, backoff.Jitter(backoff.Cap(10*time.Millisecond, time.Second, attempt))) {
		return ctx.Err()
	}
	return nil
}

func newToken() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	return hex.EncodeToString(b[:])
}

func andCond(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return "(" + a + ") AND (" + b + ")"
}

func nilIfEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return aws.String(s)
}
