package shard_test

import (
	"context"
	"errors"
	"hash/crc32"
	"testing"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/dynashard/dynashard/internal/ddbtest"
	"github.com/dynashard/dynashard/shard"
)

// errPanic is what the panicking clients, callbacks and sequences of
// TestNoPanicEscapes panic with.
var errPanic = errors.New("shard test: deliberate panic")

// ptrStrategy is a user's Strategy with pointer methods: a nil one in a
// Layout is the typed-nil input.
type ptrStrategy struct{ n int }

func (s *ptrStrategy) N() int { return s.n }
func (s *ptrStrategy) Pick(id string) int {
	return 1 + int(crc32.ChecksumIEEE([]byte(id))%uint32(s.n))
}

// nilResizer is a Resizable whose WithN returns a typed-nil Strategy.
type nilResizer struct{ shard.Strategy }

func (nilResizer) WithN(int) shard.Strategy { return (*ptrStrategy)(nil) }

// TestNoPanicEscapes (issue 20, item 5): every public entry point, driven
// with a client that panics on the operation the call depends on, a
// panicking callback or sequence, or a nil or typed-nil input, either
// returns an error (for bad input one matching ErrInvalid, before any
// request) or panics in the caller's goroutine, where recover works.
// Nothing panics on a goroutine of the package's, which would end the
// process.
func TestNoPanicEscapes(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, s *ddbtest.Server) {
		ctx := context.Background()
		table := s.Table(t, "pk:S", "sk:S")
		l := layoutOf(table, shard.Hash(4))
		good := newOrders(t, s.Client(), table, shard.Hash(4))
		if err := good.Put(ctx, "day", Order{ID: "o1", Amount: 1}); err != nil {
			t.Fatal(err)
		}
		counted, sent := countingClient(s)
		// panicsOn is a Table whose client panics on the operations ops
		// (every operation if none).
		panicsOn := func(ops ...string) *shard.Table[Order] {
			return newOrders(t, s.Client(ddbtest.PanicOn(errPanic, ops...)), table, shard.Hash(4))
		}
		panicky := s.Client(ddbtest.PanicOn(errPanic))
		typedNil := l
		typedNil.Strategy = shard.Strategy((*ptrStrategy)(nil))
		badResize := l
		badResize.Strategy = nilResizer{shard.Hash(4)}
		items := seq2(sortedOrders(2, 30))
		panickingItems := func(yield func(string, Order) bool) {
			if yield("day", Order{ID: "o2"}) {
				panic(errPanic)
			}
		}
		onProgress := func(o *shard.LoadOptions) { o.OnProgress = func(shard.LoadProgress) { panic(errPanic) } }
		update := expression.Set(expression.Name("amount"), expression.Value(2))
		var (
			zero     shard.Table[Order]
			nilTable *shard.Table[Order]
			nilCtx   context.Context
		)
		for _, tc := range []struct {
			name string
			// want is errPanic for a panic with it in this goroutine, nil
			// for success, and otherwise an error matching it before any
			// request.
			want error
			call func() error
		}{
			// A client that panics on the request the call depends on.
			{"Put, PutItem panics", errPanic, func() error { return panicsOn("PutItem").Put(ctx, "day", Order{ID: "o3"}) }},
			{"Get, GetItem panics", errPanic, func() error { _, err := panicsOn("GetItem").Get(ctx, "day", "o1"); return err }},
			{"Update, UpdateItem panics", errPanic, func() error {
				_, err := panicsOn("UpdateItem").Update(ctx, "day", "o1", update)
				return err
			}},
			{"Delete, DeleteItem panics", errPanic, func() error { return panicsOn("DeleteItem").Delete(ctx, "day", "o1") }},
			{"Load, BatchWriteItem panics", errPanic, func() error { _, err := panicsOn("BatchWriteItem").Load(ctx, items); return err }},
			{"Load, every request panics", errPanic, func() error { _, err := panicsOn().Load(ctx, items); return err }},
			{"Shards, client panics", errPanic, func() error { _, err := panicsOn().Shards(ctx, "fresh1"); return err }},
			{"Reshard, client panics", errPanic, func() error { _, err := panicsOn().Reshard(ctx, "fresh2", 8); return err }},
			{"Table.Rebalance, client panics", errPanic, func() error { _, err := panicsOn().Rebalance(ctx, "day"); return err }},
			{"Layout.Record, client panics", errPanic, func() error { return l.Record(ctx, panicky, "fresh3") }},
			{"Layout.Verify, client panics", errPanic, func() error { return l.Verify(ctx, panicky, "fresh4") }},
			{"Rebalance, client panics", errPanic, func() error { _, err := shard.Rebalance(ctx, panicky, l, "day"); return err }},
			// A panicking callback or sequence.
			{"Load, OnProgress panics", errPanic, func() error { _, err := good.Load(ctx, items, onProgress); return err }},
			{"Load, items panics", errPanic, func() error { _, err := good.Load(ctx, panickingItems); return err }},
			// A typed-nil Strategy.
			{"NewTable, typed-nil Strategy", shard.ErrInvalidStrategy, func() error { _, err := shard.NewTable[Order](counted, typedNil); return err }},
			{"Validate, typed-nil Strategy", shard.ErrInvalidStrategy, typedNil.Validate},
			{"CreateTableInput, typed-nil Strategy", shard.ErrInvalidStrategy, func() error { _, err := typedNil.CreateTableInput(); return err }},
			{"Layout.Reshard, typed-nil Strategy", shard.ErrInvalidStrategy, func() error { _, err := typedNil.Reshard(ctx, counted, "day", 8); return err }},
			{"Rebalance, typed-nil Strategy", shard.ErrInvalidStrategy, func() error { _, err := shard.Rebalance(ctx, counted, typedNil, "day"); return err }},
			{"Layout.Reshard, WithN returns a typed nil", shard.ErrInvalidStrategy, func() error { _, err := badResize.Reshard(ctx, counted, "day", 8); return err }},
			// A nil or typed-nil client, context or sequence.
			{"NewTable, nil client", shard.ErrInvalid, func() error { _, err := shard.NewTable[Order](nil, l); return err }},
			{"NewTable, typed-nil client", shard.ErrInvalid, func() error { _, err := shard.NewTable[Order]((*dynamodb.Client)(nil), l); return err }},
			{"Layout.Record, typed-nil client", shard.ErrInvalid, func() error { return l.Record(ctx, (*dynamodb.Client)(nil), "day") }},
			{"Rebalance, typed-nil client", shard.ErrInvalid, func() error { _, err := shard.Rebalance(ctx, (*dynamodb.Client)(nil), l, "day"); return err }},
			{"Put, nil ctx", shard.ErrInvalid, func() error { return good.Put(nilCtx, "day", Order{ID: "o4"}) }},
			{"Get, nil ctx", shard.ErrInvalid, func() error { _, err := good.Get(nilCtx, "day", "o1"); return err }},
			{"Load, nil items", shard.ErrInvalid, func() error { _, err := good.Load(ctx, nil); return err }},
			// A Table not made by NewTable.
			{"zero Table Put", shard.ErrInvalid, func() error { return zero.Put(ctx, "day", Order{ID: "o5"}) }},
			{"zero Table Get", shard.ErrInvalid, func() error { _, err := zero.Get(ctx, "day", "o1"); return err }},
			{"zero Table Update", shard.ErrInvalid, func() error { _, err := zero.Update(ctx, "day", "o1", update); return err }},
			{"zero Table Delete", shard.ErrInvalid, func() error { return zero.Delete(ctx, "day", "o1") }},
			{"zero Table Key", shard.ErrInvalid, func() error { _, err := zero.Key("day", "o1"); return err }},
			{"zero Table Load", shard.ErrInvalid, func() error { _, err := zero.Load(ctx, items); return err }},
			{"zero Table Shards", shard.ErrInvalid, func() error { _, err := zero.Shards(ctx, "day"); return err }},
			{"zero Table Reshard", shard.ErrInvalid, func() error { _, err := zero.Reshard(ctx, "day", 8); return err }},
			{"zero Table Rebalance", shard.ErrInvalid, func() error { _, err := zero.Rebalance(ctx, "day"); return err }},
			{"nil Table Put", shard.ErrInvalid, func() error { return nilTable.Put(ctx, "day", Order{ID: "o5"}) }},
			{"nil Table Get", shard.ErrInvalid, func() error { _, err := nilTable.Get(ctx, "day", "o1"); return err }},
			{"nil Table Key", shard.ErrInvalid, func() error { _, err := nilTable.Key("day", "o1"); return err }},
			{"nil Table Load", shard.ErrInvalid, func() error { _, err := nilTable.Load(ctx, items); return err }},
			{"nil Table Shards", shard.ErrInvalid, func() error { _, err := nilTable.Shards(ctx, "day"); return err }},
			{"nil Table Reshard", shard.ErrInvalid, func() error { _, err := nilTable.Reshard(ctx, "day", 8); return err }},
			// A nil option function is skipped, as in every package.
			{"NewTable, nil option", nil, func() error { _, err := shard.NewTable[Order](counted, l, nil); return err }},
			{"Put, nil option", nil, func() error { return good.Put(ctx, "day", Order{ID: "o6"}, nil) }},
			{"Load, nil option", nil, func() error { _, err := good.Load(ctx, seq2(sortedOrders(1, 2)), nil); return err }},
			{"Rebalance, nil option", nil, func() error { _, err := shard.Rebalance(ctx, counted, l, "fresh5", nil); return err }},
			{"NewGrower, nil option", nil, func() error { _, err := shard.NewGrower(nil); return err }},
		} {
			t.Run(tc.name, func(t *testing.T) {
				sent.Store(0)
				ddbtest.NoEscape(t, tc.call, errPanic, tc.want, shard.ErrInvalid, func() int { return int(sent.Load()) })
			})
		}
	})
}
