package repo_test

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynashard/dynashard/chunk"
	"github.com/dynashard/dynashard/internal/ddbtest"
	"github.com/dynashard/dynashard/shard"
)

// TestLargeFieldForeignItems: items that hold no large value (written by
// shard.Table's Put and Load, the README's bulk-load path) read through a
// Repo with a LargeField with the field's zero value, or with their own
// attribute of that name, by Get, List and All; a damaged payload's error
// names the table, the id and the attribute (issue 20, item 4).
func TestLargeFieldForeignItems(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, s *ddbtest.Server) {
		ctx := context.Background()
		c := s.Client()
		l := newTable(t, s, 4)
		chunks := s.Table(t, "ChunkKey:S")
		st, err := chunk.New(c, l.Table, chunks)
		if err != nil {
			t.Fatal(err)
		}
		r := newRepo[Reply](t, c, l, large("body", st))
		tbl, err := shard.NewTable[Reply](c, l)
		if err != nil {
			t.Fatal(err)
		}
		if err := tbl.Put(ctx, "b", Reply{ID: "plain", Author: "ann"}); err != nil {
			t.Fatal(err)
		}
		if err := tbl.Put(ctx, "b", Reply{ID: "own", Author: "bob", Body: []byte("a body of its own")}); err != nil {
			t.Fatal(err)
		}
		if _, err := tbl.Load(ctx, func(yield func(string, Reply) bool) {
			for i := range 3 {
				if !yield("b", Reply{ID: fmt.Sprint("loaded", i), Author: "cy"}) {
					return
				}
			}
		}); err != nil {
			t.Fatal(err)
		}
		big := bytes.Repeat([]byte("large "), 4000)
		if _, err := r.Put(ctx, "b", Reply{ID: "big", Author: "dee", Body: big}); err != nil {
			t.Fatal(err)
		}
		want := map[string]string{"plain": "", "own": "a body of its own", "loaded0": "", "loaded1": "", "loaded2": "", "big": string(big)}
		for id, body := range want {
			got, err := r.Get(ctx, "b", id)
			if err != nil || string(got.Body) != body || got.Author == "" {
				t.Errorf("Get %s: %+v (%d bytes), %v; want %d bytes", id, got.Author, len(got.Body), err, len(body))
			}
		}
		listed, _, err := r.List(ctx, "b", 100, "")
		if err != nil || len(listed) != len(want) {
			t.Fatalf("List: %d items, %v; want %d", len(listed), err, len(want))
		}
		var all []string
		for it, err := range r.All(ctx, "b") {
			if err != nil {
				t.Fatal(err)
			}
			if string(it.Body) != want[it.ID] {
				t.Errorf("All: %s has %d bytes, want %d", it.ID, len(it.Body), len(want[it.ID]))
			}
			all = append(all, it.ID)
		}
		if len(all) != len(want) {
			t.Errorf("All: %v", all)
		}
		// Damage the large value: its chunks go.
		out, err := c.Scan(ctx, &dynamodb.ScanInput{TableName: &chunks})
		if err != nil || len(out.Items) == 0 {
			t.Fatalf("Scan of the chunk table: %d items, %v", len(out.Items), err)
		}
		for _, it := range out.Items {
			if _, err := c.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: &chunks, Key: map[string]types.AttributeValue{"ChunkKey": it["ChunkKey"]}}); err != nil {
				t.Fatal(err)
			}
		}
		_, err = r.Get(ctx, "b", "big")
		for _, part := range []string{l.Table, `"big"`, `"body"`} {
			if err == nil || !strings.Contains(err.Error(), part) {
				t.Errorf("Get of a damaged value: %v; want an error naming %s", err, part)
			}
		}
		if _, _, err := r.List(ctx, "b", 100, ""); err == nil || !slices.ContainsFunc([]string{l.Table}, func(s string) bool { return strings.Contains(err.Error(), s) }) {
			t.Errorf("List with a damaged value: %v; want an error naming the table", err)
		}
	})
}
