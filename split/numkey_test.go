package split_test

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/google/go-cmp/cmp"

	"github.com/dynashard/dynashard/internal/ddbtest"
	"github.com/dynashard/dynashard/split"
)

// TestNumberKeySpellings: DynamoDB takes "21", "21.0", "2.1E1" and
// "021" for one number, and so does every read of an N-keyed layout: Get
// and GetMany find the item and decode it into an int key, and the
// Result's Key is the number as DynamoDB returns it ("21").
func TestNumberKeySpellings(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, s *ddbtest.Server) {
		ctx := context.Background()
		l := guideLayout()
		createTables(t, s, l)
		st := newStore[Product](t, s.Client(), l)
		av, err := attributevalue.MarshalMap(Product{Id: 21, Title: "Bicycle"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Client().PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(l.Parts[0].Table), Item: av}); err != nil {
			t.Fatal(err)
		}
		want := split.Result[Product]{Key: split.Key{PK: "21"}, Item: Product{Id: 21, Title: "Bicycle"},
			Found: []string{"catalog"}, Missing: []string{"availability", "extended"}}
		for _, pk := range []string{"21", "21.0", "2.1E1", "2.1e+1", "021", "210E-1"} {
			t.Run(pk, func(t *testing.T) {
				r, err := st.Get(ctx, split.Key{PK: pk}, nil, consistent)
				if err != nil {
					t.Fatalf("Get: %v", err)
				}
				if diff := cmp.Diff(want, r); diff != "" {
					t.Errorf("Get (-want +got):\n%s", diff)
				}
				rs, err := st.GetMany(ctx, []split.Key{{PK: pk}, {PK: "22"}}, nil, consistent)
				if err != nil {
					t.Fatalf("GetMany: %v", err)
				}
				if len(rs) != 2 {
					t.Fatalf("GetMany: %d results, want 2", len(rs))
				}
				if diff := cmp.Diff(want, rs[0]); diff != "" {
					t.Errorf("GetMany (-want +got):\n%s", diff)
				}
				if len(rs[1].Found) != 0 || rs[1].Key.PK != "22" {
					t.Errorf("GetMany of an absent key: %+v, want key 22 with nothing found", rs[1])
				}
			})
		}
	})
}
