// Package backoff is dynashard's one way of telling a throttle from any
// other error and of waiting before a retry: the batch engine, the chunk
// store's parent flip and the benchmarks all use it.
package backoff

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/smithy-go/middleware"
)

var throttles = retry.IsErrorThrottles(retry.DefaultThrottles)

// IsThrottle reports whether err is one the SDK itself classifies as a
// throttle (retry.DefaultThrottles: ProvisionedThroughputExceededException,
// ThrottlingException, RequestLimitExceeded and the like), wrapped or not.
func IsThrottle(err error) bool {
	return err != nil && throttles.IsErrorThrottle(err) == aws.TrueTernary
}

// ThrottledAttempts counts the attempts of one SDK call that met
// throttling: for an answered call, those the SDK's retryer recorded in md
// (its ResultMetadata; the retryer hides a throttle it overcame); for a
// call that failed with a throttle, all its attempts (the retryer stops
// early on no other kind), else none.
func ThrottledAttempts(md middleware.Metadata, err error) int {
	if err != nil {
		if !IsThrottle(err) {
			return 0
		}
		var maxed *retry.MaxAttemptsError
		if errors.As(err, &maxed) && maxed.Attempt > 0 {
			return maxed.Attempt
		}
		return 1
	}
	n := 0
	if attempts, ok := retry.GetAttemptResults(md); ok {
		for _, a := range attempts.Results {
			if IsThrottle(a.Err) {
				n++
			}
		}
	}
	return n
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
