package chunk

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynashard/dynashard/internal/parentio"
)

// Delete removes the parent item under key, with its caller attributes, and
// then the chunks (or the object, see Options.Objects) of the version it
// held. The parent goes first, with a condition on that version, so no
// reader is ever directed to deleted chunks and a Put that started from
// the deleted version fails with ErrConflict instead of bringing it back.
// If a Put replaces the version between Delete's read and its delete,
// Delete starts over with the new one, up to Options.ReadAttempts times,
// then fails with ErrConflict. optFns change the Store's Options for this
// call (ReadAttempts, RetainOld, MaxConcurrency); Delete reads the parent
// consistently whatever ConsistentRead says.
//
// Deleting a key that holds no payload (no parent item, or one without a
// payload, which is left as it is) succeeds and returns nil, as DynamoDB's
// DeleteItem does. Chunks Delete cannot delete (ctx cancelled, errors) are
// left to Sweep; the payload is deleted all the same once the parent is.
func (s *Store) Delete(ctx context.Context, key Key, optFns ...func(*Options)) (err error) {
	ctx, call := s.start(ctx, "chunk.Delete")
	defer func() { call.End(ctx, err) }()
	if call.Traced() {
		s.traceKey(call, key)
	}
	s, err = s.begin(ctx, "Delete", optFns)
	if err != nil {
		return err
	}
	prefix, err := s.keyPrefix(key)
	if err != nil {
		return err
	}
	for attempt := 0; attempt < s.opts.ReadAttempts; attempt++ {
		cur, err := s.readCurrent(ctx, key)
		if err != nil {
			return err
		}
		if !cur.exists {
			// Never there, or deleted by our earlier attempt or by someone
			// else: either way it is gone.
			return nil
		}
		_, err = parentio.DeleteItem(ctx, s.c, &dynamodb.DeleteItemInput{
			TableName:                 &s.parents,
			Key:                       key.item(),
			ConditionExpression:       aws.String(cur.deleteCondition()),
			ExpressionAttributeNames:  map[string]string{"#v": attrVersion},
			ExpressionAttributeValues: cur.deleteValues(),
		})
		var ccf *types.ConditionalCheckFailedException
		if err != nil && !errors.As(err, &ccf) {
			return fmt.Errorf("chunk: delete %v: %w", key, err)
		}
		// Either way cur.version is no longer current, and since versions
		// are never reused it never will be again: its stored bytes are
		// garbage.
		if !s.opts.RetainOld {
			s.drop(ctx, prefix, cur.placement)
		}
		if err == nil {
			return nil
		}
	}
	return fmt.Errorf("%w: key %v: replaced on each of %d delete attempts", ErrConflict, key, s.opts.ReadAttempts)
}
