package repo_test

import (
	"bytes"
	"context"
	"errors"
	"strconv"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynashard/dynashard/chunk"
	"github.com/dynashard/dynashard/internal/ddbtest"
	"github.com/dynashard/dynashard/repo"
	"github.com/dynashard/dynashard/shard"
)

// TestNewErrors: New refuses every configuration it cannot work with,
// with ErrInvalid, and sends no request, neither then nor for a good one.
func TestNewErrors(t *testing.T) {
	// New sends no request: a real client with no server behind it will do,
	// counting what it would send.
	q := &requests{}
	c := dynamodb.New(dynamodb.Options{Region: "us-east-1"}, q.count)
	st, err := chunk.New(c, "t", "chunks")
	if err != nil {
		t.Fatal(err)
	}
	good := layout("t", 16)
	with := func(f func(*shard.Layout)) shard.Layout {
		l := good
		f(&l)
		return l
	}
	opt := func(f func(*repo.Options)) []func(*repo.Options) { return []func(*repo.Options){f} }
	for _, tc := range []struct {
		name string
		c    repo.Client
		l    shard.Layout
		opts []func(*repo.Options)
	}{
		{"nil client", nil, good, nil},
		{"typed nil client", (*dynamodb.Client)(nil), good, nil},
		{"empty table name", c, with(func(l *shard.Layout) { l.Table = "" }), nil},
		{"no partition key", c, with(func(l *shard.Layout) { l.PartitionKey = "" }), nil},
		{"nil strategy", c, with(func(l *shard.Layout) { l.Strategy = nil }), nil},
		{"N = 0", c, with(func(l *shard.Layout) { l.Strategy = shard.Hash(0) }), nil},
		{"Random strategy", c, with(func(l *shard.Layout) { l.Strategy = shard.Random(4) }), nil},
		{"index layout", c, with(func(l *shard.Layout) {
			l.Index, l.TableKey, l.Unchecked = "by-day", []string{"id", "day"}, true
		}), nil},
		{"no sort key", c, with(func(l *shard.Layout) { l.SortKey = "" }), nil},
		{"sort key of type N", c, with(func(l *shard.Layout) { l.SortKeyType = types.ScalarAttributeTypeN }), nil},
		{"version is the partition key", c, good, opt(func(o *repo.Options) { o.Version = "pk" })},
		{"version is the sort key", c, good, opt(func(o *repo.Options) { o.Version = "sk" })},
		{"large field without a store", c, good, opt(func(o *repo.Options) { o.Large = &repo.LargeField{Attribute: "body"} })},
		{"large field unnamed", c, good, opt(large("", st))},
		{"large field is a key", c, good, opt(large("sk", st))},
		{"large field is the version", c, good, []func(*repo.Options){large("ver", st), func(o *repo.Options) { o.Version = "ver" }}},
		{"short cursor key", c, good, opt(func(o *repo.Options) { o.CursorKey = bytes.Repeat([]byte("k"), 15) })},
		{"negative MaxConcurrency", c, good, opt(func(o *repo.Options) { o.MaxConcurrency = -1 })},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := repo.New[Order](tc.c, tc.l, tc.opts...)
			if !errors.Is(err, repo.ErrInvalid) || r != nil {
				t.Errorf("got %v, %v; want nil, ErrInvalid", r, err)
			}
		})
	}
	r, err := repo.New[Order](c, good, nil, large("body", st), func(o *repo.Options) {
		o.Version, o.CacheEntries, o.CursorKey = "ver", 10, bytes.Repeat([]byte("k"), 32)
	})
	if err != nil {
		t.Fatalf("a good configuration: %v", err)
	}
	if l := r.Layout(); l.Table != good.Table || l.N() != 16 || l.PartitionKey != "pk" || l.SortKey != "sk" {
		t.Errorf("Layout() = %v, want %v", l, good)
	}
	if n := q.n(); n != 0 {
		t.Errorf("New sent %d requests, want none", n)
	}
}

// TestConsistentReadPerCall: ConsistentRead set for one call overrides the
// Repo's setting for that call only, both ways, for Get, List, All and
// Count, with and without a large field.
func TestConsistentReadPerCall(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, s *ddbtest.Server) {
		ctx := context.Background()
		l := newTable(t, s, 3)
		sc := newStaleClient(s.Client(), "pk", "sk")
		st := newStore(t, s, sc, l) // reads parents eventually consistently, chunk's default
		for _, repoLevel := range []bool{false, true} {
			for _, big := range []bool{false, true} {
				r := newRepo[Reply](t, sc, l, func(o *repo.Options) {
					o.ConsistentRead = repoLevel
					if big {
						o.Large = &repo.LargeField{Attribute: "body", Store: st}
					}
				})
				base := "p" + strconv.FormatBool(repoLevel) + strconv.FormatBool(big)
				for _, body := range []string{"one", "two"} {
					if _, err := r.Put(ctx, base, Reply{ID: "r", Body: []byte(body)}); err != nil {
						t.Fatal(err)
					}
				}
				for _, tc := range []struct {
					name       string
					opts       []func(*repo.Options)
					consistent bool
				}{
					{"per call", []func(*repo.Options){func(o *repo.Options) { o.ConsistentRead = !repoLevel }}, !repoLevel},
					{"the Repo's again", nil, repoLevel},
				} {
					want := "two"
					if !tc.consistent {
						want = "one" // the previous value, as an eventually consistent read may give
					}
					sc.eventual.Store(0)
					got, err := r.Get(ctx, base, "r", tc.opts...)
					if err != nil || string(got.Body) != want {
						t.Errorf("Repo %v, large %v, %s: Get got %q, %v; want %q", repoLevel, big, tc.name, got.Body, err, want)
					}
					if _, _, err := r.List(ctx, base, 10, "", tc.opts...); err != nil {
						t.Fatal(err)
					}
					for _, err := range r.All(ctx, base, tc.opts...) {
						if err != nil {
							t.Fatal(err)
						}
					}
					if _, err := r.Count(ctx, base, tc.opts...); err != nil {
						t.Fatal(err)
					}
					if n := sc.eventual.Load(); (n == 0) != tc.consistent {
						t.Errorf("Repo %v, large %v, %s: %d eventually consistent reads", repoLevel, big, tc.name, n)
					}
				}
			}
		}
	})
}

// TestMaxConcurrencyPerCall: a negative MaxConcurrency for one call is
// refused before any request; a positive one bounds that call.
func TestMaxConcurrencyPerCall(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, s *ddbtest.Server) {
		ctx := context.Background()
		l := newTable(t, s, 4)
		c, sent := countingClient(s)
		r := newRepo[Order](t, c, l)
		for i := range 10 {
			if _, err := r.Put(ctx, "d", Order{ID: strconv.Itoa(i)}); err != nil {
				t.Fatal(err)
			}
		}
		bad := func(o *repo.Options) { o.MaxConcurrency = -1 }
		sent.reset()
		if _, _, err := r.List(ctx, "d", 10, "", bad); !errors.Is(err, repo.ErrInvalid) {
			t.Errorf("List: got %v, want ErrInvalid", err)
		}
		if _, err := r.Count(ctx, "d", bad); !errors.Is(err, repo.ErrInvalid) {
			t.Errorf("Count: got %v, want ErrInvalid", err)
		}
		for _, err := range r.All(ctx, "d", bad) {
			if !errors.Is(err, repo.ErrInvalid) {
				t.Errorf("All: got %v, want ErrInvalid", err)
			}
		}
		if n := sent.n(); n != 0 {
			t.Errorf("refused calls sent %d requests, want none", n)
		}
		one := func(o *repo.Options) { o.MaxConcurrency = 1 }
		if n, err := r.Count(ctx, "d", one); err != nil || n != 10 {
			t.Errorf("Count with MaxConcurrency 1: %d, %v; want 10", n, err)
		}
		if page, _, err := r.List(ctx, "d", 10, "", one); err != nil || len(page) != 10 {
			t.Errorf("List with MaxConcurrency 1: %d items, %v; want 10", len(page), err)
		}
	})
}
