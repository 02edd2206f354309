package scatter_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"go.uber.org/goleak"

	"github.com/dynashard/dynashard/internal/ddbtest"
	"github.com/dynashard/dynashard/scatter"
	"github.com/dynashard/dynashard/shard"
)

// errPanic is what the panicking clients and loop bodies of
// TestNoPanicEscapes panic with.
var errPanic = errors.New("scatter test: deliberate panic")

// nilStrategy is a user's Strategy with pointer methods: a nil one in a
// Layout is the typed-nil input.
type nilStrategy struct{ n int }

func (s *nilStrategy) N() int          { return s.n }
func (s *nilStrategy) Pick(string) int { return 1 }

// TestNoPanicEscapes (issue 20, item 5): every call of a Scatter, driven
// with a client that panics on the operation the call depends on, a loop
// body that panics, or a nil or typed-nil input, either returns an error
// (for bad input one matching ErrInvalid, before any request) or panics in
// the caller's goroutine, where recover works, once every request
// goroutine has ended. Nothing panics on a goroutine of the package's,
// which would end the process.
func TestNoPanicEscapes(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, s *ddbtest.Server) {
		ctx := context.Background()
		good, goodTr := testClient(s.Endpoint)
		l := validLayout
		l.Table = s.Table(t, "pk:S", "sk:S")
		var items []map[string]types.AttributeValue
		for i := range 40 {
			id := fmt.Sprintf("i%02d", i)
			items = append(items, map[string]types.AttributeValue{"pk": sv(shard.Key("b", 1+i%4)), "sk": sv(id)})
		}
		putAll(t, good, l.Table, items)
		unchecked := l
		unchecked.Unchecked = true // no GetItem of the record: the first request is a Query
		typedNil := l
		typedNil.Strategy = shard.Strategy((*nilStrategy)(nil))
		counted, sent := countingClient(s.Endpoint)
		var transports []*http.Transport
		// panicsOn is a Scatter over l whose client panics on the
		// operations ops (every operation if none).
		panicsOn := func(l shard.Layout, ops ...string) *scatter.Scatter {
			c, tr := testClient(s.Endpoint, ddbtest.PanicOn(errPanic, ops...))
			transports = append(transports, tr)
			return newScatter(t, c, l)
		}
		all := func(sc *scatter.Scatter, optFns ...func(*scatter.Options)) func() error {
			return func() error {
				for _, err := range sc.All(ctx, "b", optFns...) {
					if err != nil {
						return err
					}
				}
				return nil
			}
		}
		page := func(sc *scatter.Scatter, optFns ...func(*scatter.Options)) func() error {
			return func() error { _, _, err := sc.Page(ctx, "b", 25, "", optFns...); return err }
		}
		count := func(sc *scatter.Scatter, optFns ...func(*scatter.Options)) func() error {
			return func() error { _, err := sc.Count(ctx, "b", optFns...); return err }
		}
		lookup := func(sc *scatter.Scatter) func() error {
			return func() error { _, err := sc.Lookup(ctx, "b", sv("i07")); return err }
		}
		unordered := func(o *scatter.Options) { o.Unordered = true }
		partial := func(o *scatter.Options) { o.Partial = true }
		onePerPage := func(o *scatter.Options) { o.PageSize = 1 }
		goodSc := newScatter(t, good, l)
		var nilCtx context.Context
		ignore := goleak.IgnoreCurrent()
		for _, tc := range []struct {
			name string
			// want is errPanic for a panic with it in this goroutine, and
			// otherwise an error matching it before any request.
			want error
			call func() error
		}{
			// A client that panics on the request the call depends on.
			{"All, Query panics", errPanic, all(panicsOn(unchecked, "Query"))},
			{"All unordered, Query panics", errPanic, all(panicsOn(unchecked, "Query"), unordered)},
			{"Page, Query panics", errPanic, page(panicsOn(unchecked, "Query"))},
			{"Count, Query panics", errPanic, count(panicsOn(unchecked, "Query"))},
			{"Count partial, Query panics", errPanic, count(panicsOn(unchecked, "Query"), partial)},
			{"Lookup, BatchGetItem panics", errPanic, lookup(panicsOn(unchecked, "BatchGetItem"))},
			{"All, layout check panics", errPanic, all(panicsOn(l, "GetItem"))},
			{"Page, layout check panics", errPanic, page(panicsOn(l, "GetItem"))},
			{"Count, layout check panics", errPanic, count(panicsOn(l, "GetItem"))},
			{"Lookup, layout check panics", errPanic, lookup(panicsOn(l, "GetItem"))},
			// A loop body that panics while requests are in flight.
			{"All, loop body panics", errPanic, func() error {
				for range goodSc.All(ctx, "b", onePerPage) {
					panic(errPanic)
				}
				return nil
			}},
			{"All unordered, loop body panics", errPanic, func() error {
				for range goodSc.All(ctx, "b", onePerPage, unordered) {
					panic(errPanic)
				}
				return nil
			}},
			// A nil or typed-nil input.
			{"New, typed-nil Strategy", shard.ErrInvalidStrategy, func() error { _, err := scatter.New(counted, typedNil); return err }},
			{"New, nil client", scatter.ErrInvalid, func() error { _, err := scatter.New(nil, l); return err }},
			{"New, typed-nil client", scatter.ErrInvalid, func() error { _, err := scatter.New((*dynamodb.Client)(nil), l); return err }},
			{"zero Scatter Count", scatter.ErrInvalid, count(&scatter.Scatter{})},
			{"nil ctx Page", scatter.ErrInvalid, func() error { _, _, err := goodSc.Page(nilCtx, "b", 25, ""); return err }},
		} {
			t.Run(tc.name, func(t *testing.T) {
				sent.reset()
				ddbtest.NoEscape(t, tc.call, errPanic, tc.want, scatter.ErrInvalid, func() int { return int(sent.total()) })
			})
		}
		goodTr.CloseIdleConnections()
		for _, tr := range transports {
			tr.CloseIdleConnections()
		}
		goleak.VerifyNone(t, ignore)
	})
}
