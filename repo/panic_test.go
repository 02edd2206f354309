package repo_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/dynashard/dynashard/chunk"
	"github.com/dynashard/dynashard/internal/ddbtest"
	"github.com/dynashard/dynashard/repo"
	"github.com/dynashard/dynashard/shard"
)

// errPanic is what the panicking clients and loop bodies of
// TestNoPanicEscapes panic with.
var errPanic = errors.New("repo test: deliberate panic")

// nilStrategy is a user's Strategy with pointer methods: a nil one in a
// Layout is the typed-nil input.
type nilStrategy struct{ n int }

func (s *nilStrategy) N() int          { return s.n }
func (s *nilStrategy) Pick(string) int { return 1 }

// TestNoPanicEscapes (issue 20, item 5): every call of a Repo, driven with
// a client (its own, or its large field's store's) that panics on the
// operation the call depends on, a loop body that panics, or a nil or
// typed-nil input, either returns an error (for bad input one matching
// ErrInvalid, before any request) or panics in the caller's goroutine,
// where recover works. Nothing panics on a goroutine of the Repo's, or of
// the packages it uses, which would end the process.
func TestNoPanicEscapes(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, s *ddbtest.Server) {
		ctx := context.Background()
		l := newTable(t, s, 4)
		chunks := s.Table(t, "ChunkKey:S")
		small := func(o *chunk.Options) { o.ChunkSize, o.InlineLimit = 1000, 100 }
		store := func(c chunk.Client) *chunk.Store {
			st, err := chunk.New(c, l.Table, chunks, small)
			if err != nil {
				t.Fatal(err)
			}
			return st
		}
		good := newRepo[Reply](t, s.Client(), l, large("body", store(s.Client())))
		for i := range 6 {
			if _, err := good.Put(ctx, "b", Reply{ID: fmt.Sprint(i), Body: bytes.Repeat([]byte{byte(i)}, 5000)}); err != nil {
				t.Fatal(err)
			}
		}
		panicky := func(ops ...string) *dynamodb.Client { return s.Client(ddbtest.PanicOn(errPanic, ops...)) }
		// panicsOn is a Repo whose client panics on the operations ops
		// (every operation if none), without a large field.
		panicsOn := func(optFns ...func(*repo.Options)) func(ops ...string) *repo.Repo[Reply] {
			return func(ops ...string) *repo.Repo[Reply] { return newRepo[Reply](t, panicky(ops...), l, optFns...) }
		}
		plain := panicsOn()
		cached := panicsOn(func(o *repo.Options) { o.CacheEntries = 10 })
		// chunksPanic is a Repo whose large field's store's client panics
		// on BatchGetItem, the chunk reads (on goroutines of package
		// chunk's, under List on goroutines of the Repo's too).
		chunksPanic := newRepo[Reply](t, s.Client(), l, large("body", store(panicky("BatchGetItem"))))
		typedNil := l
		typedNil.Strategy = shard.Strategy((*nilStrategy)(nil))
		counted, sent := countingClient(s)
		get := func(r *repo.Repo[Reply]) func() error {
			return func() error { _, err := r.Get(ctx, "b", "1"); return err }
		}
		list := func(r *repo.Repo[Reply]) func() error {
			return func() error { _, _, err := r.List(ctx, "b", 10, ""); return err }
		}
		all := func(r *repo.Repo[Reply]) func() error {
			return func() error {
				for _, err := range r.All(ctx, "b") {
					if err != nil {
						return err
					}
				}
				return nil
			}
		}
		var (
			zero    repo.Repo[Reply]
			nilRepo *repo.Repo[Reply]
		)
		for _, tc := range []struct {
			name string
			// want is errPanic for a panic with it in this goroutine, and
			// otherwise an error matching it before any request.
			want error
			call func() error
		}{
			// A client that panics on the request the call depends on.
			{"Get, GetItem panics", errPanic, get(plain("GetItem"))},
			{"cached Get, GetItem panics", errPanic, get(cached("GetItem"))},
			{"Put, PutItem panics", errPanic, func() error { _, err := plain("PutItem").Put(ctx, "b", Reply{ID: "p"}); return err }},
			{"Create, PutItem panics", errPanic, func() error { _, err := plain("PutItem").Create(ctx, "b", Reply{ID: "c"}); return err }},
			{"Delete, DeleteItem panics", errPanic, func() error { return plain("DeleteItem").Delete(ctx, "b", "1") }},
			{"List, Query panics", errPanic, list(plain("Query"))},
			{"All, Query panics", errPanic, all(plain("Query"))},
			{"Count, Query panics", errPanic, func() error { _, err := plain("Query").Count(ctx, "b"); return err }},
			{"Get of a large value, chunk BatchGetItem panics", errPanic, get(chunksPanic)},
			{"List of large values, chunk BatchGetItem panics", errPanic, list(chunksPanic)},
			{"All of large values, chunk BatchGetItem panics", errPanic, all(chunksPanic)},
			// A loop body that panics.
			{"All, loop body panics", errPanic, func() error {
				for range good.All(ctx, "b") {
					panic(errPanic)
				}
				return nil
			}},
			// A nil or typed-nil input.
			{"New, typed-nil Strategy", shard.ErrInvalidStrategy, func() error { _, err := repo.New[Reply](counted, typedNil); return err }},
			{"New, nil client", repo.ErrInvalid, func() error { _, err := repo.New[Reply](nil, l); return err }},
			{"New, typed-nil client", repo.ErrInvalid, func() error { _, err := repo.New[Reply]((*dynamodb.Client)(nil), l); return err }},
			{"New, typed-nil chunk store", repo.ErrInvalid, func() error {
				_, err := repo.New[Reply](counted, l, large("body", (*chunk.Store)(nil)))
				return err
			}},
			{"zero Repo Get", repo.ErrInvalid, get(&zero)},
			{"zero Repo Put", repo.ErrInvalid, func() error { _, err := zero.Put(ctx, "b", Reply{ID: "z"}); return err }},
			{"zero Repo Delete", repo.ErrInvalid, func() error { return zero.Delete(ctx, "b", "1") }},
			{"zero Repo List", repo.ErrInvalid, list(&zero)},
			{"zero Repo All", repo.ErrInvalid, all(&zero)},
			{"zero Repo Count", repo.ErrInvalid, func() error { _, err := zero.Count(ctx, "b"); return err }},
			{"nil Repo Get", repo.ErrInvalid, get(nilRepo)},
			{"nil Repo List", repo.ErrInvalid, list(nilRepo)},
		} {
			t.Run(tc.name, func(t *testing.T) {
				sent.reset()
				ddbtest.NoEscape(t, tc.call, errPanic, tc.want, repo.ErrInvalid, func() int { return int(sent.n()) })
			})
		}
	})
}
