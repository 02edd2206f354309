package chunk

import (
	"context"
	"sync"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/smithy-go/middleware"

	"github.com/dynashard/dynashard/internal/adapt"
)

// ReadStats counts how the chunk reads of a Store (and of the copies its
// calls make with optFns) met throttling, since New. The zero value is an
// empty count. See "Reading" in the package documentation.
type ReadStats struct {
	// BatchGets counts the BatchGetItem calls that reading chunks made:
	// a resend of unprocessed keys counts again, a retry inside the SDK
	// does not.
	BatchGets int64
	// Throttled counts those that met throttling
	// (ProvisionedThroughputExceededException, ThrottlingException,
	// RequestLimitExceeded, …): failed with it after the SDK's retries, or
	// answered after the SDK retried it. Each call counts once.
	Throttled int64
	// Backoffs counts the times a Reader halved the BatchGetItem calls it
	// keeps in flight because one met throttling.
	Backoffs int64
	// ConcurrencyLimit is the limit on BatchGetItem calls in flight that
	// a Reader's first window starts at, learned from throttling: where
	// the last window of any of the Store's Readers ended, or 0 when that
	// window was back at its own bound (see Options.MaxConcurrency), and
	// nothing limits the next one below its bound.
	ConcurrencyLimit int
	// MinConcurrencyLimit is the lowest limit a Reader has backed off to;
	// 0 if none has.
	MinConcurrencyLimit int
}

// ReadStats returns the counts of the Store's chunk reads so far. Safe for
// concurrent use.
func (s *Store) ReadStats() ReadStats {
	if s == nil || s.reads == nil {
		return ReadStats{}
	}
	s.reads.mu.Lock()
	defer s.reads.mu.Unlock()
	return s.reads.st
}

// readState is what a Store's readers share: the counts and the limit
// learned. Copies of a Store made for one call point to the same one.
type readState struct {
	mu sync.Mutex
	st ReadStats
}

// limiter returns the limiter of a Reader whose windows may keep up to
// ceiling BatchGetItem calls in flight, starting at the limit the Store's
// readers learned if that is lower, or the Reader's own limit if it has
// one (a new version may have another window bound).
func (r *Reader) limiter(ceiling int) *adapt.Limiter {
	if r.lim != nil && r.lim.Stats().Max == ceiling {
		return r.lim
	}
	start := ceiling
	if r.lim != nil {
		start = min(start, r.lim.Limit())
	}
	if rs := r.s.reads; rs != nil {
		rs.mu.Lock()
		if l := rs.st.ConcurrencyLimit; l > 0 {
			start = min(start, l)
		}
		rs.mu.Unlock()
	}
	r.lim = adapt.New(ceiling, start)
	return r.lim
}

// limitedReads returns a copy of s whose BatchGetItem calls wait for a
// slot of lim and report to it what they saw, for one window of chunks.
func (s *Store) limitedReads(lim *adapt.Limiter) *Store {
	if s.reads == nil {
		return s
	}
	call := *s
	call.c = limitedClient{Client: s.c, lim: lim, reads: s.reads}
	return &call
}

// record keeps where a Reader's limit stands after a window, for the
// next window of any Reader of the Store: 0 (no constraint) once it is
// back at its ceiling.
func (rs *readState) record(lim *adapt.Limiter) {
	if rs == nil {
		return
	}
	st := lim.Stats()
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if st.Limit >= st.Max {
		rs.st.ConcurrencyLimit = 0
	} else {
		rs.st.ConcurrencyLimit = st.Limit
	}
}

// limitedClient is the Store's client while a window of chunks is read:
// each BatchGetItem call takes a slot of the Reader's limiter first and
// gives it back with what it saw (adapt.Observe: a throttling error, or a
// throttle the SDK's retryer overcame). Unprocessed keys are no signal:
// DynamoDB also leaves keys unprocessed when more than 1 MB is asked of
// one partition, throttled or not; the batch engine resends them with
// backoff. Other calls go straight to the client.
type limitedClient struct {
	Client
	lim   *adapt.Limiter
	reads *readState
}

func (c limitedClient) BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error) {
	t, err := c.lim.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	out, err := c.Client.BatchGetItem(ctx, in, optFns...)
	md := middleware.Metadata{}
	if out != nil {
		md = out.ResultMetadata
	}
	sig := adapt.Observe(md, err)
	if err != nil && ctx.Err() != nil {
		sig = adapt.Neutral
	}
	cut := c.lim.Release(t, sig)
	c.reads.mu.Lock()
	defer c.reads.mu.Unlock()
	st := &c.reads.st
	st.BatchGets++
	if sig == adapt.Throttled {
		st.Throttled++
	}
	if cut {
		limit := c.lim.Limit()
		st.Backoffs++
		st.ConcurrencyLimit = limit
		if st.MinConcurrencyLimit == 0 || limit < st.MinConcurrencyLimit {
			st.MinConcurrencyLimit = limit
		}
	}
	return out, err
}
