// Package throttle_test is a test as a user of dynashard writes one: it
// imports only the public test kit (dynashardtest and its faultproxy) and
// the AWS SDK, starts a local server that throttles like DynamoDB, and
// checks that its own code meets ProvisionedThroughputExceededException
// and UnprocessedItems. It runs against DynamoDB Local and dynalite.
package throttle_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynashard/dynashard/dynashardtest"
	"github.com/dynashard/dynashard/dynashardtest/faultproxy"
)

// saveEvent and saveEvents stand for the code under test: they write
// events and report what DynamoDB refused.
func saveEvent(ctx context.Context, c *dynamodb.Client, table, id string) error {
	_, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: event(id)})
	if err != nil {
		return fmt.Errorf("save event %s: %w", id, err)
	}
	return nil
}

// saveEvents writes ids in one BatchWriteItem and returns the ones left
// unprocessed, for the caller to retry later.
func saveEvents(ctx context.Context, c *dynamodb.Client, table string, ids ...string) (unprocessed []string, err error) {
	writes := make([]types.WriteRequest, len(ids))
	for i, id := range ids {
		writes[i] = types.WriteRequest{PutRequest: &types.PutRequest{Item: event(id)}}
	}
	out, err := c.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{table: writes}})
	if err != nil {
		return nil, fmt.Errorf("save events: %w", err)
	}
	for _, w := range out.UnprocessedItems[table] {
		if id, ok := w.PutRequest.Item["id"].(*types.AttributeValueMemberS); ok {
			unprocessed = append(unprocessed, id.Value)
		}
	}
	return unprocessed, nil
}

func event(id string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		"id":   &types.AttributeValueMemberS{Value: id},
		"kind": &types.AttributeValueMemberS{Value: "click"},
	}
}

func TestThrottledWrites(t *testing.T) {
	for _, kind := range []dynashardtest.Kind{dynashardtest.DynamoDBLocal, dynashardtest.Dynalite} {
		t.Run(string(kind), func(t *testing.T) {
			// A local server behind DynamoDB's partition model, with no
			// burst capacity saved up, so that a provisioned table
			// throttles as soon as a partition's throughput is spent.
			srv := dynashardtest.Start(t, func(o *dynashardtest.Options) {
				o.Kind = kind
				o.Proxy = &faultproxy.Config{
					Model:     faultproxy.Partitioned,
					Partition: faultproxy.PartitionConfig{BurstWindow: time.Millisecond},
				}
			})
			ctx := context.Background()
			table := dynashardtest.TableName("events")
			err := srv.CreateTable(ctx, &dynamodb.CreateTableInput{
				TableName:             aws.String(table),
				AttributeDefinitions:  []types.AttributeDefinition{{AttributeName: aws.String("id"), AttributeType: types.ScalarAttributeTypeS}},
				KeySchema:             []types.KeySchemaElement{{AttributeName: aws.String("id"), KeyType: types.KeyTypeHash}},
				ProvisionedThroughput: &types.ProvisionedThroughput{ReadCapacityUnits: aws.Int64(1), WriteCapacityUnits: aws.Int64(1)},
			})
			if err != nil {
				t.Fatal(err)
			}
			// One attempt per call: the SDK would otherwise retry the
			// throttling away.
			c := srv.Client(func(o *dynamodb.Options) { o.RetryMaxAttempts = 1 })

			// 1 WCU per second on one partition: a run of writes is
			// throttled, whatever the keys.
			var throttled *types.ProvisionedThroughputExceededException
			for i := 0; i < 100 && throttled == nil; i++ {
				if err := saveEvent(ctx, c, table, fmt.Sprintf("e%d", i)); err != nil && !errors.As(err, &throttled) {
					t.Fatal(err)
				}
			}
			if throttled == nil {
				t.Fatal("100 writes to a 1 WCU table: got no ProvisionedThroughputExceededException")
			}

			// Every batch entry comes back unprocessed from now on.
			if err := srv.Proxy().Set(faultproxy.Config{Model: faultproxy.Partitioned, UnprocessedRate: 1}); err != nil {
				t.Fatal(err)
			}
			unprocessed, err := saveEvents(ctx, c, table, "b1", "b2", "b3")
			if err != nil {
				t.Fatal(err)
			}
			if len(unprocessed) != 3 {
				t.Errorf("saveEvents: got unprocessed %q, want all of b1, b2, b3", unprocessed)
			}
		})
	}
}
