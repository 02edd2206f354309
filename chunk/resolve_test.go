package chunk

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynashard/dynashard/internal/ddbtest"
)

func keyS(v string) Key {
	return Key{PartitionName: "pk", Partition: &types.AttributeValueMemberS{Value: v}}
}

// TestResolve: a parent read by the caller resolves to the same payload
// Get returns, inline or chunked, and follows a replacement.
func TestResolve(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, srv *ddbtest.Server) {
		ctx := context.Background()
		e := newEnv(t, srv)
		st := e.store(t, func(o *Options) { o.ChunkSize = 1000 })
		read := func(key Key) map[string]types.AttributeValue {
			out, err := e.c.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(e.parents), Key: key.item(), ConsistentRead: aws.Bool(true)})
			if err != nil {
				t.Fatal(err)
			}
			return out.Item
		}
		for _, size := range []int{0, 10, 5000} {
			key := keyS("resolve" + string(rune('a'+size%26)))
			want := bytes.Repeat([]byte{byte(size)}, size)
			if _, err := st.Put(ctx, key, want); err != nil {
				t.Fatal(err)
			}
			got, info, err := st.Resolve(ctx, key, read(key))
			if err != nil || !bytes.Equal(got, want) || info.Size != int64(size) {
				t.Errorf("size %d: got %d bytes (info %d), %v; want the payload", size, len(got), info.Size, err)
			}
		}
		// A stale item: its chunks are gone after a replacement.
		key := keyS("stale")
		if _, err := st.Put(ctx, key, bytes.Repeat([]byte("o"), 3000)); err != nil {
			t.Fatal(err)
		}
		stale := read(key)
		want := bytes.Repeat([]byte("n"), 4000)
		if _, err := st.Put(ctx, key, want); err != nil {
			t.Fatal(err)
		}
		if got, _, err := st.Resolve(ctx, key, stale); err != nil || !bytes.Equal(got, want) {
			t.Errorf("stale item: got %d bytes, %v; want the new payload", len(got), err)
		}
		if _, _, err := st.Resolve(ctx, keyS("none"), map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "none"}}); !errors.Is(err, ErrNotFound) {
			t.Errorf("item without payload: got %v, want ErrNotFound", err)
		}
	})
}

// TestPutCondition: the caller's condition is checked in the same update
// that switches the payload; when it fails nothing changes.
func TestPutCondition(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, srv *ddbtest.Server) {
		ctx := context.Background()
		e := newEnv(t, srv)
		st := e.store(t, func(o *Options) { o.ChunkSize = 1000 })
		key := keyS("cond")
		first := bytes.Repeat([]byte("1"), 2500)
		if _, err := st.Put(ctx, key, first, func(o *PutOptions) {
			o.Attributes = map[string]types.AttributeValue{"rev": &types.AttributeValueMemberN{Value: "1"}}
		}); err != nil {
			t.Fatal(err)
		}
		before := e.chunkKeys(t)
		_, err := st.Put(ctx, key, bytes.Repeat([]byte("2"), 2500), func(o *PutOptions) {
			o.Attributes = map[string]types.AttributeValue{"rev": &types.AttributeValueMemberN{Value: "3"}}
			o.Condition = expression.Name("rev").Equal(expression.Value(2))
		})
		if !errors.Is(err, ErrConflict) {
			t.Fatalf("failed condition: got %v, want ErrConflict", err)
		}
		got, info, err := st.Get(ctx, key)
		if err != nil || !bytes.Equal(got, first) {
			t.Fatalf("after a failed condition: got %d bytes, %v; want the first payload", len(got), err)
		}
		if n := info.Attributes["rev"].(*types.AttributeValueMemberN).Value; n != "1" {
			t.Errorf("rev = %s, want 1", n)
		}
		if after := e.chunkKeys(t); len(after) != len(before) {
			t.Errorf("chunk table: %d keys after the refused Put, want %d (its chunks removed)", len(after), len(before))
		}
		second := bytes.Repeat([]byte("2"), 2500)
		if _, err := st.Put(ctx, key, second, func(o *PutOptions) {
			o.Attributes = map[string]types.AttributeValue{"rev": &types.AttributeValueMemberN{Value: "2"}}
			o.Condition = expression.Name("rev").Equal(expression.Value(1))
		}); err != nil {
			t.Fatalf("holding condition: %v", err)
		}
		if got, _, err := st.Get(ctx, key); err != nil || !bytes.Equal(got, second) {
			t.Errorf("after a held condition: got %d bytes, %v; want the second payload", len(got), err)
		}
	})
}
