package stream_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"

	"github.com/dynashard/dynashard/internal/ddbtest"
	"github.com/dynashard/dynashard/stream"
)

// TestPollWrites reads puts, updates and deletes back, each key's in the
// order written, with the images as written, in batches of at most Limit.
func TestPollWrites(t *testing.T) {
	eachStreams(t, func(t *testing.T, s *ddbtest.Server) {
		table, arn := streamTable(t, s)
		w := newWriter(s.Client(), table, 1)
		w.write(t, 60)
		sc, _ := streamsClient(t, s.Client())
		p, err := stream.NewPoller(sc, arn, fast, func(o *stream.PollerOptions) { o.Limit = 7 })
		if err != nil {
			t.Fatal(err)
		}
		col := caughtUp(t, p)
		if diff := cmp.Diff(byKey(w.want), byKey(col.changes())); diff != "" {
			t.Errorf("changes by key (-want +got):\n%s", diff)
		}
		if len(col.records) != len(w.want) {
			t.Errorf("got %d records, want %d", len(col.records), len(w.want))
		}
		if want := (len(w.want) + 6) / 7; col.batches < want {
			t.Errorf("got %d batches, want at least %d (Limit 7)", col.batches, want)
		}
		last := col.records[len(col.records)-1]
		pos := position(p.Checkpoint(), last.ShardID)
		if got, want := pos.After, aws.ToString(last.Dynamodb.SequenceNumber); got != want {
			t.Errorf("checkpoint of shard %s after %s, want %s", last.ShardID, got, want)
		}
	})
}

var errStop = errors.New("stop here")

// TestResume stops a Poll part-way, three ways, and resumes from the
// checkpoint it left: every record is processed once over both Polls.
// A function that fails has its batch handed again.
func TestResume(t *testing.T) {
	eachStreams(t, func(t *testing.T, s *ddbtest.Server) {
		table, arn := streamTable(t, s)
		w := newWriter(s.Client(), table, 2)
		w.write(t, 40)
		sc, _ := streamsClient(t, s.Client())
		for _, how := range []string{"cancel after processing", "fail", "stored batch checkpoint"} {
			t.Run(how, func(t *testing.T) {
				first, err := stream.NewPoller(sc, arn, fast, func(o *stream.PollerOptions) { o.Limit = 5 })
				if err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				var got []stream.Record
				var stored string
				err = first.Poll(ctx, func(_ context.Context, b stream.Batch) error {
					if len(got) >= 20 && how == "fail" {
						return errStop // not processed
					}
					got = append(got, b.Records...)
					stored = b.Checkpoint.String()
					if len(got) >= 20 && how != "fail" {
						cancel()
					}
					return nil
				})
				switch want := error(context.Canceled); how {
				case "fail":
					if !errors.Is(err, errStop) {
						t.Fatalf("got %v, want %v", err, errStop)
					}
				default:
					if err != want {
						t.Fatalf("got %v, want %v", err, want)
					}
				}
				if how != "stored batch checkpoint" {
					stored = first.Checkpoint().String()
				}
				cp, err := stream.ParseCheckpoint(stored)
				if err != nil {
					t.Fatal(err)
				}
				second, err := stream.NewPoller(sc, arn, fast, func(o *stream.PollerOptions) { o.Checkpoint = cp })
				if err != nil {
					t.Fatal(err)
				}
				rest := caughtUp(t, second)
				all := append(got, rest.records...)
				col := &collector{t: t, records: all}
				if diff := cmp.Diff(w.want, col.changes()); diff != "" {
					t.Errorf("changes over both Polls (-want +got):\n%s", diff)
				}
			})
		}
		t.Run("new writes after a full read", func(t *testing.T) {
			p, err := stream.NewPoller(sc, arn, fast)
			if err != nil {
				t.Fatal(err)
			}
			caughtUp(t, p)
			before := len(w.want)
			w.write(t, 5)
			if diff := cmp.Diff(w.want[before:], caughtUp(t, p).changes()); diff != "" {
				t.Errorf("second Poll of one Poller (-want +got):\n%s", diff)
			}
		})
	})
}

// TestStreamEnds disables the stream: its shard closes, Poll reads it to
// the end and returns nil without StopWhenCaughtUp, and a Poll from the
// checkpoint it left reads nothing.
func TestStreamEnds(t *testing.T) {
	eachStreams(t, func(t *testing.T, s *ddbtest.Server) {
		ctx := context.Background()
		table, arn := streamTable(t, s)
		w := newWriter(s.Client(), table, 3)
		w.write(t, 10)
		_, err := s.Client().UpdateTable(ctx, &dynamodb.UpdateTableInput{
			TableName:           aws.String(table),
			StreamSpecification: &types.StreamSpecification{StreamEnabled: aws.Bool(false)},
		})
		if err != nil {
			t.Fatal(err)
		}
		if got, err := stream.StreamARN(ctx, s.Client(), table); err != nil || got != arn {
			t.Errorf("StreamARN of the disabled stream: got %q, %v; want %q", got, err, arn)
		}
		sc, _ := streamsClient(t, s.Client())
		p, err := stream.NewPoller(sc, arn, func(o *stream.PollerOptions) { o.PollInterval = 10 * time.Millisecond })
		if err != nil {
			t.Fatal(err)
		}
		col := caughtUp(t, p)
		if diff := cmp.Diff(w.want, col.changes()); diff != "" {
			t.Errorf("changes (-want +got):\n%s", diff)
		}
		for id, pos := range p.Checkpoint().Shards() {
			if !pos.Finished {
				t.Errorf("shard %s: %+v, want finished", id, pos)
			}
		}
		again, err := stream.NewPoller(sc, arn, func(o *stream.PollerOptions) { o.Checkpoint = p.Checkpoint() })
		if err != nil {
			t.Fatal(err)
		}
		if n := len(caughtUp(t, again).records); n != 0 {
			t.Errorf("resumed at the end: %d records, want 0", n)
		}
	})
}

// TestWhileWriting polls while a writer writes, without StopWhenCaughtUp,
// and cancels once every record came; it logs how long records took to
// come.
func TestWhileWriting(t *testing.T) {
	eachStreams(t, func(t *testing.T, s *ddbtest.Server) {
		table, arn := streamTable(t, s)
		w := newWriter(s.Client(), table, 4)
		sc, _ := streamsClient(t, s.Client())
		p, err := stream.NewPoller(sc, arn, func(o *stream.PollerOptions) {
			o.PollInterval, o.MaxPollInterval = 5*time.Millisecond, 5*time.Millisecond
		})
		if err != nil {
			t.Fatal(err)
		}
		const n = 30
		written := make(chan time.Time, n)
		wrote := make(chan error, 1)
		go func() {
			for range n {
				time.Sleep(20 * time.Millisecond)
				if err := w.apply(1); err != nil {
					wrote <- err
					return
				}
				written <- time.Now()
			}
			wrote <- nil
		}()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		var got []stream.Record
		var lat []time.Duration
		err = p.Poll(ctx, func(ctx context.Context, b stream.Batch) error {
			for range b.Records {
				select {
				case at := <-written:
					lat = append(lat, time.Since(at))
				case <-ctx.Done():
					return ctx.Err()
				}
			}
			if got = append(got, b.Records...); len(got) == n {
				cancel()
			}
			return nil
		})
		if werr := <-wrote; werr != nil {
			t.Fatal(werr)
		}
		if err != context.Canceled {
			t.Fatalf("got %v, want %v", err, context.Canceled)
		}
		col := &collector{t: t, records: got}
		if diff := cmp.Diff(w.want, col.changes()); diff != "" {
			t.Errorf("changes (-want +got):\n%s", diff)
		}
		slices.Sort(lat)
		t.Logf("%d records came %v (median) to %v (slowest) after their write returned, polling every 5 ms", n, lat[n/2], lat[n-1])
	})
}

// TestCancel cancels a Poll waiting on an idle stream: it returns
// ctx.Err() at once and leaves no goroutine.
func TestCancel(t *testing.T) {
	eachStreams(t, func(t *testing.T, s *ddbtest.Server) {
		_, arn := streamTable(t, s)
		sc, tr := streamsClient(t, s.Client())
		p, err := stream.NewPoller(sc, arn, func(o *stream.PollerOptions) { o.PollInterval = time.Hour })
		if err != nil {
			t.Fatal(err)
		}
		ignore := goleak.IgnoreCurrent()
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		defer cancel()
		start := time.Now()
		err = p.Poll(ctx, func(context.Context, stream.Batch) error { return nil })
		if err != context.DeadlineExceeded {
			t.Errorf("got %v, want %v", err, context.DeadlineExceeded)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("Poll returned %v after it began, want about 500ms", d)
		}
		tr.CloseIdleConnections()
		goleak.VerifyNone(t, ignore)
	})
}
