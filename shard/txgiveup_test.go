package shard_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynashard/dynashard/internal/ddbtest"
	"github.com/dynashard/dynashard/shard"
)

// TestTxGiveUpIsNoConflict: a transactional write that gives up after its
// attempts wrote nothing, but no condition failed: its error wraps the
// last TransactionCanceledException and does not match ErrConflict. Here
// other code left two copies of an item, so each attempt finds it at the
// other key.
func TestTxGiveUpIsNoConflict(t *testing.T) {
	ddbtest.EachTx(t, func(t *testing.T, s *ddbtest.Server) {
		ctx := context.Background()
		c := s.Client()
		name := s.Table(t, "pk:S", "sk:S")
		// A 2 s HistoryTTL (a 4 s fence): twelve transactions must fit in
		// one fence on a loaded machine, or the Put is ErrTooLate instead.
		l := layoutOf(name, shard.Hash(2))
		l.HistoryTTL = 2 * time.Second
		tbl, err := shard.NewTable[Order](c, l)
		if err != nil {
			t.Fatal(err)
		}
		old, err := shard.NewTable[Order](c, shard.Layout{Table: name, PartitionKey: "pk", SortKey: "sk", Strategy: shard.Hash(2), Unchecked: true})
		if err != nil {
			t.Fatal(err)
		}
		if err := again(func() error { return tbl.Put(ctx, "day", Order{ID: "first"}) }); err != nil { // records [2]
			t.Fatal(err)
		}
		if err := again(func() error { _, err := tbl.Reshard(ctx, "day", 8); return err }); err != nil {
			t.Fatal(err)
		}
		if h, err := tbl.Shards(ctx, "day"); err != nil || len(h) != 2 {
			t.Fatalf("history %v, %v; want two counts", h, err)
		}
		var id, k8, k2 string
		for i := 0; k8 == k2; i++ {
			id = fmt.Sprint("o", i)
			if k8, err = tbl.Key("day", id); err != nil {
				t.Fatal(err)
			}
			if k2, err = old.Key("day", id); err != nil {
				t.Fatal(err)
			}
		}
		for _, pk := range []string{k8, k2} {
			if _, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(name), Item: map[string]types.AttributeValue{
				"pk": &types.AttributeValueMemberS{Value: pk}, "sk": &types.AttributeValueMemberS{Value: id},
			}}); err != nil {
				t.Fatal(err)
			}
		}
		err = again(func() error { return tbl.Put(ctx, "day", Order{ID: id, Amount: 1}) })
		var tce *types.TransactionCanceledException
		if err == nil || errors.Is(err, shard.ErrConflict) || !errors.As(err, &tce) {
			t.Errorf("a Put meeting two copies: %v; want an error wrapping TransactionCanceledException, not ErrConflict", err)
		}
	})
}
