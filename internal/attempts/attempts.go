// Package attempts counts the attempts the SDK's retryer makes for one
// request, the throttled ones, and whether one that failed may have been
// applied all the same (a reset connection, a timeout, a 5xx). A
// conditional write whose condition fails on a retry after such an
// attempt may have failed on its own result: its outcome is unknown, not
// a conflict. (A TransactWriteItems is safe: the SDK gives every attempt
// the same ClientRequestToken, and DynamoDB answers a repeat with the
// first attempt's success.)
package attempts

import (
	"context"
	"errors"
	"sync"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/smithy-go/middleware"

	"github.com/dynashard/dynashard/internal/backoff"
)

// Counter observes the attempts of the requests sent with its Option. The
// zero value is ready to use.
type Counter struct {
	mu              sync.Mutex
	sent, throttled int
	maybeApplied    bool
}

// Option is a per-request option that counts every attempt in c.
func (c *Counter) Option(o *dynamodb.Options) {
	o.APIOptions = append(o.APIOptions, func(st *middleware.Stack) error {
		return st.Finalize.Add(middleware.FinalizeMiddlewareFunc("dynashard/attempts",
			func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
				out, md, err := next.HandleFinalize(ctx, in)
				c.mu.Lock()
				c.sent++
				switch {
				case backoff.IsThrottle(err):
					c.throttled++
				case err != nil && !Refused(err):
					c.maybeApplied = true
				}
				c.mu.Unlock()
				return out, md, err
			}), middleware.After)
	})
}

// Counts returns the attempts sent and the throttled ones.
func (c *Counter) Counts() (sent, throttled int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sent, c.throttled
}

// MaybeApplied reports whether an attempt failed in a way that may follow
// its being applied.
func (c *Counter) MaybeApplied() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.maybeApplied
}

// Refused reports whether err is an HTTP 4xx response: a request the
// service refused without applying it.
func Refused(err error) bool {
	var re interface{ HTTPStatusCode() int }
	if !errors.As(err, &re) {
		return false
	}
	code := re.HTTPStatusCode()
	return code >= 400 && code < 500
}
