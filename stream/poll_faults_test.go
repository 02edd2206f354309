package stream_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
	"github.com/google/go-cmp/cmp"

	"github.com/dynashard/dynashard/dynashardtest/faultproxy"
	"github.com/dynashard/dynashard/internal/ddbtest"
	"github.com/dynashard/dynashard/internal/localddb"
	"github.com/dynashard/dynashard/stream"
)

// ager makes DynamoDB Local answer ExpiredIteratorException, for real:
// every every-th GetRecords goes with its iterator's creation time moved
// 16 minutes back. DynamoDB Local 1.25.1's iterator is "<stream
// ARN>|001|" and the base64 of "<shard ID>|<sequence number>|<creation
// time in ms>"; an iterator of another shape fails the test.
type ager struct {
	t     *testing.T
	next  http.RoundTripper
	every int

	mu      sync.Mutex
	n, aged int
}

func (a *ager) RoundTrip(r *http.Request) (*http.Response, error) {
	if !strings.HasSuffix(r.Header.Get("X-Amz-Target"), ".GetRecords") {
		return a.next.RoundTrip(r)
	}
	a.mu.Lock()
	a.n++
	age := a.n%a.every == 0
	a.mu.Unlock()
	if !age {
		return a.next.RoundTrip(r)
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return nil, err
	}
	r.Body.Close()
	var in map[string]any
	if err := json.Unmarshal(body, &in); err != nil {
		return nil, err
	}
	it, err := ageIterator(fmt.Sprint(in["ShardIterator"]), 16*time.Minute)
	if err != nil {
		a.t.Errorf("ager: %v", err)
		return nil, err
	}
	in["ShardIterator"] = it
	if body, err = json.Marshal(in); err != nil {
		return nil, err
	}
	r = r.Clone(r.Context())
	r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
	r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	a.mu.Lock()
	a.aged++
	a.mu.Unlock()
	return a.next.RoundTrip(r)
}

func ageIterator(it string, by time.Duration) (string, error) {
	i := strings.LastIndexByte(it, '|')
	raw, err := base64.StdEncoding.DecodeString(it[i+1:])
	parts := strings.Split(string(raw), "|")
	if i < 0 || err != nil || len(parts) != 3 {
		return "", fmt.Errorf("iterator %.120q is not DynamoDB Local 1.25.1's", it)
	}
	ms, err := strconv.ParseInt(parts[2], 10, 64)
	if err != nil {
		return "", fmt.Errorf("iterator %.120q: creation time %q: %v", it, parts[2], err)
	}
	parts[2] = fmt.Sprintf("%0*d", len(parts[2]), ms-by.Milliseconds())
	return it[:i+1] + base64.StdEncoding.EncodeToString([]byte(strings.Join(parts, "|"))), nil
}

// TestFaults reads through a fault proxy that throttles, fails with 500s,
// resets and cuts off a fifth of the Streams requests, while every third
// GetRecords meets an expired iterator: every record comes once, in order.
func TestFaults(t *testing.T) {
	eachStreams(t, func(t *testing.T, s *ddbtest.Server) {
		table, arn := streamTable(t, s)
		w := newWriter(s.Client(), table, 5)
		w.write(t, 50)
		proxy, err := faultproxy.New(s.Endpoint, faultproxy.Config{
			ThrottleRate: 0.05, ErrorRate: 0.05, ErrorAfterRate: 0.03,
			ResetBeforeRate: 0.03, ResetAfterRate: 0.02, TruncateRate: 0.02,
			Ops:  []string{"DescribeStream", "GetShardIterator", "GetRecords"},
			Seed: 1,
		})
		if err != nil {
			t.Fatal(err)
		}
		defer proxy.Close()
		a := &ager{t: t, every: 3}
		sc, _ := streamsClient(t, localddb.NewClient(proxy.URL()),
			wrapTransport(func(next http.RoundTripper) http.RoundTripper { a.next = next; return a }))
		p, err := stream.NewPoller(sc, arn, fast, func(o *stream.PollerOptions) { o.Limit = 4 })
		if err != nil {
			t.Fatal(err)
		}
		col := caughtUp(t, p)
		if diff := cmp.Diff(w.want, col.changes()); diff != "" {
			t.Errorf("changes (-want +got):\n%s", diff)
		}
		st := proxy.Stats().Total
		faults := st.Throttled + st.Errors + st.ErrorsAfter + st.ResetsBefore + st.ResetsAfter + st.Truncated
		t.Logf("%d requests, %d faults (%+v), %d expired iterators", st.Requests, faults, st, a.aged)
		if faults == 0 || a.aged == 0 {
			t.Errorf("%d faults and %d expired iterators met, want some of each", faults, a.aged)
		}
	})
}

// trimmer answers every GetShardIterator after a sequence number with
// TrimmedDataAccessException, as DynamoDB does for a sequence number
// older than 24 hours, which DynamoDB Local cannot be made to do.
type trimmer struct{ next http.RoundTripper }

func (tr trimmer) RoundTrip(r *http.Request) (*http.Response, error) {
	if strings.HasSuffix(r.Header.Get("X-Amz-Target"), ".GetShardIterator") {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			return nil, err
		}
		r.Body.Close()
		if bytes.Contains(body, []byte("AFTER_SEQUENCE_NUMBER")) {
			const answer = `{"__type":"com.amazonaws.dynamodb.v20120810#TrimmedDataAccessException","message":"trimmed"}`
			return &http.Response{
				StatusCode: http.StatusBadRequest, Status: "400 Bad Request", Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
				Header:        http.Header{"Content-Type": {"application/x-amz-json-1.0"}},
				Body:          io.NopCloser(strings.NewReader(answer)),
				ContentLength: int64(len(answer)), Request: r,
			}, nil
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
	}
	return tr.next.RoundTrip(r)
}

// TestTrimmed resumes from checkpoints whose records are gone: a shard no
// longer listed, and a sequence number DynamoDB calls trimmed. Each fails
// with ErrTrimmed; with SkipTrimmed, Poll goes on and reads what is left,
// each record once.
func TestTrimmed(t *testing.T) {
	eachStreams(t, func(t *testing.T, s *ddbtest.Server) {
		table, arn := streamTable(t, s)
		w := newWriter(s.Client(), table, 6)
		w.write(t, 20)
		sc, _ := streamsClient(t, s.Client())
		gone := "shardId-00000000000000000001-00000000"
		for _, tc := range []struct {
			name string
			pos  string
			want error
		}{
			{"unlisted unfinished shard", `{"after":"000000000000000000001"}`, stream.ErrTrimmed},
			{"unlisted finished shard", `{"finished":true}`, nil},
		} {
			t.Run(tc.name, func(t *testing.T) {
				cp, err := stream.ParseCheckpoint(fmt.Sprintf(`{"v":1,"stream":%q,"shards":{%q:%s}}`, arn, gone, tc.pos))
				if err != nil {
					t.Fatal(err)
				}
				for _, skip := range []bool{false, true} {
					p, err := stream.NewPoller(sc, arn, fast, func(o *stream.PollerOptions) { o.Checkpoint, o.SkipTrimmed = cp, skip })
					if err != nil {
						t.Fatal(err)
					}
					col := &collector{t: t}
					err = p.Poll(context.Background(), col.fn)
					if want := tc.want; !errors.Is(err, want) && !(skip && err == nil) {
						t.Fatalf("SkipTrimmed %v: got %v, want %v", skip, err, want)
					}
					if err != nil {
						continue
					}
					if diff := cmp.Diff(w.want, col.changes()); diff != "" {
						t.Errorf("SkipTrimmed %v: changes (-want +got):\n%s", skip, diff)
					}
					if pos := position(p.Checkpoint(), gone); pos != (stream.ShardPosition{}) {
						t.Errorf("checkpoint keeps the unlisted shard: %+v", pos)
					}
				}
			})
		}
		t.Run("trimmed sequence number", func(t *testing.T) {
			first, err := stream.NewPoller(sc, arn, fast, func(o *stream.PollerOptions) { o.Limit = 5 })
			if err != nil {
				t.Fatal(err)
			}
			var got []stream.Record
			err = first.Poll(context.Background(), func(_ context.Context, b stream.Batch) error {
				if len(got) >= 10 {
					return errStop
				}
				got = append(got, b.Records...)
				return nil
			})
			if !errors.Is(err, errStop) {
				t.Fatalf("got %v, want %v", err, errStop)
			}
			trimmed, _ := streamsClient(t, s.Client(), wrapTransport(func(next http.RoundTripper) http.RoundTripper { return trimmer{next} }))
			for _, skip := range []bool{false, true} {
				p, err := stream.NewPoller(trimmed, arn, fast, func(o *stream.PollerOptions) { o.Checkpoint, o.SkipTrimmed = first.Checkpoint(), skip })
				if err != nil {
					t.Fatal(err)
				}
				col := &collector{t: t}
				err = p.Poll(context.Background(), col.fn)
				var sdk *streamtypes.TrimmedDataAccessException
				if !skip {
					if !errors.Is(err, stream.ErrTrimmed) || !errors.As(err, &sdk) {
						t.Errorf("got %v, want %v wrapping the SDK's *TrimmedDataAccessException", err, stream.ErrTrimmed)
					}
					continue
				}
				if err != nil {
					t.Fatalf("SkipTrimmed: %v", err)
				}
				// Nothing is really trimmed: TRIM_HORIZON starts at the
				// first record, and the Poller skips those it processed.
				if diff := cmp.Diff(w.want, (&collector{t: t, records: append(got, col.records...)}).changes()); diff != "" {
					t.Errorf("changes over both Polls (-want +got):\n%s", diff)
				}
			}
		})
	})
}
