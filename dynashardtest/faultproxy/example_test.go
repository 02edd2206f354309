package faultproxy_test

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynashard/dynashard/dynashardtest"
	"github.com/dynashard/dynashard/dynashardtest/faultproxy"
)

// A proxy that leaves every batch write unprocessed: the SDK gets the items
// back in UnprocessedItems and the server never sees them.
func ExampleNew() {
	ctx := context.Background()
	srv, err := dynashardtest.NewServer() // DynamoDB Local
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()
	table := dynashardtest.TableName("example")
	if err := srv.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            aws.String(table),
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
	}); err != nil {
		fmt.Println(err)
		return
	}

	p, err := faultproxy.New(srv.Endpoint(), faultproxy.Config{UnprocessedRate: 1})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer p.Close()
	// The kit's client (its region and credentials), sent to the proxy.
	c := srv.Client(func(o *dynamodb.Options) { o.BaseEndpoint = aws.String(p.URL()) })

	var writes []types.WriteRequest
	for _, pk := range []string{"a", "b", "c"} {
		writes = append(writes, types.WriteRequest{PutRequest: &types.PutRequest{
			Item: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: pk}},
		}})
	}
	out, err := c.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{
		RequestItems: map[string][]types.WriteRequest{table: writes},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	st := p.Stats().Ops["BatchWriteItem"]
	fmt.Printf("unprocessed %d, proxy counted %d, forwarded %d\n",
		len(out.UnprocessedItems[table]), st.Unprocessed, st.Forwarded)
	// Output: unprocessed 3, proxy counted 3, forwarded 0
}

// The partition model: four keys of a 5,000 RCU / 2,000 WCU table (four
// partitions of 500 WCU) land on three partitions, two of them sharing one
// partition's budget.
func ExampleNew_partitioned() {
	ctx := context.Background()
	srv, err := dynashardtest.NewServer() // DynamoDB Local
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()
	table := dynashardtest.TableName("example")
	if err := srv.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            aws.String(table),
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
	}); err != nil {
		fmt.Println(err)
		return
	}

	p, err := faultproxy.New(srv.Endpoint(), faultproxy.Config{
		Model: faultproxy.Partitioned,
		Partition: faultproxy.PartitionConfig{Tables: map[faultproxy.TableKey]faultproxy.Throughput{
			{Table: table}: {RCU: 5000, WCU: 2000},
		}},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer p.Close()
	// The kit's client (its region and credentials), sent to the proxy.
	c := srv.Client(func(o *dynamodb.Options) { o.BaseEndpoint = aws.String(p.URL()) })
	for _, pk := range []string{"2014-07-09.1", "2014-07-09.2", "2014-07-09.3", "2014-07-09.4"} {
		if _, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table),
			Item: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: pk}}}); err != nil {
			fmt.Println(err)
			return
		}
	}
	for i, ps := range p.Stats().Tables[faultproxy.TableKey{Table: table}].Partitions {
		fmt.Printf("partition %d: %g WCU/s, %g WCU written\n", i, ps.WCU, ps.Write.Units)
	}
	// Output:
	// partition 0: 500 WCU/s, 1 WCU written
	// partition 1: 500 WCU/s, 2 WCU written
	// partition 2: 500 WCU/s, 1 WCU written
	// partition 3: 500 WCU/s, 0 WCU written
}
