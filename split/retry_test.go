package split_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/dynashard/dynashard/dynashardtest/faultproxy"
	"github.com/dynashard/dynashard/internal/ddbtest"
	"github.com/dynashard/dynashard/split"
)

// TestRetriedConditionalWrite: through a proxy that resets half the
// PutItem connections after the write was applied, a versioned Put of one
// part is retried by the SDK and the retry's condition fails on the Put's
// own result. No such Put reports a conflict or a missing part: each
// succeeds or says its outcome is unknown, and the part holds the new
// price either way.
func TestRetriedConditionalWrite(t *testing.T) {
	ddbtest.EachTx(t, func(t *testing.T, s *ddbtest.Server) {
		ctx := context.Background()
		p, err := faultproxy.New(s.Endpoint, faultproxy.Config{ResetAfterRate: 0.5, Ops: []string{"PutItem"}, Seed: 3})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { p.Close() })
		proxied := s.Client(func(o *dynamodb.Options) {
			o.BaseEndpoint = aws.String(p.URL())
			o.Retryer = retry.NewStandard(func(ro *retry.StandardOptions) {
				ro.MaxAttempts, ro.MaxBackoff, ro.RateLimiter = 8, 2*time.Millisecond, ratelimit.None
			})
		})
		l := guideLayout()
		createTables(t, s, l)
		direct := newStore[Product](t, s.Client(), l)
		st := newStore[Product](t, proxied, l)
		unknown := 0
		for i := range 30 {
			prod, err := direct.Create(ctx, Product{Id: i, Title: "t", Price: "1", QuantityOnHand: "1"})
			if err != nil {
				t.Fatal(err)
			}
			prod.Price = fmt.Sprint(100 + i)
			_, err = st.Put(ctx, prod, []string{"availability"})
			switch {
			case errors.Is(err, split.ErrConflict), errors.Is(err, split.ErrNotFound):
				t.Errorf("Put of product %d: %v; want success or an unknown outcome", i, err)
			case err != nil:
				unknown++
			}
			r, err := direct.Get(ctx, split.Key{PK: fmt.Sprint(i)}, []string{"availability"}, func(o *split.Options) { o.ConsistentRead = true })
			if err != nil || r.Item.Price != prod.Price {
				t.Errorf("product %d after the Put: %+v, %v; want price %s", i, r.Item, err, prod.Price)
			}
		}
		if unknown == 0 {
			t.Errorf("no Put met a retried, refused condition: the test tests nothing")
		}
	})
}
