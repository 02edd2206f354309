package observe

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/smithy-go/middleware"
)

// A request whose ctx has a deadline is checked against it once more as
// it leaves, after signing and the retryer's waits: a process paused (a
// GC, CPU throttling, SIGSTOP) past the deadline may resume before the
// ctx's timer fires, and its request must not be sent then. The shard
// protocol's fences rely on this: a request made under a view is sent
// before the view's deadline or not at all.

// withDeadlineCheck returns optFns with the check added if ctx has a
// deadline; otherwise optFns as they are, at no cost.
func withDeadlineCheck(ctx context.Context, optFns []func(*dynamodb.Options)) []func(*dynamodb.Options) {
	if _, ok := ctx.Deadline(); !ok {
		return optFns
	}
	return append(optFns[:len(optFns):len(optFns)], addDeadlineCheck)
}

func addDeadlineCheck(o *dynamodb.Options) {
	o.APIOptions = append(o.APIOptions, func(st *middleware.Stack) error {
		return st.Deserialize.Add(deadlineCheck, middleware.After)
	})
}

// deadlineCheck is the last middleware before the request is sent.
var deadlineCheck = middleware.DeserializeMiddlewareFunc("dynashard.deadline",
	func(ctx context.Context, in middleware.DeserializeInput, next middleware.DeserializeHandler) (middleware.DeserializeOutput, middleware.Metadata, error) {
		if d, ok := ctx.Deadline(); ok && !time.Now().Before(d) {
			return middleware.DeserializeOutput{}, middleware.Metadata{},
				fmt.Errorf("dynashard: not sent: its deadline passed %v ago: %w", time.Since(d).Round(time.Millisecond), context.DeadlineExceeded)
		}
		return next.HandleDeserialize(ctx, in)
	})
