package scatter_test

import (
	"context"
	"errors"
	"testing"

	"github.com/dynashard/dynashard/dynashardtest/faultproxy"
	"github.com/dynashard/dynashard/internal/ddbtest"
	"github.com/dynashard/dynashard/scatter"
)

// TestRecordReadAhead: a call that finds the cached layout record past half
// its HistoryTTL reads it again beside its Queries and does not depend on
// that read. With every GetItem failing at the proxy, All, Page, Count and
// Lookup still return every item, each having sent one GetItem (retried by
// the SDK) besides its Queries; a client that panics on GetItem panics in
// the caller's goroutine, after the call's requests ended.
func TestRecordReadAhead(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, s *ddbtest.Server) {
		ctx := context.Background()
		l, ids := recordedTable(t, s)
		items := len(ids)
		p, err := faultproxy.New(s.Endpoint, faultproxy.Config{})
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		c, sent := countingClient(p.URL())
		sc := newScatter(t, c, l)
		// The history cache is per database, and the proxy is an endpoint
		// of its own: a first call through it caches the record. Every
		// call then finds it due, and its read fails.
		if n, err := sc.Count(ctx, "day"); err != nil || n != int64(items) {
			t.Fatalf("Count through the proxy: %d, %v", n, err)
		}
		scatter.RecordAlwaysDue(t)
		if err := p.Set(faultproxy.Config{ErrorRate: 1, Ops: []string{"GetItem"}}); err != nil {
			t.Fatal(err)
		}
		calls := []struct {
			name string
			want int
			run  func() (int, error)
		}{
			{"All", items, func() (n int, err error) {
				for _, err := range sc.All(ctx, "day") {
					if err != nil {
						return n, err
					}
					n++
				}
				return n, nil
			}},
			{"Page", items, func() (int, error) { got, _, err := sc.Page(ctx, "day", items, ""); return len(got), err }},
			{"Count", items, func() (int, error) { n, err := sc.Count(ctx, "day"); return int(n), err }},
			{"Lookup", 1, func() (int, error) { got, err := sc.Lookup(ctx, "day", sv(ids[3])); return len(got), err }},
		}
		for _, call := range calls {
			before := sent.of("GetItem")
			n, err := call.run()
			if err != nil || n != call.want {
				t.Errorf("%s with the record's read failing: %d items, %v; want %d", call.name, n, err, call.want)
			}
			if got := sent.of("GetItem") - before; got != 1 {
				t.Errorf("%s sent %d GetItem requests, want 1 (the read ahead; fastRetries(1) makes one attempt)", call.name, got)
			}
		}

		panicky, _ := testClient(s.Endpoint, ddbtest.PanicOn(errPanic, "GetItem"))
		psc := newScatter(t, panicky, l)
		for _, call := range []struct {
			name string
			run  func()
		}{
			{"All", func() {
				for range psc.All(ctx, "day") {
				}
			}},
			{"Page", func() { _, _, _ = psc.Page(ctx, "day", 3, "") }},
			{"Count", func() { _, _ = psc.Count(ctx, "day") }},
			{"Lookup", func() { _, _ = psc.Lookup(ctx, "day", sv(ids[3])) }},
		} {
			func() {
				defer func() {
					if err, _ := recover().(error); !errors.Is(err, errPanic) {
						t.Errorf("%s with a client panicking on GetItem: recovered %v, want the client's panic", call.name, err)
					}
				}()
				call.run()
			}()
		}
	})
}
