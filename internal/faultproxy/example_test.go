package faultproxy_test

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynashard/dynashard/internal/ddbtest"
	"github.com/dynashard/dynashard/internal/faultproxy"
	"github.com/dynashard/dynashard/internal/localddb"
)

// A proxy that leaves every batch write unprocessed: the SDK gets the items
// back in UnprocessedItems and the server never sees them.
func ExampleNew() {
	ctx := context.Background()
	srv, err := ddbtest.Default()
	if err != nil {
		fmt.Println(err)
		return
	}
	in, _ := ddbtest.TableInput("pk:S")
	table, err := srv.NewTable(ctx, in)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Client().DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(table)})

	p, err := faultproxy.New(srv.Endpoint, faultproxy.Config{UnprocessedRate: 1})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer p.Close()
	c := localddb.NewClient(p.URL())

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
