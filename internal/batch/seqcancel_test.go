package batch

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/smithy-go/middleware"

	"github.com/dynashard/dynashard/internal/ddbtest"
	"github.com/dynashard/dynashard/internal/localddb"
)

// TestWriteSeqCancelledBetweenWrites: a WriteSeq whose ctx is cancelled
// while its sequence still has writes never reports success. The ctx is
// cancelled as the k-th BatchWriteItem's answer arrives, when every write
// pulled so far may be done. Before the fix WriteSeq then returned nil:
// the writes it never pulled were lost without an error (found by the
// chunk refactor, whose Put then relied on its pre-flip check).
func TestWriteSeqCancelledBetweenWrites(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, srv *ddbtest.Server) {
		table := srv.Table(t, "pk:S")
		for _, tc := range []struct{ k, n int }{{1, 26}, {1, 30}, {1, 50}, {1, 51}, {2, 51}, {2, 60}, {1, 200}, {3, 200}} {
			k, n := tc.k, tc.n
			ctx, cancel := context.WithCancel(context.Background())
			answered := 0
			c := localddb.NewClient(srv.Endpoint, func(o *dynamodb.Options) {
				o.APIOptions = append(o.APIOptions, func(st *middleware.Stack) error {
					return st.Initialize.Add(middleware.InitializeMiddlewareFunc("cancel-after",
						func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
							out, md, err := next.HandleInitialize(ctx, in)
							if answered++; answered == k {
								cancel()
							}
							return out, md, err
						}), middleware.After)
				})
			})
			writes := func(yield func(Write) bool) {
				for i := range n {
					if !yield(Write{Table: table, Put: pkItem(fmt.Sprintf("c%d-%d", k, i))}) {
						return
					}
				}
			}
			st, err := WriteSeq(ctx, c, writes, func(o *Options) {
				o.KeyAttributes = map[string][]string{table: {"pk"}}
				o.MaxConcurrency = 1
			})
			cancel()
			var ue *UnprocessedError
			if !errors.Is(err, context.Canceled) || !errors.As(err, &ue) {
				t.Errorf("%d writes, cancelled at answer %d: %v (%d done); want an *UnprocessedError matching context.Canceled", n, k, err, st.Done)
			}
		}
	})
}
