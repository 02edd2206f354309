package batch

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"
)

// A wrapping client's PartialError (shard's Load client, which writes
// some items with transactions and abandons requests at its fence):
// what it settles is counted exactly, abandoned entries go out again at
// once as neither retries nor a stall, and what may have been applied is
// reported as such.

var errLate = errors.New("late for the client's own deadline")

// partialClient applies or refuses each write request as split decides,
// and answers with a PartialError when it leaves some unknown or fails.
type partialClient struct {
	mu      sync.Mutex
	calls   int
	applied map[string]int // by pk
	split   func(call int, wrs []types.WriteRequest) (unprocessed, unknown []types.WriteRequest, applied bool, err error)
}

func (c *partialClient) BatchWriteItem(_ context.Context, in *dynamodb.BatchWriteItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.BatchWriteItemOutput, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls++
	wrs := in.RequestItems["t"]
	unprocessed, unknown, apply, err := c.split(c.calls, wrs)
	for _, wr := range wrs {
		in := func(l []types.WriteRequest) bool {
			for _, x := range l {
				if x.PutRequest == wr.PutRequest {
					return true
				}
			}
			return false
		}
		if !in(unprocessed) && (!in(unknown) || apply) {
			c.applied[pkOf(wr)]++
		}
	}
	if len(unknown) == 0 && err == nil {
		return &dynamodb.BatchWriteItemOutput{UnprocessedItems: map[string][]types.WriteRequest{"t": unprocessed}}, nil
	}
	pe := &PartialError{Unprocessed: map[string][]types.WriteRequest{"t": unprocessed}, Err: err}
	if len(unknown) > 0 {
		pe.Unknown, pe.Abandoned = map[string][]types.WriteRequest{"t": unknown}, errLate
	}
	return nil, pe
}

func pkOf(wr types.WriteRequest) string {
	return wr.PutRequest.Item["pk"].(*types.AttributeValueMemberS).Value
}

func writePartial(t *testing.T, c *partialClient, ws []Write, fns ...func(*Options)) (Stats, error) {
	t.Helper()
	c.applied = map[string]int{}
	opts := append([]func(*Options){keyAttrs("t"), noWait, func(o *Options) {
		o.ClientObserves = true
		o.MaxConcurrency = 2
	}}, fns...)
	return WriteAll(context.Background(), c, ws, opts...)
}

func TestPartialAbandonedSentAgain(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	ws := puts([]string{"t"}, 60)
	c := &partialClient{split: func(call int, wrs []types.WriteRequest) ([]types.WriteRequest, []types.WriteRequest, bool, error) {
		if call <= 3 {
			return nil, wrs, false, nil // abandoned, not applied
		}
		return nil, nil, false, nil
	}}
	st, err := writePartial(t, c, ws, func(o *Options) { o.RetryBudget = -1 }) // no retry allowed: none is needed
	if err != nil {
		t.Fatalf("WriteAll: %v", err)
	}
	if st.Done != len(ws) || st.Retries != 0 || st.UnprocessedRounds != 0 || st.Abandoned < 3*MaxWritesPerRequest-10 {
		t.Errorf("stats %+v; want %d done, no retry or unprocessed round, three requests' entries abandoned", st, len(ws))
	}
	for _, w := range ws {
		if n := c.applied[w.Put["pk"].(*types.AttributeValueMemberS).Value]; n != 1 {
			t.Errorf("%v applied %d times, want 1", w.Put["pk"], n)
		}
	}
}

func TestPartialAbandonedGivesUp(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	for _, tc := range []struct {
		name      string
		throttled bool // every other request throttled too
	}{{"abandoned only", false}, {"abandoned and throttled", true}} {
		t.Run(tc.name, func(t *testing.T) {
			ws := puts([]string{"t"}, 40)
			c := &partialClient{split: func(call int, wrs []types.WriteRequest) ([]types.WriteRequest, []types.WriteRequest, bool, error) {
				if tc.throttled && call%2 == 0 {
					return wrs, nil, false, &smithy.GenericAPIError{Code: "ThrottlingException"}
				}
				return nil, wrs, call%3 == 0, nil // some abandoned requests were applied
			}}
			st, err := writePartial(t, c, ws, func(o *Options) { o.StallTimeout = 50 * time.Millisecond })
			var ue *UnprocessedError
			if !errors.As(err, &ue) || !errors.Is(err, errLate) || errors.Is(err, ErrStalled) != tc.throttled {
				t.Fatalf("WriteAll: %v; want *UnprocessedError wrapping the abandon cause, and ErrStalled only if throttled", err)
			}
			if st.Done != 0 || len(ue.Writes) != len(ws) || st.Retries != 0 && !tc.throttled {
				t.Errorf("stats %+v, %d listed; want nothing done, everything listed, no retry unless throttled", st, len(ue.Writes))
			}
			// Every listed write was sent in an abandoned request.
			for i, w := range ue.Writes {
				if ue.MaybeDone == nil || !ue.MaybeDone[i] {
					t.Errorf("%v: not MaybeDone, though its request was abandoned", w.Put["pk"])
				}
			}
		})
	}
}

// TestPartialFails: a PartialError with an error that ends the call: the
// entries it settled are done, the unprocessed ones are listed, and the
// unknown ones are listed as MaybeDone.
func TestPartialFails(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	ws := puts([]string{"t"}, 25)
	c := &partialClient{split: func(call int, wrs []types.WriteRequest) ([]types.WriteRequest, []types.WriteRequest, bool, error) {
		return wrs[10:20], wrs[20:], true, &smithy.GenericAPIError{Code: "ValidationException"}
	}}
	st, err := writePartial(t, c, ws, func(o *Options) { o.MaxConcurrency = 1 })
	var ue *UnprocessedError
	var ae smithy.APIError
	if !errors.As(err, &ue) || !errors.As(err, &ae) || ae.ErrorCode() != "ValidationException" {
		t.Fatalf("WriteAll: %v; want *UnprocessedError wrapping the client's error", err)
	}
	if st.Done != 10 {
		t.Errorf("Done %d, want 10", st.Done)
	}
	want := make([]bool, 15)
	for i := 10; i < 15; i++ {
		want[i] = true
	}
	if diff := cmp.Diff(pks(ws[10:]), pks(ue.Writes)); diff != "" {
		t.Errorf("listed writes (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want, ue.MaybeDone); diff != "" {
		t.Errorf("MaybeDone (-want +got):\n%s", diff)
	}
}
