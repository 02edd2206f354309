package dynashardtest_test

import (
	"context"
	"fmt"
	"log"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynashard/dynashard/dynashardtest"
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
