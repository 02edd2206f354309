package split_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/dynashard/dynashard/internal/ddbtest"
	"github.com/dynashard/dynashard/internal/exampletest"
	"github.com/dynashard/dynashard/split"
)

func TestMain(m *testing.M) { exampletest.Main(m) }

// Product is the guide's product, one struct over three parts.
type Product struct {
	Id                    int    `dynamodbav:"Id"`
	Title                 string `dynamodbav:"Title,omitempty"`
	Description           string `dynamodbav:"Description,omitempty"`
	Price                 string `dynamodbav:"Price,omitempty"`
	QuantityOnHand        string `dynamodbav:"QuantityOnHand,omitempty"`
	AverageCustomerRating string `dynamodbav:"AverageCustomerRating,omitempty"`
	TrackListing          string `dynamodbav:"TrackListing,omitempty"`
	// PriceVersion versions the availability part.
	PriceVersion int64 `dynamodbav:"PriceVersion,omitempty"`
}

// guideLayout is the guide's three tables, named uniquely.
func guideLayout() split.Layout {
	return split.Layout{
		PartitionKey:     "Id",
		PartitionKeyType: "N",
		Parts: []split.Part{
			{Name: "catalog", Table: ddbtest.TableName(), Attributes: []string{"Title", "Description"}},
			{Name: "availability", Table: ddbtest.TableName(), Attributes: []string{"Price", "QuantityOnHand"}, Version: "PriceVersion"},
			{Name: "extended", Table: ddbtest.TableName(), Attributes: []string{"AverageCustomerRating", "TrackListing"}},
		},
	}
}

// createTables creates every part's table of l on s.
func createTables(t *testing.T, s *ddbtest.Server, l split.Layout) {
	t.Helper()
	ins, err := l.CreateTableInputs()
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range ins {
		s.CreateTable(t, in)
	}
}

func newStore[T any](t *testing.T, c split.Client, l split.Layout, optFns ...func(*split.Options)) *split.Store[T] {
	t.Helper()
	st, err := split.New[T](c, l, optFns...)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// counting is a real client that counts the requests sent through it.
type counting struct {
	*dynamodb.Client
	n atomic.Int64
}

func (c *counting) GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	c.n.Add(1)
	return c.Client.GetItem(ctx, in, optFns...)
}
func (c *counting) PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	c.n.Add(1)
	return c.Client.PutItem(ctx, in, optFns...)
}
func (c *counting) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	c.n.Add(1)
	return c.Client.UpdateItem(ctx, in, optFns...)
}
func (c *counting) DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	c.n.Add(1)
	return c.Client.DeleteItem(ctx, in, optFns...)
}
func (c *counting) BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error) {
	c.n.Add(1)
	return c.Client.BatchGetItem(ctx, in, optFns...)
}
func (c *counting) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, optFns ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	c.n.Add(1)
	return c.Client.TransactWriteItems(ctx, in, optFns...)
}
func (c *counting) BatchWriteItem(ctx context.Context, in *dynamodb.BatchWriteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.BatchWriteItemOutput, error) {
	c.n.Add(1)
	return c.Client.BatchWriteItem(ctx, in, optFns...)
}
func (c *counting) Scan(ctx context.Context, in *dynamodb.ScanInput, optFns ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error) {
	c.n.Add(1)
	return c.Client.Scan(ctx, in, optFns...)
}
