// Package backoff is dynashard's one way of telling a throttle from any
// other error and of waiting before a retry: the batch engine, the chunk
// store's parent flip and the benchmarks all use it.
package backoff

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
)

var throttles = retry.IsErrorThrottles(retry.DefaultThrottles)

// IsThrottle reports whether err is one the SDK itself classifies as a
// throttle (retry.DefaultThrottles: ProvisionedThroughputExceededException,
// ThrottlingException, RequestLimitExceeded and the like), wrapped or not.
func IsThrottle(err error) bool {
	return err != nil && throttles.IsErrorThrottle(err) == aws.TrueTernary
}

// Cap returns min(max, base·2^attempt) without overflowing.
func Cap(base, max time.Duration, attempt int) time.Duration {
	d := base
	for range attempt {
		if d >= max/2 {
			return max
		}
		d *= 2
	}
	return min(d, max)
}

// Jitter returns a uniformly random duration in [0, d): "full jitter".
func Jitter(d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	return rand.N(d)
}

// Sleep waits d, or less if ctx ends or stop closes (stop may be nil); it
// reports whether the whole wait passed.
func Sleep(ctx context.Context, stop <-chan struct{}, d time.Duration) bool {
	if d <= 0 {
		select {
		case <-ctx.Done():
			return false
		case <-stop:
			return false
		default:
			return true
		}
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-stop:
		return false
	case <-t.C:
		return true
	}
}
