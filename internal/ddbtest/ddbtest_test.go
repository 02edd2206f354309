package ddbtest

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

func TestMain(m *testing.M) { Main(m) }

// TestRoundTrip proves each selected server takes a table, a write and a
// read through the real SDK.
func TestRoundTrip(t *testing.T) {
	Each(t, func(t *testing.T, s *Server) {
		ctx := context.Background()
		c := s.Client()
		table := s.Table(t, "pk:S", "sk:N")
		_, err := c.PutItem(ctx, &dynamodb.PutItemInput{
			TableName: aws.String(table),
			Item: map[string]types.AttributeValue{
				"pk": &types.AttributeValueMemberS{Value: "a"},
				"sk": &types.AttributeValueMemberN{Value: "1"},
				"v":  &types.AttributeValueMemberS{Value: "héllo"},
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		out, err := c.GetItem(ctx, &dynamodb.GetItemInput{
			TableName:      aws.String(table),
			ConsistentRead: aws.Bool(true),
			Key: map[string]types.AttributeValue{
				"pk": &types.AttributeValueMemberS{Value: "a"},
				"sk": &types.AttributeValueMemberN{Value: "1"},
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		v, ok := out.Item["v"].(*types.AttributeValueMemberS)
		if !ok || v.Value != "héllo" {
			t.Fatalf("got %#v, want v=héllo", out.Item["v"])
		}
	})
}

func TestTableInputRejectsBadSpecs(t *testing.T) {
	for _, keys := range [][]string{nil, {"pk"}, {"pk:X"}, {":S"}, {"a:S", "b:S", "c:S"}} {
		if _, err := TableInput(keys...); err == nil {
			t.Errorf("TableInput(%q): got nil error, want one", keys)
		}
	}
}

func TestSelected(t *testing.T) {
	for _, tc := range []struct {
		env  string
		want int
		url  string
		bad  bool
	}{
		{"", 2, "", false},
		{"all", 2, "", false},
		{"ddblocal", 1, "", false},
		{"dynalite,ddblocal", 2, "", false},
		{"http://127.0.0.1:8000", 1, "http://127.0.0.1:8000", false},
		{"mysql", 0, "", true},
	} {
		t.Run(tc.env, func(t *testing.T) {
			t.Setenv("DYNASHARD_SERVER", tc.env)
			kinds, url, err := Selected()
			if (err != nil) != tc.bad {
				t.Fatalf("err = %v, want error %v", err, tc.bad)
			}
			if len(kinds) != tc.want || url != tc.url {
				t.Errorf("got %v %q, want %d kinds %q", kinds, url, tc.want, tc.url)
			}
		})
	}
}

// TestPanicOn: a client made with PanicOn panics in the caller's goroutine
// on the operations named, and sends the others.
func TestPanicOn(t *testing.T) {
	Each(t, func(t *testing.T, s *Server) {
		ctx := context.Background()
		table := s.Table(t, "pk:S")
		c := s.Client(PanicOn("boom", "PutItem"))
		key := map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "a"}}
		if _, err := c.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), Key: key}); err != nil {
			t.Fatalf("GetItem: %v", err)
		}
		got := func() (v any) {
			defer func() { v = recover() }()
			c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: key})
			return nil
		}()
		if got != "boom" {
			t.Errorf("PutItem: recovered %v, want boom", got)
		}
	})
}
