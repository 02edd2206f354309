package stream_test

import (
	"context"
	"fmt"
	"log"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"

	"github.com/dynashard/dynashard/dynashardtest"
	"github.com/dynashard/dynashard/stream"
)

// ordersWithStream starts DynamoDB Local, creates an orders table with a
// stream, and writes, updates and deletes orders. It returns the server
// (the caller closes it), a Streams client for it and the stream's ARN.
func ordersWithStream() (*dynashardtest.Server, *dynamodbstreams.Client, string) {
	ctx := context.Background()
	srv, err := dynashardtest.NewServer()
	if err != nil {
		log.Fatal(err)
	}
	table := dynashardtest.TableName("orders")
	err = srv.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            aws.String(table),
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("id"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("id"), KeyType: types.KeyTypeHash}},
		StreamSpecification: &types.StreamSpecification{
			StreamEnabled: aws.Bool(true), StreamViewType: types.StreamViewTypeNewAndOldImages,
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	client := srv.Client()
	order := func(id, total string) map[string]types.AttributeValue {
		return map[string]types.AttributeValue{
			"id": &types.AttributeValueMemberS{Value: id}, "total": &types.AttributeValueMemberN{Value: total},
		}
	}
	for _, in := range []*dynamodb.PutItemInput{
		{TableName: aws.String(table), Item: order("order-1", "10")},
		{TableName: aws.String(table), Item: order("order-1", "12")},
		{TableName: aws.String(table), Item: order("order-2", "30")},
	} {
		if _, err := client.PutItem(ctx, in); err != nil {
			log.Fatal(err)
		}
	}
	_, err = client.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName: aws.String(table), Key: map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: "order-1"}},
	})
	if err != nil {
		log.Fatal(err)
	}

	arn, err := stream.StreamARN(ctx, client, table)
	if err != nil {
		log.Fatal(err)
	}
	// The Streams API is another client of the same endpoint, region and
	// credentials (dynamodbstreams.NewFromConfig with an aws.Config).
	o := client.Options()
	streams := dynamodbstreams.New(dynamodbstreams.Options{
		Region: o.Region, BaseEndpoint: o.BaseEndpoint, Credentials: o.Credentials,
	})
	return srv, streams, arn
}

// printRecords prints each record's event, order id and new total, after
// prefix if any.
func printRecords(prefix string, b stream.Batch) {
	for _, r := range b.Records {
		total := "-"
		if n, ok := r.Dynamodb.NewImage["total"].(*streamtypes.AttributeValueMemberN); ok {
			total = n.Value
		}
		if prefix != "" {
			fmt.Print(prefix, " ")
		}
		fmt.Println(r.EventName, r.Dynamodb.Keys["id"].(*streamtypes.AttributeValueMemberS).Value, total)
	}
}

// Poll reads every change so far, each item's in order, and returns once
// caught up.
func ExamplePoller_Poll() {
	srv, streams, arn := ordersWithStream()
	defer srv.Close()

	p, err := stream.NewPoller(streams, arn, func(o *stream.PollerOptions) { o.StopWhenCaughtUp = true })
	if err != nil {
		log.Fatal(err)
	}
	err = p.Poll(context.Background(), func(ctx context.Context, b stream.Batch) error {
		printRecords("", b)
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
	// Output:
	// INSERT order-1 10
	// MODIFY order-1 12
	// INSERT order-2 30
	// REMOVE order-1 -
}

// A consumer stores each batch's checkpoint with the batch's effects, and
// a later Poller (in another process, say) resumes after it.
func ExampleParseCheckpoint() {
	srv, streams, arn := ordersWithStream()
	defer srv.Close()

	// The first run handles one batch of two records, then stops.
	var stored string
	ctx, stop := context.WithCancel(context.Background())
	p, err := stream.NewPoller(streams, arn, func(o *stream.PollerOptions) { o.Limit = 2 })
	if err != nil {
		log.Fatal(err)
	}
	err = p.Poll(ctx, func(ctx context.Context, b stream.Batch) error {
		printRecords("first:", b)
		stored = b.Checkpoint.String() // with the batch's effects
		stop()
		return nil
	})
	fmt.Println("first run:", err)

	// The second resumes after the last record processed.
	cp, err := stream.ParseCheckpoint(stored)
	if err != nil {
		log.Fatal(err)
	}
	p, err = stream.NewPoller(streams, arn, func(o *stream.PollerOptions) {
		o.Checkpoint, o.StopWhenCaughtUp = cp, true
	})
	if err != nil {
		log.Fatal(err)
	}
	err = p.Poll(context.Background(), func(ctx context.Context, b stream.Batch) error {
		printRecords("resumed:", b)
		return nil
	})
	fmt.Println("second run:", err)
	// Output:
	// first: INSERT order-1 10
	// first: MODIFY order-1 12
	// first run: context canceled
	// resumed: INSERT order-2 30
	// resumed: REMOVE order-1 -
	// second run: <nil>
}
