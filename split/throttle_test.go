package split_test

import (
	"context"
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynashard/dynashard/dynashardtest/faultproxy"
	"github.com/dynashard/dynashard/internal/ddbtest"
	"github.com/dynashard/dynashard/split"
)

// TestGetThrottledForGood: when every BatchGetItem is throttled, Get and
// GetMany give up (after the batch reader's time without progress) with
// a *PartError naming a part item not read, from which the SDK's
// throttling error is reachable with errors.As. What is asserted holds
// however long the giving up takes.
func TestGetThrottledForGood(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, s *ddbtest.Server) {
		t.Parallel() // each server's run waits out the same time without progress
		ctx := context.Background()
		p, err := faultproxy.New(s.Endpoint, faultproxy.Config{ThrottleRate: 1, Ops: []string{"BatchGetItem"}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { p.Close() })
		proxied := s.Client(func(o *dynamodb.Options) {
			o.BaseEndpoint = aws.String(p.URL())
			o.Retryer = retry.NewStandard(func(ro *retry.StandardOptions) {
				ro.MaxAttempts, ro.RateLimiter = 2, ratelimit.None
			})
		})
		l := guideLayout()
		createTables(t, s, l)
		st := newStore[Product](t, proxied, l)
		for _, tc := range []struct {
			name string
			call func() error
		}{
			{"Get", func() error { _, err := st.Get(ctx, split.Key{PK: "21"}, []string{"catalog"}); return err }},
			{"GetMany", func() error {
				_, err := st.GetMany(ctx, []split.Key{{PK: "21"}}, []string{"catalog"})
				return err
			}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				err := tc.call()
				if p.Stats().Total.Throttled == 0 {
					t.Errorf("the proxy throttled nothing: the test tests nothing")
				}
				var pt *types.ProvisionedThroughputExceededException
				if !errors.As(err, &pt) {
					t.Errorf("got %v, want the SDK's *types.ProvisionedThroughputExceededException reachable with errors.As", err)
				}
				var pe *split.PartError
				if !errors.As(err, &pe) {
					t.Fatalf("got %v, want a *split.PartError naming the part not read", err)
				}
				want := split.PartError{Part: "catalog", Table: l.Parts[0].Table, Key: split.Key{PK: "21"}}
				if got := (split.PartError{Part: pe.Part, Table: pe.Table, Key: pe.Key}); got != want {
					t.Errorf("the error names part %q, table %q, key %v; want %q, %q, %v", got.Part, got.Table, got.Key, want.Part, want.Table, want.Key)
				}
			})
		}
	})
}
