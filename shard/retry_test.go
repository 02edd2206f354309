package shard_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/smithy-go/middleware"

	"github.com/dynashard/dynashard/dynashardtest/faultproxy"
	"github.com/dynashard/dynashard/internal/ddbtest"
	"github.com/dynashard/dynashard/shard"
)

// TestRetriedConditionalWrite: through a proxy that resets half the
// PutItem connections after the write was applied, the SDK retries, and
// the retry's condition (only if absent) fails on the write's own result.
// No Put of a fresh id reports a conflict: each either succeeds or says
// its outcome is unknown, and the item is there either way.
func TestRetriedConditionalWrite(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, s *ddbtest.Server) {
		ctx := context.Background()
		c, _ := throttledClient(t, s, faultproxy.Config{ResetAfterRate: 0.5, Ops: []string{"PutItem"}, Seed: 3})
		name := s.Table(t, "pk:S", "sk:S")
		tbl := newOrders(t, c, name, shard.Hash(4))
		reader := newOrders(t, s.Client(), name, shard.Hash(4))
		unknown := 0
		for i := range 40 {
			id := fmt.Sprint("o", i)
			err := tbl.Put(ctx, "day", Order{ID: id, Amount: i}, func(o *shard.Options) {
				o.Condition = expression.AttributeNotExists(expression.Name("sk"))
			})
			switch {
			case errors.Is(err, shard.ErrConflict):
				t.Errorf("Put %s of a fresh id: %v; want success or an unknown outcome", id, err)
			case err != nil:
				unknown++
			}
			if _, err := reader.Get(ctx, "day", id); err != nil {
				t.Errorf("Get %s: %v", id, err)
			}
		}
		if unknown == 0 {
			t.Errorf("no Put met a retried, refused condition: the test tests nothing")
		}
	})
}

// TestExactlyOnce: the proxy resets half the write connections after the
// write was applied, so the SDK sends the write again; between the two
// attempts a conditional Delete that sees the written amount (so the
// first attempt was applied, and the Put comes before the Delete) removes
// the item. A plain Put's second attempt writes it again: the item is
// back after both calls were acknowledged, which no order of the two
// explains. With Options.ExactlyOnce the Put is a transaction, whose
// repeat DynamoDB answers with the first outcome: the item stays deleted.
func TestExactlyOnce(t *testing.T) {
	ddbtest.EachTx(t, func(t *testing.T, s *ddbtest.Server) {
		ctx := context.Background()
		p, err := faultproxy.New(s.Endpoint, faultproxy.Config{ResetAfterRate: 0.5, Ops: []string{"PutItem", "TransactWriteItems"}, Seed: 5})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { p.Close() })
		name := s.Table(t, "pk:S", "sk:S")
		direct := newOrders(t, s.Client(), name, shard.Hash(4))
		var (
			attempt int
			between func() // run before a write's second attempt
		)
		c := s.Client(func(o *dynamodb.Options) {
			o.BaseEndpoint = aws.String(p.URL())
			o.Retryer = retry.NewStandard(func(ro *retry.StandardOptions) {
				ro.MaxAttempts, ro.MaxBackoff, ro.RateLimiter = 8, 2*time.Millisecond, ratelimit.None
			})
			o.APIOptions = append(o.APIOptions, func(st *middleware.Stack) error {
				return st.Finalize.Add(middleware.FinalizeMiddlewareFunc("between-attempts",
					func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
						if op := awsmiddleware.GetOperationName(ctx); op != "PutItem" && op != "TransactWriteItems" {
							return next.HandleFinalize(ctx, in) // the record's requests
						}
						if attempt++; attempt == 2 && between != nil {
							between()
						}
						return next.HandleFinalize(ctx, in)
					}), middleware.After)
			})
		})
		tbl := newOrders(t, c, name, shard.Hash(4))
		for _, once := range []bool{false, true} {
			resurrected, deleted := 0, 0
			for i := range 40 {
				id := fmt.Sprintf("once=%v-%d", once, i)
				attempt = 0
				between = func() {
					err := direct.Delete(ctx, "day", id, func(o *shard.Options) {
						o.Condition = expression.Name("amount").Equal(expression.Value(i))
					})
					if err == nil {
						deleted++
					} else if !errors.Is(err, shard.ErrConflict) {
						t.Errorf("Delete %s: %v", id, err)
					}
				}
				d0 := deleted
				err := tbl.Put(ctx, "day", Order{ID: id, Amount: i}, func(o *shard.Options) { o.ExactlyOnce = once })
				between = nil
				if err != nil || deleted == d0 {
					continue // not acknowledged, or no Delete came between attempts
				}
				if _, err := direct.Get(ctx, "day", id, func(o *shard.Options) { o.ConsistentRead = true }); err == nil {
					resurrected++
				} else if !errors.Is(err, shard.ErrNotFound) {
					t.Fatal(err)
				}
			}
			t.Logf("ExactlyOnce %v: %d Deletes between a Put's attempts, %d items back after both were acknowledged", once, deleted, resurrected)
			switch {
			case deleted == 0:
				t.Errorf("ExactlyOnce %v: no Delete came between a Put's attempts: the test tests nothing", once)
			case once && resurrected > 0:
				t.Errorf("ExactlyOnce: %d deleted items written again by a Put's repeated attempt", resurrected)
			case !once && resurrected == 0:
				t.Errorf("plain Put: no item came back; the at-least-once case this option exists for was not met")
			}
		}
	})
}

// TestExactlyOnceNeedsTransactions: on a server without transactions an
// ExactlyOnce write fails with ErrNoTransactions and writes nothing; on
// one with them it is written.
func TestExactlyOnceNeedsTransactions(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, s *ddbtest.Server) {
		ctx := context.Background()
		tbl := newOrders(t, s.Client(), s.Table(t, "pk:S", "sk:S"), shard.Hash(4))
		once := func(o *shard.Options) { o.ExactlyOnce = true }
		if !s.Transactions() {
			// Each write is refused before anything is written: not even the
			// base's layout record, which a first write records.
			perr := tbl.Put(ctx, "day", Order{ID: "o1", Amount: 1}, once)
			_, uerr := tbl.Update(ctx, "day", "o1", expression.Set(expression.Name("Amount"), expression.Value(2)), once)
			derr := tbl.Delete(ctx, "day", "o1", once)
			for op, err := range map[string]error{"Put": perr, "Update": uerr, "Delete": derr} {
				if !errors.Is(err, shard.ErrNoTransactions) {
					t.Errorf("dynalite: ExactlyOnce %s: %v; want ErrNoTransactions", op, err)
				}
			}
			out, err := s.Client().Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(tbl.Layout().Table)})
			if err != nil || len(out.Items) != 0 {
				t.Errorf("dynalite: after refused ExactlyOnce writes the table holds %v (Scan %v); want nothing, record included", out.Items, err)
			}
			return
		}
		err := tbl.Put(ctx, "day", Order{ID: "o1", Amount: 1}, once)
		_, gerr := tbl.Get(ctx, "day", "o1", func(o *shard.Options) { o.ConsistentRead = true })
		if err != nil || gerr != nil {
			t.Errorf("Put %v, then Get %v; want the item written", err, gerr)
		}
	})
}
