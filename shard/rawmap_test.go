package shard_test

import (
	"context"
	"reflect"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynashard/dynashard/internal/ddbtest"
	"github.com/dynashard/dynashard/shard"
)

// TestRawMapItems: a Table of map[string]types.AttributeValue stores the
// map as it is and reads it back (the attributevalue package alone
// stores each value wrapped in an M, and panics reading one back).
func TestRawMapItems(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, s *ddbtest.Server) {
		ctx := context.Background()
		c := s.Client()
		name := s.Table(t, "pk:S", "sk:S")
		tbl, err := shard.NewTable[map[string]types.AttributeValue](c, shard.Layout{Table: name, PartitionKey: "pk", SortKey: "sk", Strategy: shard.Hash(4)})
		if err != nil {
			t.Fatal(err)
		}
		item := map[string]types.AttributeValue{
			"sk":     &types.AttributeValueMemberS{Value: "o1"},
			"Amount": &types.AttributeValueMemberN{Value: "7"},
			"Tags":   &types.AttributeValueMemberSS{Value: []string{"a"}},
		}
		if err := tbl.Put(ctx, "day", item); err != nil {
			t.Fatal(err)
		}
		pk, err := tbl.Key("day", "o1")
		if err != nil {
			t.Fatal(err)
		}
		stored, err := c.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(name), ConsistentRead: aws.Bool(true),
			Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: pk}, "sk": item["sk"]}})
		if err != nil {
			t.Fatal(err)
		}
		if n, ok := stored.Item["Amount"].(*types.AttributeValueMemberN); !ok || n.Value != "7" {
			t.Errorf("stored Amount is %#v; want N 7", stored.Item["Amount"])
		}
		got, err := tbl.Get(ctx, "day", "o1")
		if err != nil {
			t.Fatal(err)
		}
		delete(got, "pk")
		if !reflect.DeepEqual(got, item) {
			t.Errorf("Get = %v; want %v", got, item)
		}
	})
}
