package dynashard_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/dynashard/dynashard"
	"github.com/dynashard/dynashard/dynashardtest/faultproxy"
	"github.com/dynashard/dynashard/internal/ddbtest"
	"github.com/dynashard/dynashard/shard"
	"github.com/dynashard/dynashard/split"
)

// TestHTTPStatus: the error of a real call of each kind maps to its
// status, also when the caller wraps it further.
func TestHTTPStatus(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, s *ddbtest.Server) {
		ctx := context.Background()
		// HistoryTTL < 0: no caching and a fence of 1 s, so that a request
		// held up 3 s by the proxy is abandoned with ErrTooLate.
		l := shard.Layout{Table: ddbtest.TableName(), PartitionKey: "pk", SortKey: "sk", Strategy: shard.Hash(4), HistoryTTL: -1}
		in, err := l.CreateTableInput()
		if err != nil {
			t.Fatal(err)
		}
		s.CreateTable(t, in)
		// The calls expected to succeed use the default HistoryTTL (a
		// 20 s fence), so that a loaded machine does not make them late;
		// the record then holds 10 s, and the proxied tables trust the
		// shorter of it and their own.
		direct := l
		direct.HistoryTTL = 0
		tbl := newTable(t, s.Client(), direct)
		if err := tbl.Put(ctx, "d", Order{ID: "x", Amount: 1}); err != nil {
			t.Fatal(err)
		}
		proxied := func(cfg faultproxy.Config) *shard.Table[Order] {
			p, err := faultproxy.New(s.Endpoint, cfg)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { p.Close() })
			return newTable(t, s.Client(func(o *dynamodb.Options) {
				o.BaseEndpoint = aws.String(p.URL())
				o.Retryer = retry.NewStandard(func(ro *retry.StandardOptions) { ro.MaxAttempts, ro.RateLimiter = 1, ratelimit.None })
			}), l)
		}
		throttled := proxied(faultproxy.Config{ThrottleRate: 1, Ops: []string{"PutItem"}})
		slow := proxied(faultproxy.Config{Latency: 3 * time.Second, Ops: []string{"PutItem"}})

		tests := []statusCase{
			{"nil", nil, http.StatusOK, nil},
			{"invalid", tbl.Put(ctx, "", Order{ID: "x"}), http.StatusBadRequest, shard.ErrInvalid},
			{"not found", func() error { _, err := tbl.Get(ctx, "d", "absent"); return err }(), http.StatusNotFound, shard.ErrNotFound},
			{"conflict", tbl.Put(ctx, "d", Order{ID: "x"}, func(o *shard.Options) {
				o.Condition = expression.AttributeNotExists(expression.Name("pk"))
			}), http.StatusConflict, shard.ErrConflict},
			{"throttled", throttled.Put(ctx, "d", Order{ID: "y"}), http.StatusServiceUnavailable, nil},
			{"too late", slow.Put(ctx, "d", Order{ID: "z"}), http.StatusGatewayTimeout, shard.ErrTooLate},
			{"other", errors.New("boom"), http.StatusInternalServerError, nil},
		}
		if !s.Transactions() {
			_, reshard := tbl.Reshard(ctx, "d", 8)
			sl := split.Layout{PartitionKey: "Id", Parts: []split.Part{{Name: "a", Table: s.Table(t, "Id:S"), Attributes: []string{"A"}}}}
			st, err := split.New[map[string]any](s.Client(), sl)
			if err != nil {
				t.Fatal(err)
			}
			_, create := st.Create(ctx, map[string]any{"Id": "1", "A": "a"})
			tests = append(tests,
				statusCase{"shard: no transactions", reshard, http.StatusNotImplemented, shard.ErrNoTransactions},
				statusCase{"split: no transactions", create, http.StatusNotImplemented, split.ErrNoTransactions})
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				if tc.also != nil && !errors.Is(tc.err, tc.also) {
					t.Fatalf("the call returned %v, want an error matching %v", tc.err, tc.also)
				}
				for _, err := range []error{tc.err, wrap(tc.err)} {
					code, wait := dynashard.HTTPStatus(err)
					if code != tc.want {
						t.Errorf("HTTPStatus(%v) = %d, want %d", err, code, tc.want)
					}
					if (wait > 0) != (tc.want == http.StatusServiceUnavailable) {
						t.Errorf("HTTPStatus(%v): Retry-After %v; want one for 503 only", err, wait)
					}
				}
			})
		}
	})
}

// statusCase is an error of a real call and the status it maps to.
type statusCase struct {
	name string
	err  error
	want int
	also error // the error the call must match, besides its status
}

func newTable(t *testing.T, c *dynamodb.Client, l shard.Layout) *shard.Table[Order] {
	t.Helper()
	tbl, err := shard.NewTable[Order](c, l)
	if err != nil {
		t.Fatal(err)
	}
	return tbl
}

// wrap wraps err as a caller might; nil stays nil.
func wrap(err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("handler: %w", err)
}
