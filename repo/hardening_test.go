package repo_test

import (
	"bytes"
	"context"
	"errors"
	"math"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/go-cmp/cmp"

	"github.com/dynashard/dynashard/chunk"
	"github.com/dynashard/dynashard/internal/ddbtest"
	"github.com/dynashard/dynashard/repo"
	"github.com/dynashard/dynashard/shard"
)

var errBoom = errors.New("boom")

// fragile marshals normally and panics when unmarshalled: user code with a
// bug, run by the Repo while decoding.
type fragile struct{ V string }

func (f fragile) MarshalDynamoDBAttributeValue() (types.AttributeValue, error) {
	return &types.AttributeValueMemberS{Value: f.V}, nil
}

func (f *fragile) UnmarshalDynamoDBAttributeValue(types.AttributeValue) error { panic(errBoom) }

type Fragile struct {
	Key  string  `dynamodbav:"pk"`
	ID   string  `dynamodbav:"sk"`
	F    fragile `dynamodbav:"f"`
	Body []byte  `dynamodbav:"body"`
}

// fragileStrategy is shard.Hash with a bug: once armed, Pick panics.
type fragileStrategy struct {
	shard.Strategy
	armed *atomic.Bool
}

func (s fragileStrategy) Pick(id string) int {
	if s.armed.Load() {
		panic(errBoom)
	}
	return s.Strategy.Pick(id)
}

// recovered runs f and returns what it panicked with in this goroutine. A
// panic on another goroutine is not recovered here: it ends the test binary.
func recovered(f func()) (v any) {
	defer func() { v = recover() }()
	f()
	return nil
}

// TestPanicReachesCaller: a panic in user code the Repo calls (T's
// unmarshaller, a client) reaches the caller's goroutine, where recover
// works, even when it happens on one of the Repo's goroutines (the cache's
// shared load, List's parallel reads).
func TestPanicReachesCaller(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, s *ddbtest.Server) {
		ctx := context.Background()
		l := newTable(t, s, 16)
		st := newStore(t, s, s.Client(), l, func(o *chunk.Options) { o.InlineLimit = 100 })
		pc := &panickingClient{Client: s.Client()}
		newRepo := func(c repo.Client, l shard.Layout, optFns ...func(*repo.Options)) *repo.Repo[Fragile] {
			return newRepo[Fragile](t, c, l, optFns...)
		}
		large := large("body", st)
		cached := func(o *repo.Options) { o.CacheEntries = 10 }
		plain := newRepo(s.Client(), l)
		big := newRepo(s.Client(), l, large)
		for i, n := range []int{10, 5000, 20_000} {
			if _, err := big.Put(ctx, "b", Fragile{ID: strconv.Itoa(i), F: fragile{"x"}, Body: bytes.Repeat([]byte("b"), n)}); err != nil {
				t.Fatal(err)
			}
		}
		all := func(r *repo.Repo[Fragile]) func() {
			return func() {
				for _, err := range r.All(ctx, "b") {
					if err != nil {
						t.Errorf("All: %v", err)
					}
				}
			}
		}
		list := func(r *repo.Repo[Fragile]) func() {
			return func() { r.List(ctx, "b", 10, "") }
		}
		get := func(r *repo.Repo[Fragile]) func() {
			return func() { r.Get(ctx, "b", "1") }
		}
		pcCached := newRepo(pc, l, cached, large)
		var armed atomic.Bool
		// A user's Strategy is recorded under its Go type, not as "hash":
		// this layout is trusted (Unchecked) to read what Hash(16) wrote.
		fl := l
		fl.Strategy = fragileStrategy{Strategy: l.Strategy, armed: &armed}
		fl.Unchecked = true
		fs := newRepo(s.Client(), fl, large)
		for _, tc := range []struct {
			name string
			call func()
		}{
			{"Get", get(plain)},
			{"cached Get", get(newRepo(s.Client(), l, cached))},
			{"cached large Get", get(newRepo(s.Client(), l, cached, large))},
			{"List", list(plain)},
			{"List large", list(big)},
			{"All", all(plain)},
			{"All large", all(big)},
			{"cached Get, client panics", func() {
				pc.armed.Store(true)
				defer pc.armed.Store(false)
				pcCached.Get(ctx, "b", "2")
			}},
			{"List large, Strategy panics", func() {
				armed.Store(true)
				defer armed.Store(false)
				fs.List(ctx, "b", 10, "")
			}},
		} {
			v := recovered(tc.call)
			if err, ok := v.(error); !ok || !errors.Is(err, errBoom) {
				t.Errorf("%s: recovered %v, want a panic matching errBoom", tc.name, v)
			}
		}
	})
}

// TestNilContext: every method refuses a nil ctx with ErrInvalid before any
// request, instead of panicking (on the cache's goroutine, for a cached
// Get).
func TestNilContext(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, s *ddbtest.Server) {
		l := newTable(t, s, 16)
		rc, sent := countingClient(s)
		st := newStore(t, s, rc, l)
		var nilCtx context.Context
		for _, cfg := range []struct {
			name string
			opt  func(*repo.Options)
		}{
			{"plain", func(*repo.Options) {}},
			{"cached", func(o *repo.Options) { o.CacheEntries = 10 }},
			{"large", func(o *repo.Options) { o.Large = &repo.LargeField{Attribute: "body", Store: st}; o.Version = "ver" }},
		} {
			r := newRepo[Reply](t, rc, l, cfg.opt)
			calls := map[string]func() error{
				"Create": func() error { _, err := r.Create(nilCtx, "b", Reply{ID: "a"}); return err },
				"Put":    func() error { _, err := r.Put(nilCtx, "b", Reply{ID: "a"}); return err },
				"Get":    func() error { _, err := r.Get(nilCtx, "b", "a"); return err },
				"Delete": func() error { return r.Delete(nilCtx, "b", "a") },
				"List":   func() error { _, _, err := r.List(nilCtx, "b", 10, ""); return err },
				"Count":  func() error { _, err := r.Count(nilCtx, "b"); return err },
				"All": func() error {
					for _, err := range r.All(nilCtx, "b") {
						return err
					}
					return errors.New("All yielded nothing")
				},
			}
			for name, call := range calls {
				sent.reset()
				var err error
				if v := recovered(func() { err = call() }); v != nil {
					t.Errorf("%s %s(nil ctx) panicked: %v", cfg.name, name, v)
					continue
				}
				if !errors.Is(err, repo.ErrInvalid) {
					t.Errorf("%s %s(nil ctx): got %v, want ErrInvalid", cfg.name, name, err)
				}
				if n := sent.n(); n != 0 {
					t.Errorf("%s %s(nil ctx) sent %d requests, want none", cfg.name, name, n)
				}
			}
		}
	})
}

// TestCursorKeyLength: a key too short to sign cursors safely is refused
// at construction; no key (unsigned cursors) is fine.
func TestCursorKeyLength(t *testing.T) {
	// New sends no request: a real client with no server behind it will do.
	c := dynamodb.New(dynamodb.Options{Region: "us-east-1"})
	for _, tc := range []struct {
		key     []byte
		wantErr bool
	}{
		{nil, false},
		{[]byte{}, false},
		{[]byte("k"), true},
		{bytes.Repeat([]byte("k"), 15), true},
		{bytes.Repeat([]byte("k"), 16), false},
		{bytes.Repeat([]byte("k"), 32), false},
	} {
		_, err := repo.New[Order](c, layout("t", 16), func(o *repo.Options) { o.CursorKey = tc.key })
		if got := errors.Is(err, repo.ErrInvalid); got != tc.wantErr {
			t.Errorf("CursorKey of %d bytes: got %v, want ErrInvalid: %v", len(tc.key), err, tc.wantErr)
		}
	}
}

// TestVersionAtMax: a version that cannot be advanced is refused before
// any request, instead of wrapping to a negative version.
func TestVersionAtMax(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, s *ddbtest.Server) {
		ctx := context.Background()
		l := newTable(t, s, 16)
		rc, sent := countingClient(s)
		r := newRepo[Order](t, rc, l, func(o *repo.Options) { o.Version = "ver" })
		// An item written by someone else with the largest version.
		table := l.Table
		pk := shard.Key("d", l.Strategy.Pick("a"))
		max := strconv.FormatInt(math.MaxInt64, 10)
		if _, err := s.Client().PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: map[string]types.AttributeValue{
			"pk": &types.AttributeValueMemberS{Value: pk}, "sk": &types.AttributeValueMemberS{Value: "a"},
			"amount": &types.AttributeValueMemberN{Value: "1"}, "ver": &types.AttributeValueMemberN{Value: max},
		}}); err != nil {
			t.Fatal(err)
		}
		o, err := r.Get(ctx, "d", "a")
		if err != nil || o.Version != math.MaxInt64 {
			t.Fatalf("Get: got %+v, %v", o, err)
		}
		sent.reset()
		o.Amount = 2
		if _, err := r.Put(ctx, "d", o); !errors.Is(err, repo.ErrInvalid) {
			t.Errorf("Put at the largest version: got %v, want ErrInvalid", err)
		}
		if n := sent.n(); n != 0 {
			t.Errorf("Put at the largest version sent %d requests, want none", n)
		}
		if got, err := r.Get(ctx, "d", "a"); err != nil || got.Version != math.MaxInt64 || got.Amount != 1 {
			t.Errorf("after the refused Put: got %+v, %v; want the item unchanged", got, err)
		}
	})
}

// TestCacheFillsFromConsistentReads: right after a write through the Repo,
// an eventually consistent read may return the previous value; the cache
// must not keep it for its TTL.
func TestCacheFillsFromConsistentReads(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, s *ddbtest.Server) {
		ctx := context.Background()
		l := newTable(t, s, 16)
		sc := newStaleClient(s.Client(), "pk", "sk")
		r := newRepo[Order](t, sc, l, func(o *repo.Options) { o.CacheEntries = 10 })
		for _, amount := range []int{1, 2} {
			if _, err := r.Put(ctx, "d", Order{ID: "a", Amount: amount}); err != nil {
				t.Fatal(err)
			}
		}
		for i := range 3 {
			if got, err := r.Get(ctx, "d", "a"); err != nil || got.Amount != 2 {
				t.Errorf("Get %d after the second Put: got %+v, %v; want amount 2", i, got, err)
			}
		}
		// The same with a large field kept by a store that reads its parent
		// items eventually consistently (chunk's default).
		st := newStore(t, s, sc, l)
		big := newRepo[Reply](t, sc, l, large("body", st), func(o *repo.Options) { o.CacheEntries = 10 })
		for _, body := range []string{"one", "two"} {
			if _, err := big.Put(ctx, "t", Reply{ID: "r", Body: []byte(body)}); err != nil {
				t.Fatal(err)
			}
		}
		for i := range 3 {
			if got, err := big.Get(ctx, "t", "r"); err != nil || string(got.Body) != "two" {
				t.Errorf("large Get %d after the second Put: got %q, %v; want two", i, got.Body, err)
			}
		}
	})
}

// TestConsistentReadOption: Options.ConsistentRead makes Get, List, All and
// Count read strongly consistently; by default they read eventually
// consistently.
func TestConsistentReadOption(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, s *ddbtest.Server) {
		ctx := context.Background()
		l := newTable(t, s, 3)
		sc := newStaleClient(s.Client(), "pk", "sk")
		st := newStore(t, s, sc, l) // reads parents eventually consistently, chunk's default
		for _, consistent := range []bool{false, true} {
			for _, large := range []bool{false, true} {
				r := newRepo[Reply](t, sc, l, func(o *repo.Options) {
					o.ConsistentRead = consistent
					if large {
						o.Large = &repo.LargeField{Attribute: "body", Store: st}
					}
				})
				base := "c" + strconv.FormatBool(consistent) + strconv.FormatBool(large)
				for _, body := range []string{"one", "two"} {
					if _, err := r.Put(ctx, base, Reply{ID: "r", Body: []byte(body)}); err != nil {
						t.Fatal(err)
					}
				}
				want := "two"
				if !consistent {
					want = "one" // the previous value, as an eventually consistent read may give
				}
				sc.eventual.Store(0)
				got, err := r.Get(ctx, base, "r")
				if err != nil || string(got.Body) != want {
					t.Errorf("ConsistentRead %v, large %v: Get got %q, %v; want %q", consistent, large, got.Body, err, want)
				}
				if _, _, err := r.List(ctx, base, 10, ""); err != nil {
					t.Fatal(err)
				}
				for _, err := range r.All(ctx, base) {
					if err != nil {
						t.Fatal(err)
					}
				}
				if _, err := r.Count(ctx, base); err != nil {
					t.Fatal(err)
				}
				if n := sc.eventual.Load(); (n == 0) != consistent {
					t.Errorf("ConsistentRead %v, large %v: %d eventually consistent reads", consistent, large, n)
				}
			}
		}
	})
}

// Tagged holds reference types a caller may modify in place.
type Tagged struct {
	Key   string            `dynamodbav:"pk"`
	ID    string            `dynamodbav:"sk"`
	Tags  []string          `dynamodbav:"tags"`
	Attrs map[string]string `dynamodbav:"attrs"`
	Blob  []byte            `dynamodbav:"blob"`
	Items []Tagged          `dynamodbav:"items"`
}

func scribble(v *Tagged) {
	v.Tags[0] = "changed"
	v.Tags = append(v.Tags, "more")
	v.Attrs["k"] = "changed"
	v.Attrs["new"] = "added"
	v.Blob[0] = 'X'
	v.Items[0].Tags[0] = "changed"
}

// TestCacheReturnsCopies: modifying a value Get returned does not change
// what later Gets return.
func TestCacheReturnsCopies(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, s *ddbtest.Server) {
		ctx := context.Background()
		l := newTable(t, s, 16)
		st := newStore(t, s, s.Client(), l)
		for _, large := range []bool{false, true} {
			r := newRepo[Tagged](t, s.Client(), l, func(o *repo.Options) {
				o.CacheEntries = 10
				if large {
					o.Large = &repo.LargeField{Attribute: "blob", Store: st}
				}
			})
			base := "b" + strconv.FormatBool(large)
			want := Tagged{
				ID: "a", Tags: []string{"x", "y"}, Attrs: map[string]string{"k": "v"}, Blob: []byte("blob"),
				Items: []Tagged{{Tags: []string{"inner"}}},
			}
			if _, err := r.Put(ctx, base, want); err != nil {
				t.Fatal(err)
			}
			for i := range 3 {
				got, err := r.Get(ctx, base, "a")
				if err != nil {
					t.Fatal(err)
				}
				got.Key = "" // the physical key
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("large %v, Get %d after modifying what earlier Gets returned (-want +got):\n%s", large, i, diff)
				}
				scribble(&got)
			}
			if st := r.CacheStats(); st.Hits != 2 {
				t.Errorf("large %v: %d cache hits, want 2", large, st.Hits)
			}
		}
	})
}
