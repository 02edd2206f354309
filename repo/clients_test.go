package repo_test

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"

	"github.com/dynashard/dynashard/internal/ddbtest"
)

// The wrappers below all pass every request on to a real *dynamodb.Client
// talking to a real server; none of them answers in its place, except
// where staleClient says so. Requests are counted by a middleware of a real
// client (countingClient), not by a wrapper.

// staleClient is a real client whose eventually consistent GetItem returns
// the item as it was before the last write through this client, as
// DynamoDB may do right after a write: local servers have no replication
// lag, so the test replays the previous value to stand in for it. Before
// passing a write on, it reads the item's current value (consistently) and
// keeps it; strongly consistent GetItems go to the server. It also counts
// the eventually consistent reads of every kind.
type staleClient struct {
	*dynamodb.Client
	pk, sk string

	mu   sync.Mutex
	prev map[string]map[string]types.AttributeValue // nil: the item did not exist

	eventual atomic.Int64 // GetItem, Query and BatchGetItem without ConsistentRead
}

func newStaleClient(c *dynamodb.Client, pk, sk string) *staleClient {
	return &staleClient{Client: c, pk: pk, sk: sk, prev: map[string]map[string]types.AttributeValue{}}
}

func (c *staleClient) id(table *string, item map[string]types.AttributeValue) (map[string]types.AttributeValue, string, bool) {
	pk, ok1 := item[c.pk].(*types.AttributeValueMemberS)
	sk, ok2 := item[c.sk].(*types.AttributeValueMemberS)
	if !ok1 || !ok2 {
		return nil, "", false // another table's item (a chunk)
	}
	key := map[string]types.AttributeValue{c.pk: pk, c.sk: sk}
	return key, aws.ToString(table) + "\x00" + pk.Value + "\x00" + sk.Value, true
}

// remember keeps the current value of the item a write is about to change.
func (c *staleClient) remember(ctx context.Context, table *string, item map[string]types.AttributeValue) error {
	key, id, ok := c.id(table, item)
	if !ok {
		return nil
	}
	out, err := c.Client.GetItem(ctx, &dynamodb.GetItemInput{TableName: table, Key: key, ConsistentRead: aws.Bool(true)})
	if err != nil {
		return err
	}
	c.mu.Lock()
	c.prev[id] = out.Item
	c.mu.Unlock()
	return nil
}

func (c *staleClient) GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	if !aws.ToBool(in.ConsistentRead) {
		c.eventual.Add(1)
		if _, id, ok := c.id(in.TableName, in.Key); ok {
			c.mu.Lock()
			item, stale := c.prev[id]
			c.mu.Unlock()
			if stale {
				return &dynamodb.GetItemOutput{Item: item}, nil
			}
		}
	}
	return c.Client.GetItem(ctx, in, optFns...)
}

func (c *staleClient) PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	if err := c.remember(ctx, in.TableName, in.Item); err != nil {
		return nil, err
	}
	return c.Client.PutItem(ctx, in, optFns...)
}

func (c *staleClient) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	if err := c.remember(ctx, in.TableName, in.Key); err != nil {
		return nil, err
	}
	return c.Client.UpdateItem(ctx, in, optFns...)
}

func (c *staleClient) DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	if err := c.remember(ctx, in.TableName, in.Key); err != nil {
		return nil, err
	}
	return c.Client.DeleteItem(ctx, in, optFns...)
}

func (c *staleClient) Query(ctx context.Context, in *dynamodb.QueryInput, optFns ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	if !aws.ToBool(in.ConsistentRead) {
		c.eventual.Add(1)
	}
	return c.Client.Query(ctx, in, optFns...)
}

// requests counts the requests a real client sends (each attempt), by
// operation, with a Finalize middleware, as shard's tests do: tests use it
// to show that rejected input, or a layout mismatch, sends no data
// request.
type requests struct {
	mu  sync.Mutex
	ops []string
}

// countingClient returns a real SDK client for s whose requests are
// counted in the returned *requests.
func countingClient(s *ddbtest.Server) (*dynamodb.Client, *requests) {
	q := &requests{}
	return s.Client(q.count), q
}

// count is a dynamodb option that adds the counting middleware.
func (q *requests) count(o *dynamodb.Options) {
	o.APIOptions = append(o.APIOptions, func(st *middleware.Stack) error {
		return st.Finalize.Add(middleware.FinalizeMiddlewareFunc("count", func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
			q.mu.Lock()
			q.ops = append(q.ops, awsmiddleware.GetOperationName(ctx))
			q.mu.Unlock()
			return next.HandleFinalize(ctx, in)
		}), middleware.After)
	})
}

// sent returns the operations sent since the last reset, in order.
func (q *requests) sent() []string {
	q.mu.Lock()
	defer q.mu.Unlock()
	return slices.Clone(q.ops)
}

// n returns how many requests were sent since the last reset.
func (q *requests) n() int { return len(q.sent()) }

// of returns how many requests of operation op were sent since the last
// reset.
func (q *requests) of(op string) int {
	n := 0
	for _, o := range q.sent() {
		if o == op {
			n++
		}
	}
	return n
}

func (q *requests) reset() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.ops = nil
}

// panickingClient is a real client whose GetItem and BatchGetItem panic
// once armed, as a user's client wrapper with a bug might: it shows where
// such a panic surfaces.
type panickingClient struct {
	*dynamodb.Client
	armed atomic.Bool
}

func (c *panickingClient) GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	if c.armed.Load() {
		panic(errBoom)
	}
	return c.Client.GetItem(ctx, in, optFns...)
}

func (c *panickingClient) BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error) {
	if c.armed.Load() {
		panic(errBoom)
	}
	return c.Client.BatchGetItem(ctx, in, optFns...)
}
