package repo_test

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynashard/dynashard/internal/ddbtest"
	"github.com/dynashard/dynashard/repo"
	"github.com/dynashard/dynashard/shard"
)

// TestFromStored: an item as the table stores it (here read raw, as a
// stream's new image carries it) becomes the value Get returns, its large
// value read from its chunks. A form whose chunks a later Put replaced
// comes back as that later value. A form without its partition key is
// refused with ErrInvalid.
func TestFromStored(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, s *ddbtest.Server) {
		ctx := context.Background()
		c := s.Client()
		l := newTable(t, s, 4)
		r := newRepo[Reply](t, c, l, large("body", newStore(t, s, c, l)))
		tbl, err := shard.NewTable[Reply](c, l) // for the physical key
		if err != nil {
			t.Fatal(err)
		}
		for _, body := range [][]byte{[]byte("short"), bytes.Repeat([]byte("large "), 100_000)} {
			if _, err := r.Put(ctx, "b", Reply{ID: "r1", Author: "ann", Body: body}); err != nil {
				t.Fatal(err)
			}
			pk, err := tbl.Key("b", "r1")
			if err != nil {
				t.Fatal(err)
			}
			raw, err := c.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(l.Table), ConsistentRead: aws.Bool(true),
				Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: pk}, "sk": &types.AttributeValueMemberS{Value: "r1"}}})
			if err != nil {
				t.Fatal(err)
			}
			got, err := r.FromStored(ctx, raw.Item)
			if err != nil || got.Author != "ann" || !bytes.Equal(got.Body, body) {
				t.Errorf("FromStored of a %d-byte body: %q, %d bytes, %v", len(body), got.Author, len(got.Body), err)
			}
		}
		// An older stored form, whose chunks the next Put replaced.
		pk, _ := tbl.Key("b", "r1")
		old, err := c.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(l.Table), ConsistentRead: aws.Bool(true),
			Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: pk}, "sk": &types.AttributeValueMemberS{Value: "r1"}}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.Put(ctx, "b", Reply{ID: "r1", Author: "bob", Body: bytes.Repeat([]byte("later "), 100_000)}); err != nil {
			t.Fatal(err)
		}
		got, err := r.FromStored(ctx, old.Item)
		if err != nil || got.Author != "bob" || !bytes.HasPrefix(got.Body, []byte("later ")) {
			t.Errorf("FromStored of a form whose chunks were replaced: %q, %d bytes, %v; want the later value, read again", got.Author, len(got.Body), err)
		}
		_, err = r.FromStored(ctx, map[string]types.AttributeValue{"sk": &types.AttributeValueMemberS{Value: "r1"}})
		if !errors.Is(err, repo.ErrInvalid) {
			t.Errorf("FromStored without a partition key: %v; want ErrInvalid", err)
		}
	})
}
