package scatter_test

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynashard/dynashard"
	"github.com/dynashard/dynashard/internal/ddbtest"
	"github.com/dynashard/dynashard/internal/localddb"
	"github.com/dynashard/dynashard/scatter"
	"github.com/dynashard/dynashard/shard"
)

// TestUsageLookup: a Lookup's one BatchGetItem reports 0.5 read units
// (eventually consistent) or 1 (strongly) per item found, each item
// rounded up to 4 KB on its own; a key with no item costs nothing on
// DynamoDB Local and the minimum on dynalite.
func TestUsageLookup(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, s *ddbtest.Server) {
		ctx := context.Background()
		c := s.Client()
		table := s.Table(t, "pk:S", "sk:S")
		const n = 4
		l := layout(table, 'S', shard.Random(n))
		l.Unchecked = true
		// Suffixes 2..4 hold "x" (5,000 bytes: two 4 KB units); 1 none.
		found := 0
		size := 0
		for k := 2; k <= n; k++ {
			pk := fmt.Sprintf("day.%d", k)
			item := map[string]types.AttributeValue{"pk": sv(pk), "sk": sv("x"), "v": sv(strings.Repeat("v", 5000))}
			if _, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: item}); err != nil {
				t.Fatal(err)
			}
			found++
			size = len("pk") + len(pk) + len("sk") + len("x") + len("v") + 5000
		}
		sc := newScatter(t, c, l)
		for _, consistent := range []bool{false, true} {
			per := 0.5
			if consistent {
				per = 1
			}
			want := float64(found) * per * math.Ceil(float64(size)/4096)
			if s.Kind == localddb.Dynalite {
				want += per // the key with no item
			}
			var u dynashard.Usage
			items, err := sc.Lookup(dynashard.WithUsage(ctx, &u), "day", sv("x"), func(o *scatter.Options) { o.ConsistentRead = consistent })
			if err != nil || len(items) != found {
				t.Fatalf("Lookup: %d items, %v; want %d", len(items), err, found)
			}
			if got := u.Table(table); got.Read != want || got.Write != 0 || u.Requests() != 1 {
				t.Errorf("consistent=%v: Lookup used %+v in %d requests, want %.1f read units in one BatchGetItem", consistent, got, u.Requests(), want)
			}
		}
	})
}
