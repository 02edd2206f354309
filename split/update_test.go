package split_test

import (
	"context"
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/google/go-cmp/cmp"

	"github.com/dynashard/dynashard/internal/ddbtest"
	"github.com/dynashard/dynashard/split"
)

// TestUpdateNamesOnlyThePartsAttributes: an Update whose expression names,
// at the top level, an attribute that no part holds (SET or ADD of Bogus,
// SET of the chunk store's ChunkVersion) is refused with ErrInvalid before
// any request, and the part is left as it was (its version included).
// Paths into one of the part's own attributes may name any field.
func TestUpdateNamesOnlyThePartsAttributes(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, s *ddbtest.Server) {
		ctx := context.Background()
		l := guideLayout()
		l.Parts[2].Attributes = append(l.Parts[2].Attributes, "Details")
		createTables(t, s, l)
		c := &counting{Client: s.Client()}
		st := newStore[map[string]any](t, c, l)
		k := split.Key{PK: "7"}
		item := map[string]any{"Id": 7, "Title": "t", "Price": "1", "QuantityOnHand": "3", "Details": map[string]any{"Color": "red"}}
		// Every part, written directly (Create needs transactions, which
		// dynalite lacks).
		for _, p := range l.Parts {
			av, err := attributevalue.MarshalMap(pick(item, l, p))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.Client().PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(p.Table), Item: av}); err != nil {
				t.Fatalf("put part %s: %v", p.Name, err)
			}
		}
		read := func() map[string]any {
			t.Helper()
			r, err := st.Get(ctx, k, nil, consistent)
			if err != nil {
				t.Fatal(err)
			}
			return r.Item
		}
		before := read()
		for _, tc := range []struct {
			name, part string
			update     expression.UpdateBuilder
		}{
			{"SET Bogus", "availability", expression.Set(expression.Name("Bogus"), expression.Value("x"))},
			{"ADD Bogus", "availability", expression.Add(expression.Name("Bogus"), expression.Value(1))},
			{"SET ChunkVersion", "catalog", expression.Set(expression.Name("ChunkVersion"), expression.Value("v"))},
			{"SET of its own and of no part's", "catalog", expression.Set(expression.Name("Title"), expression.Value("u")).Set(expression.Name("Bogus"), expression.Value("x"))},
			{"read of no part's", "availability", expression.Set(expression.Name("Price"), expression.Name("Bogus"))},
		} {
			t.Run(tc.name, func(t *testing.T) {
				sent := c.n.Load()
				_, err := st.Update(ctx, k, tc.part, tc.update)
				if !errors.Is(err, split.ErrInvalid) {
					t.Errorf("got %v, want ErrInvalid", err)
				}
				if n := c.n.Load() - sent; n != 0 {
					t.Errorf("sent %d requests, want 0", n)
				}
			})
		}
		if diff := cmp.Diff(before, read()); diff != "" {
			t.Errorf("item after the refused updates (-before +after):\n%s", diff)
		}
		// A path into the part's own map attribute may name any field.
		got, err := st.Update(ctx, k, "extended", expression.Set(expression.Name("Details.Bogus"), expression.Value("ok")))
		if err != nil {
			t.Fatalf("Update of a field inside the part's own attribute: %v", err)
		}
		want := map[string]any{"Color": "red", "Bogus": "ok"}
		if diff := cmp.Diff(want, got["Details"]); diff != "" {
			t.Errorf("Details after the update (-want +got):\n%s", diff)
		}
	})
}

// pick returns the key attributes of item and the attributes part p holds.
func pick(item map[string]any, l split.Layout, p split.Part) map[string]any {
	out := map[string]any{l.PartitionKey: item[l.PartitionKey]}
	for _, a := range p.Attributes {
		if v, ok := item[a]; ok {
			out[a] = v
		}
	}
	return out
}
