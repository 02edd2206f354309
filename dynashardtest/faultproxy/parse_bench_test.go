package faultproxy

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// BenchmarkParseBatchWrite reads a BatchWriteItem of 25 items as the SDK
// sends it, with the one-pass reader the proxy uses and with the
// encoding/json layers it replaced. Items of about 16 KB are a bulk load's;
// about 350 KB, chunk.Store's chunks.
func BenchmarkParseBatchWrite(b *testing.B) {
	for _, size := range []int{16 << 10, 350 << 10} {
		var reqs []types.WriteRequest
		for i := range 25 {
			reqs = append(reqs, types.WriteRequest{PutRequest: &types.PutRequest{Item: map[string]types.AttributeValue{
				"pk":   &types.AttributeValueMemberS{Value: fmt.Sprintf("payload#v1#%d", i)},
				"sk":   &types.AttributeValueMemberN{Value: "1"},
				"Data": &types.AttributeValueMemberB{Value: make([]byte, size)},
			}}})
		}
		body := sdkBody(b, func(ctx context.Context, c *dynamodb.Client) error {
			_, err := c.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{"t": reqs}})
			return err
		})
		for _, m := range []struct {
			name  string
			parse func(c *call)
		}{
			{"one-pass", func(c *call) { c.parseBatchWrite(testSchemas) }},
			{"encoding-json", func(c *call) { c.parseBatchWriteJSON(testSchemas) }},
		} {
			b.Run(fmt.Sprintf("item=%dKB/%s", size>>10, m.name), func(b *testing.B) {
				b.ReportAllocs()
				b.SetBytes(int64(len(body)))
				for b.Loop() {
					c := &call{op: "BatchWriteItem", body: body}
					m.parse(c)
					if len(c.batch["t"]) != 25 || !c.batch["t"][0].hasKey {
						b.Fatal("batch not read")
					}
				}
			})
		}
	}
}

// BenchmarkParsePutItem reads scenario 1's PutItem (an item of about 230
// bytes) with the one-pass reader and with the encoding/json layers it
// replaced: the body into a struct, the item into raw values, each value.
func BenchmarkParsePutItem(b *testing.B) {
	body := sdkBody(b, func(ctx context.Context, c *dynamodb.Client) error {
		_, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("t"), Item: map[string]types.AttributeValue{
			"pk":      &types.AttributeValueMemberS{Value: "day1.17"},
			"sk":      &types.AttributeValueMemberS{Value: "ORD-00000001"},
			"payload": &types.AttributeValueMemberS{Value: strings.Repeat("x", 200)},
		}})
		return err
	})
	for _, m := range []struct {
		name  string
		parse func(c *call)
	}{
		{"one-pass", func(c *call) { c.parseItemOp(testSchemas) }},
		{"encoding-json", func(c *call) {
			var in itemOpInput
			if json.Unmarshal(c.body, &in) != nil {
				return
			}
			item, err := decodeItemJSON(in.Item)
			c.key, item, c.hasKey = keyOfItem(testSchemas, in.TableName, item, err)
			c.units = writeUnits(itemSize(item))
		}},
	} {
		b.Run(m.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				c := &call{op: "PutItem", body: body}
				m.parse(c)
				if !c.hasKey {
					b.Fatal("key not read")
				}
			}
		})
	}
}
