package chunk

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/dynashard/dynashard/internal/ddbtest"
)

// TestKeyName: a parent item moved to another key (as shard.Rebalance
// moves one) keeps its payload when both keys have the same Name, and
// Sweep, which cannot find the moved parent from the chunks, leaves them
// alone. An invalid Name is refused before any request.
func TestKeyName(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, srv *ddbtest.Server) {
		ctx := context.Background()
		e := newEnv(t, srv)
		st := e.store(t, func(o *Options) { o.ChunkSize = 1000 })
		from, to := sKey("b.3"), sKey("b.7")
		from.Name, to.Name = "b.0#x", "b.0#x"
		data := bytes.Repeat([]byte("named payload "), 500)
		if _, err := st.Put(ctx, from, data); err != nil {
			t.Fatal(err)
		}
		// Move the parent as Rebalance does: the same attributes at the new key.
		out, err := e.c.GetItem(ctx, &dynamodb.GetItemInput{TableName: &e.parents, Key: from.item(), ConsistentRead: aws.Bool(true)})
		if err != nil {
			t.Fatal(err)
		}
		out.Item["pk"] = to.Partition
		if _, err := e.c.PutItem(ctx, &dynamodb.PutItemInput{TableName: &e.parents, Item: out.Item}); err != nil {
			t.Fatal(err)
		}
		if _, err := e.c.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: &e.parents, Key: from.item()}); err != nil {
			t.Fatal(err)
		}
		st.now = later(st)
		stats, err := st.Sweep(ctx)
		if err != nil || stats.Deleted != 0 || stats.Foreign == 0 {
			t.Errorf("Sweep after the move: %+v, %v; want named chunks left alone", stats, err)
		}
		got, _, err := st.Get(ctx, to)
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("Get at the new key: %d bytes, %v", len(got), err)
		}
		if err := st.Delete(ctx, to); err != nil {
			t.Fatal(err)
		}
		if n := len(e.chunkKeys(t)); n != 0 {
			t.Errorf("Delete at the new key left %d chunks", n)
		}
		bad := sKey("b.1")
		bad.Name = string([]byte{0xff})
		if _, err := st.Put(ctx, bad, data); !errors.Is(err, ErrInvalidKey) {
			t.Errorf("Put with a Name that is not UTF-8: %v, want ErrInvalidKey", err)
		}
	})
}
