package shard_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/dynashard/dynashard/dynashardtest/faultproxy"
	"github.com/dynashard/dynashard/internal/ddbtest"
	"github.com/dynashard/dynashard/shard"
)

// TestLoadSurvivesOutage: an outage of 100 % UnprocessedItems lasting 2 s
// or 5 s is ridden out with the default settings at concurrency 1, 8 and
// 32, and every item is stored.
func TestLoadSurvivesOutage(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, s *ddbtest.Server) {
		for _, outage := range []time.Duration{2 * time.Second, 5 * time.Second} {
			for _, conc := range []int{1, 8, 32} {
				t.Run(fmt.Sprintf("%v at concurrency %d", outage, conc), func(t *testing.T) {
					t.Parallel()
					c, p := proxied(t, s, faultproxy.Config{UnprocessedRate: 1, Ops: []string{"BatchWriteItem"}})
					name := s.Table(t, "pk:S", "sk:S")
					st := shard.Hash(20)
					tbl := newOrders(t, c, name, st)
					in := sortedOrders(15, 100)
					// The outage lasts from the first unprocessed response, not from
					// now: on a loaded machine the Load may take a while to send.
					stop := make(chan struct{})
					ended := make(chan struct{})
					go func() {
						defer close(ended)
						for p.Stats().Total.Unprocessed == 0 {
							select {
							case <-stop:
								return
							case <-time.After(5 * time.Millisecond):
							}
						}
						select {
						case <-stop:
						case <-time.After(outage):
							_ = p.Set(faultproxy.Config{})
						}
					}()
					defer func() { close(stop); <-ended }()
					stats, err := tbl.Load(context.Background(), seq2(in), func(o *shard.LoadOptions) {
						o.MaxConcurrency = conc
						o.StallTimeout = time.Minute // the outage, not the stall limit (TestLoadStalls), is tested here
					})
					if err != nil {
						t.Fatalf("Load: %v", err)
					}
					if stats.Written != len(in) {
						t.Errorf("Written %d, want %d", stats.Written, len(in))
					}
					if p.Stats().Total.Unprocessed == 0 {
						t.Error("the proxy returned no UnprocessedItems: no outage was seen")
					}
					if diff := cmp.Diff(stored(st, in), scanAll(t, s.Client(), name)); diff != "" {
						t.Errorf("table contents (-want +got):\n%s", diff)
					}
				})
			}
		}
	})
}

// TestLoadStalls: a permanent outage ends in ErrStalled after StallTimeout,
// with every item read and not written reported.
func TestLoadStalls(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, s *ddbtest.Server) {
		c, _ := proxied(t, s, faultproxy.Config{UnprocessedRate: 1, Ops: []string{"BatchWriteItem"}})
		name := s.Table(t, "pk:S", "sk:S")
		st := shard.Hash(20)
		tbl := steadyOrders(t, c, name, st)
		in := sortedOrders(10, 50)
		stats, err := tbl.Load(context.Background(), seq2(in), func(o *shard.LoadOptions) {
			o.MaxConcurrency = 32
			o.StallTimeout = time.Second
		})
		var le *shard.LoadError[Order]
		if !errors.As(err, &le) || !errors.Is(err, shard.ErrStalled) {
			t.Fatalf("Load: %v, want *LoadError with ErrStalled", err)
		}
		if stats.Written != 0 || len(le.Failed) != stats.Read {
			t.Errorf("Written %d, failed %d of %d read: want nothing written and everything read reported", stats.Written, len(le.Failed), stats.Read)
		}
		checkExactFailures(t, st, in, stats.Read, le, scanAll(t, s.Client(), name))
	})
}

// TestLoadRepeatedIDs: ids repeated in a row are written in full requests
// (reading goes on while a duplicate waits), the last value winning.
func TestLoadRepeatedIDs(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, s *ddbtest.Server) {
		c := s.Client()
		name := s.Table(t, "pk:S", "sk:S")
		st := shard.Hash(4)
		tbl := newOrders(t, c, name, st)
		var in []pair
		for i := range 300 {
			for r := range 3 {
				in = append(in, pair{"day", Order{ID: fmt.Sprintf("ORD-%05d", i), Amount: r}})
			}
		}
		stats, err := tbl.Load(context.Background(), seq2(in))
		if err != nil {
			t.Fatal(err)
		}
		// 900 writes fit 36 requests; one request per duplicate would be
		// hundreds.
		if stats.Requests > 72 {
			t.Errorf("%d requests for %d writes, want at most 72", stats.Requests, len(in))
		}
		if diff := cmp.Diff(stored(st, in), scanAll(t, c, name)); diff != "" {
			t.Errorf("table contents (-want +got):\n%s", diff)
		}
	})
}

// TestLoadBadInput: a nil ctx or sequence is an error before any request;
// a panicking sequence panics in the caller's goroutine.
func TestLoadBadInput(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, s *ddbtest.Server) {
		c, p := proxied(t, s, faultproxy.Config{})
		tbl := newOrders(t, c, s.Table(t, "pk:S", "sk:S"), shard.Hash(4))
		//lint:ignore SA1012 a nil ctx is the input under test
		if _, err := tbl.Load(nil, seq2(sortedOrders(1, 1))); !errors.Is(err, shard.ErrInvalid) { //nolint:staticcheck
			t.Errorf("nil ctx: got %v, want ErrInvalid", err)
		}
		if _, err := tbl.Load(context.Background(), nil); !errors.Is(err, shard.ErrInvalid) {
			t.Errorf("nil items: got %v, want ErrInvalid", err)
		}
		if n := p.Stats().Total.Requests; n != 0 {
			t.Errorf("%d requests for bad input, want 0", n)
		}
		panicking := func(yield func(string, Order) bool) {
			for _, p := range sortedOrders(2, 60) {
				if !yield(p.base, p.item) {
					return
				}
			}
			panic("input broke")
		}
		got := func() (v any) {
			defer func() { v = recover() }()
			_, _ = tbl.Load(context.Background(), panicking)
			return nil
		}()
		if got != "input broke" {
			t.Errorf("recovered %v, want the sequence's panic value", got)
		}
	})
}
