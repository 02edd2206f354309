package split

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/dynashard/dynashard/internal/attempts"
	"github.com/dynashard/dynashard/internal/ddbsize"
	"github.com/dynashard/dynashard/internal/observe"
)

// transact sends ws as one TransactWriteItems.
func (s *Store[T]) transact(ctx context.Context, op string, k Key, ws []write) error {
	items, err := s.txItems(op, k, ws, -1)
	if err != nil {
		return err
	}
	in := &dynamodb.TransactWriteItemsInput{TransactItems: items}
	if _, err := observe.Do(ctx, s.c.TransactWriteItems, in); err != nil {
		return s.txError(op, k, ws, err)
	}
	return nil
}

// txItems returns the transaction's actions for ws, checked against
// MaxTransactionBytes, leaving the action of ws[large] (a large part's,
// which its chunk store sends; -1: none) empty and counting it at the
// item limit.
func (s *Store[T]) txItems(op string, k Key, ws []write, large int) ([]types.TransactWriteItem, error) {
	items := make([]types.TransactWriteItem, len(ws))
	total := 0
	for i, w := range ws {
		if i == large {
			total += ddbsize.MaxItemSize
			continue
		}
		var (
			names  map[string]string
			values map[string]types.AttributeValue
			cond   *string
		)
		if w.cond.IsSet() {
			expr, err := expression.NewBuilder().WithCondition(w.cond).Build()
			if err != nil {
				return nil, fmt.Errorf("%w: split: %s %v part %q: %w", ErrInvalid, op, k, w.p.Name, err)
			}
			names, values, cond = expr.Names(), expr.Values(), expr.Condition()
		}
		if w.item != nil {
			n, _ := ddbsize.ItemSize(w.item) // checked by putWrite
			total += n
			items[i].Put = &types.Put{TableName: aws.String(w.p.table), Item: w.item, ConditionExpression: cond,
				ExpressionAttributeNames: names, ExpressionAttributeValues: values}
		} else {
			items[i].Delete = &types.Delete{TableName: aws.String(w.p.table), Key: w.key, ConditionExpression: cond,
				ExpressionAttributeNames: names, ExpressionAttributeValues: values}
		}
	}
	if total > MaxTransactionBytes {
		note := ""
		if large >= 0 {
			note = fmt.Sprintf(" (part %q, a large one, counted at the %d-byte item limit)", ws[large].p.Name, ddbsize.MaxItemSize)
		}
		return nil, fmt.Errorf("%w: split: %s %v: parts total %d bytes%s, a transaction takes at most %d", ErrItemTooLarge, op, k, total, note, MaxTransactionBytes)
	}
	return items, nil
}

// txError turns a failed transaction into the package's errors: one
// *PartError per part whose condition failed (ErrConflict; for Put, whose
// conditions start with the part's existence, that may also mean the part
// is missing), ErrConflict for a transaction that lost to another,
// ErrNoTransactions for a server without them.
func (s *Store[T]) txError(op string, k Key, ws []write, err error) error {
	var tce *types.TransactionCanceledException
	if errors.As(err, &tce) {
		var perr []error
		conflict := false
		for i, r := range tce.CancellationReasons {
			if i >= len(ws) {
				break
			}
			switch aws.ToString(r.Code) {
			case "ConditionalCheckFailed":
				e := fmt.Errorf("%w: condition failed", ErrConflict)
				if ws[i].onlyExists && len(r.Item) == 0 {
					e = fmt.Errorf("%w: the part does not exist", ErrNotFound)
				}
				perr = append(perr, &PartError{Part: ws[i].p.Name, Table: ws[i].p.table, Key: k, Err: e})
			case "TransactionConflict":
				conflict = true
			}
		}
		if len(perr) > 0 || conflict {
			if conflict {
				perr = append(perr, fmt.Errorf("%w: a concurrent transaction or write on the same items won", ErrConflict))
			}
			return fmt.Errorf("split: %s %v: %w: %w", op, k, errors.Join(perr...), err)
		}
		return fmt.Errorf("split: %s %v: %w", op, k, err)
	}
	var tc *types.TransactionConflictException
	if errors.As(err, &tc) {
		return fmt.Errorf("split: %s %v: %w: %w", op, k, ErrConflict, err)
	}
	var ae smithy.APIError
	if errors.As(err, &ae) && ae.ErrorCode() == "UnknownOperationException" {
		return fmt.Errorf("split: %s %v: %w: %w", op, k, ErrNoTransactions, err)
	}
	return fmt.Errorf("split: %s %v: %w", op, k, err)
}

// failed turns a failed single-item write into the package's errors. A
// failed condition is ErrNotFound when the part was missing and
// ErrConflict otherwise. DynamoDB returns the item that failed the
// condition (ReturnValuesOnConditionCheckFailure): an item means a
// conflict; none means, on DynamoDB, that the part was missing. A server
// that ignores the request (dynalite) returns no item either way, so when
// the condition was more than existence one consistent GetItem decides:
// a missing part is ErrNotFound, a version other than the one expected
// ErrConflict (both true at the time of that read, within the call, and
// the write had no effect); a part that now satisfies the version
// condition was missing when the write failed (ErrNotFound), unless a
// condition of the caller's was involved, which split cannot evaluate
// (ErrConflict: right for dynalite, where that is the only way to get
// here without a concurrent writer).
// retried is the error of a single-part write whose condition failed on
// an SDK retry after an attempt that may have been applied: its outcome
// is unknown (internal/attempts), neither ErrConflict nor ErrNotFound. It
// is nil for any other failure.
func retried(a *attempts.Counter, op string, k Key, w write, err error) error {
	var ccf *types.ConditionalCheckFailedException
	if !a.MaybeApplied() || !errors.As(err, &ccf) {
		return nil
	}
	return &PartError{Part: w.p.Name, Table: w.p.table, Key: k,
		Err: fmt.Errorf("split: %s: outcome unknown: an attempt that may have been applied was retried, and the retry's condition failed (%v)", op, err)}
}

func (s *Store[T]) failed(ctx context.Context, op string, k Key, w write, err error) error {
	perr := func(e error) error { return &PartError{Part: w.p.Name, Table: w.p.table, Key: k, Err: e} }
	var ccf *types.ConditionalCheckFailedException
	if !errors.As(err, &ccf) {
		var tc *types.TransactionConflictException
		if errors.As(err, &tc) {
			return perr(fmt.Errorf("split: %s: %w: %w", op, ErrConflict, err))
		}
		return perr(fmt.Errorf("split: %s: %w", op, err))
	}
	notFound := func() error {
		return perr(fmt.Errorf("split: %s: %w: the part does not exist: %w", op, ErrNotFound, err))
	}
	conflict := func() error { return perr(fmt.Errorf("split: %s: %w: %w", op, ErrConflict, err)) }
	switch {
	case len(ccf.Item) > 0:
		return conflict()
	case w.onlyExists:
		return notFound()
	}
	in := &dynamodb.GetItemInput{TableName: aws.String(w.p.table), Key: w.key, ConsistentRead: aws.Bool(true)}
	out, gerr := observe.Do(ctx, s.c.GetItem, in)
	if gerr != nil {
		return perr(fmt.Errorf("split: %s: %w: %w (and reading the part to tell why failed: %w)", op, ErrConflict, err, gerr))
	}
	if len(out.Item) == 0 {
		return notFound()
	}
	if w.versioned {
		stored := int64(0)
		if n, ok := out.Item[w.p.Version].(*types.AttributeValueMemberN); ok {
			stored, _ = strconv.ParseInt(n.Value, 10, 64)
		}
		if stored != w.expect {
			return conflict()
		}
	}
	if w.userCond {
		return conflict()
	}
	return notFound()
}
