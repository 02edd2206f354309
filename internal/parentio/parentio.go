// Package parentio sends a chunk store's requests on its parent items
// through another package's placement of them, without a public API for
// it: repo's large values go through shard's, so that the parent of a
// large value is read, switched and deleted wherever the base's
// shard-count history puts the item, and a move by shard.Table.Rebalance or a
// Reshard never separates a large value from its item.
package parentio

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/dynashard/dynashard/internal/observe"
)

// Client sends the parent-item requests of one chunk call. GetItem,
// UpdateItem and DeleteItem act on the item wherever it is, whatever the
// request's Key says (the placement may add to an UpdateItem's SET
// clause). A placement sends the DynamoDB requests it makes through
// observe.Do itself: the chunk store does not count them again.
type Client interface {
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error)
}

type ctxKey struct{}

// With returns ctx carrying c: a chunk call made with it sends its parent
// requests through c.
func With(ctx context.Context, c Client) context.Context {
	return context.WithValue(ctx, ctxKey{}, c)
}

// placement returns the Client ctx carries, if any.
func placement(ctx context.Context) (Client, bool) {
	c, ok := ctx.Value(ctxKey{}).(Client)
	return c, ok
}

// GetItem sends in through the Client ctx carries, or else to fallback
// through observe.Do: every parent request of a chunk call is observed
// once, by whichever sends it to DynamoDB.
func GetItem(ctx context.Context, fallback Client, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	if c, ok := placement(ctx); ok {
		return c.GetItem(ctx, in, optFns...)
	}
	return observe.Do(ctx, fallback.GetItem, in, optFns...)
}

// UpdateItem sends in as GetItem does.
func UpdateItem(ctx context.Context, fallback Client, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	if c, ok := placement(ctx); ok {
		return c.UpdateItem(ctx, in, optFns...)
	}
	return observe.Do(ctx, fallback.UpdateItem, in, optFns...)
}

// DeleteItem sends in as GetItem does.
func DeleteItem(ctx context.Context, fallback Client, in *dynamodb.DeleteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	if c, ok := placement(ctx); ok {
		return c.DeleteItem(ctx, in, optFns...)
	}
	return observe.Do(ctx, fallback.DeleteItem, in, optFns...)
}

// ForItem returns the Client that places the item with id under base of a
// *shard.Table (passed as any). With write set it first checks the
// Table's layout against base's record, and writes the record if the
// base has none, as a write through the Table does: a caller about to
// write the item (and its chunks) learns of a layout mismatch before
// writing anything. ctx bounds that check. Package shard sets ForItem at
// init.
var ForItem func(ctx context.Context, table any, base, id string, write bool) (Client, error)
