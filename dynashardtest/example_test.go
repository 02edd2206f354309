package dynashardtest_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynashard/dynashard/dynashardtest"
	"github.com/dynashard/dynashard/dynashardtest/faultproxy"
)

// ExampleNewServer starts DynamoDB Local, creates a table, and writes and
// reads an item through the SDK.
func ExampleNewServer() {
	srv, err := dynashardtest.NewServer() // or func(o *dynashardtest.Options) { o.Kind = dynashardtest.Dynalite }
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()

	ctx := context.Background()
	table := dynashardtest.TableName("greetings") // tables are shared by every handle: keep names unique
	err = srv.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            aws.String(table),
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("id"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("id"), KeyType: types.KeyTypeHash}},
	})
	if err != nil {
		log.Fatal(err)
	}

	c := srv.Client()
	_, err = c.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: aws.String(table),
		Item: map[string]types.AttributeValue{
			"id":   &types.AttributeValueMemberS{Value: "en"},
			"text": &types.AttributeValueMemberS{Value: "hello, world"},
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	out, err := c.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(table),
		Key:            map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: "en"}},
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(srv.Kind(), out.Item["text"].(*types.AttributeValueMemberS).Value)
	// Output: ddblocal hello, world
}

// ExampleNewServer_throttling starts DynamoDB Local behind the fault
// proxy's partition model: a table provisioned at 1 WCU has one partition
// of 1 WCU per second, and with no burst capacity saved up a run of writes
// is throttled as DynamoDB would throttle it. UnprocessedRate hands every
// batch write back unprocessed.
func ExampleNewServer_throttling() {
	srv, err := dynashardtest.NewServer(func(o *dynashardtest.Options) {
		o.Proxy = &faultproxy.Config{
			Model:           faultproxy.Partitioned,
			Partition:       faultproxy.PartitionConfig{BurstWindow: time.Millisecond}, // no burst to spend
			UnprocessedRate: 1,
		}
	})
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()

	ctx := context.Background()
	table := dynashardtest.TableName("throttled")
	err = srv.CreateTable(ctx, &dynamodb.CreateTableInput{ // through the proxy, which reads its throughput
		TableName:             aws.String(table),
		AttributeDefinitions:  []types.AttributeDefinition{{AttributeName: aws.String("id"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:             []types.KeySchemaElement{{AttributeName: aws.String("id"), KeyType: types.KeyTypeHash}},
		ProvisionedThroughput: &types.ProvisionedThroughput{ReadCapacityUnits: aws.Int64(1), WriteCapacityUnits: aws.Int64(1)},
	})
	if err != nil {
		log.Fatal(err)
	}
	c := srv.Client(func(o *dynamodb.Options) { o.RetryMaxAttempts = 1 }) // the throttling itself, not the SDK's retries

	var throttled *types.ProvisionedThroughputExceededException
	for i := 0; i < 100 && throttled == nil; i++ {
		_, err := c.PutItem(ctx, &dynamodb.PutItemInput{
			TableName: aws.String(table),
			Item:      map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: fmt.Sprint(i)}},
		})
		if err != nil && !errors.As(err, &throttled) {
			log.Fatal(err)
		}
	}
	if throttled == nil {
		log.Fatal("100 writes to a 1 WCU table, none throttled")
	}
	fmt.Println("PutItem:", throttled.ErrorCode())

	var writes []types.WriteRequest
	for _, id := range []string{"a", "b", "c"} {
		writes = append(writes, types.WriteRequest{PutRequest: &types.PutRequest{
			Item: map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: id}},
		}})
	}
	out, err := c.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{table: writes}})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("BatchWriteItem: unprocessed", len(out.UnprocessedItems[table]))

	st := srv.Proxy().Stats().Total
	fmt.Printf("proxy: %d throttled, %d unprocessed\n", st.Throttled, st.Unprocessed)
	// Output:
	// PutItem: ProvisionedThroughputExceededException
	// BatchWriteItem: unprocessed 3
	// proxy: 1 throttled, 3 unprocessed
}
