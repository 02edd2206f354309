package scatter_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"

	"github.com/dynashard/dynashard/dynashardtest/faultproxy"
	"github.com/dynashard/dynashard/internal/ddbtest"
	"github.com/dynashard/dynashard/internal/keyorder"
	"github.com/dynashard/dynashard/scatter"
	"github.com/dynashard/dynashard/shard"
)

// validLayout describes a table no test creates: a call on it that passes
// validation fails at the first request.
var validLayout = shard.Layout{Table: "t", PartitionKey: "pk", SortKey: "sk", Strategy: shard.Hash(4)}

// callAll makes every call of sc on base "b" with ctx and optFns and
// returns their errors by name.
func callAll(sc *scatter.Scatter, ctx context.Context, optFns ...func(*scatter.Options)) map[string]error {
	errs := map[string]error{}
	for _, err := range sc.All(ctx, "b", optFns...) {
		errs["All"] = err
	}
	_, _, errs["Page"] = sc.Page(ctx, "b", 10, "", optFns...)
	_, errs["Count"] = sc.Count(ctx, "b", optFns...)
	_, errs["Lookup"] = sc.Lookup(ctx, "b", sv("x"), optFns...)
	return errs
}

// TestUnusableScatter: New refuses a nil client; a zero Scatter, or a call
// without a context, fails every call with ErrInvalidQuery and sends
// nothing, instead of panicking in a goroutine of its own.
func TestUnusableScatter(t *testing.T) {
	for name, c := range map[string]scatter.Client{"nil client": nil, "typed nil": (*dynamodb.Client)(nil)} {
		sc, err := scatter.New(c, validLayout)
		if sc != nil || !errors.Is(err, scatter.ErrInvalidQuery) || !errors.Is(err, scatter.ErrInvalid) {
			t.Errorf("%s: New: got %v, %v, want ErrInvalidQuery", name, sc, err)
		}
	}
	t.Run("zero Scatter", func(t *testing.T) {
		for call, err := range callAll(&scatter.Scatter{}, context.Background()) {
			if !errors.Is(err, scatter.ErrInvalidQuery) {
				t.Errorf("%s: got %v, want ErrInvalidQuery", call, err)
			}
		}
	})
	t.Run("nil ctx", func(t *testing.T) {
		c, sent := countingClient(unreachable)
		for call, err := range callAll(newScatter(t, c, validLayout), nil) {
			if !errors.Is(err, scatter.ErrInvalidQuery) {
				t.Errorf("%s: got %v, want ErrInvalidQuery", call, err)
			}
		}
		if n := sent.total(); n != 0 {
			t.Errorf("got %d requests, want 0", n)
		}
	})
}

// TestClientPanic: a panic inside the client reaches the caller's
// goroutine, where it can be recovered, and no request goroutine is left:
// in a request goroutine (Query) and in the layout check (GetItem).
func TestClientPanic(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	unchecked := validLayout
	unchecked.Unchecked = true // no GetItem: the first request is a Query
	c, _ := countingClient(unreachable, "Query", "GetItem")
	for _, l := range []shard.Layout{unchecked, validLayout} {
		sc := newScatter(t, c, l)
		calls := map[string]func(){
			"All": func() {
				for range sc.All(context.Background(), "b") {
				}
			},
			"Page":  func() { sc.Page(context.Background(), "b", 10, "") },
			"Count": func() { sc.Count(context.Background(), "b") },
		}
		for name, call := range calls {
			var got any
			func() {
				defer func() { got = recover() }()
				call()
			}()
			if got == nil {
				t.Errorf("Unchecked=%v: %s: got no panic, want the client's panic in the caller's goroutine", l.Unchecked, name)
			}
		}
	}
	goleak.VerifyNone(t, ignore)
}

// TestShortCursorKey: a CursorKey shorter than 16 bytes fails New, and
// every call that sets one, with ErrInvalidQuery before any request; 16
// bytes are accepted.
func TestShortCursorKey(t *testing.T) {
	c, sent := countingClient(unreachable)
	sc := newScatter(t, c, validLayout)
	for _, n := range []int{1, 15} {
		key := func(o *scatter.Options) { o.CursorKey = make([]byte, n) }
		if _, err := scatter.New(c, validLayout, key); !errors.Is(err, scatter.ErrInvalidQuery) {
			t.Errorf("%d-byte key: New: got %v, want ErrInvalidQuery", n, err)
		}
		for call, err := range callAll(sc, context.Background(), key) {
			if !errors.Is(err, scatter.ErrInvalidQuery) {
				t.Errorf("%d-byte key: %s: got %v, want ErrInvalidQuery", n, call, err)
			}
		}
	}
	if got := sent.total(); got != 0 {
		t.Errorf("got %d requests, want 0", got)
	}
	ddbtest.Each(t, func(t *testing.T, s *ddbtest.Server) {
		c, _ := testClient(s.Endpoint)
		l := validLayout
		l.Table = s.Table(t, "pk:S", "sk:S")
		sc := newScatter(t, c, l, func(o *scatter.Options) { o.CursorKey = make([]byte, 16) })
		if _, _, err := sc.Page(context.Background(), "b", 10, ""); err != nil {
			t.Errorf("16-byte key: got %v, want no error", err)
		}
	})
}

// TestLastPageEmptyCursor: a page that takes the last items returns the
// empty cursor, without an extra Page call, for every limit, with and
// without PageSize, ordered or not.
func TestLastPageEmptyCursor(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, s *ddbtest.Server) {
		c, _ := testClient(s.Endpoint)
		table := s.Table(t, "pk:S", "sk:S")
		putAll(t, c, table, []map[string]types.AttributeValue{{"pk": sv(shard.Key("one", 1)), "sk": sv("a"), "id": sv("x")}})
		sc := newScatter(t, c, layout(table, 'S', shard.Hash(1)))
		items, next, err := sc.Page(context.Background(), "one", 1, "")
		if err != nil || len(items) != 1 || next != "" {
			t.Fatalf("N=1, one item, limit 1: got %d items, cursor %q, %v; want 1 item and the empty cursor", len(items), next, err)
		}

		r := rand.New(rand.NewPCG(31, 31))
		ds := newDataset(t, s, c, r, 'N', 4, 6)
		sc = newScatter(t, c, layout(ds.table, 'N', shard.Random(ds.n)))
		for _, unordered := range []bool{false, true} {
			for _, pageSize := range []int32{0, 2} {
				q := ds.read(shard.Random(ds.n))
				q.o = scatter.Options{Unordered: unordered, PageSize: pageSize}
				total := len(ds.items)
				for _, limit := range []int{1, 2, 3, total - 1, total, total + 1} {
					if limit < 1 {
						continue
					}
					calls := 0
					var cur scatter.Cursor
					for got := 0; ; {
						items, next, err := sc.Page(context.Background(), q.base, limit, cur, q.opt)
						if err != nil {
							t.Fatal(err)
						}
						calls++
						got += len(items)
						if next == "" {
							break
						}
						cur = next
						if calls > total+1 {
							t.Fatal("Page never ends")
						}
					}
					if want := max(1, (total+limit-1)/limit); calls != want {
						t.Errorf("unordered=%v PageSize=%d limit %d over %d items: got %d Page calls, want %d",
							unordered, pageSize, limit, total, calls, want)
					}
				}
			}
		}
	})
}

// item is a test item of shard suffix.
func item(base string, suffix int, sk types.AttributeValue, id string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{"pk": sv(shard.Key(base, suffix)), "sk": sk, "id": sv(id), "v": nv("1")}
}

// TestPageSeesLaterWrites: the cases. A resumed Page returns what
// was written after the previous page in any shard, if it sorts after the
// last item returned, and nothing that sorts before it.
func TestPageSeesLaterWrites(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, s *ddbtest.Server) {
		c, _ := testClient(s.Endpoint)
		page := func(t *testing.T, q read, limit int, cur scatter.Cursor) ([]string, scatter.Cursor) {
			t.Helper()
			items, next, err := newScatter(t, c, q.l).Page(context.Background(), q.base, limit, cur, q.opt)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, it := range items {
				got = append(got, fmt.Sprintf("%d/%s", it.Suffix, show(it.Attrs["id"])))
			}
			return got, next
		}
		check := func(t *testing.T, what string, got, want []string) {
			t.Helper()
			if !slices.Equal(got, want) {
				t.Errorf("%s: got %v, want %v", what, got, want)
			}
		}

		t.Run("finished shard", func(t *testing.T) {
			table := s.Table(t, "pk:S", "sk:S")
			putAll(t, c, table, []map[string]types.AttributeValue{item("d", 1, sv("a"), "a"), item("d", 2, sv("b"), "b"), item("d", 2, sv("c"), "c")})
			q := read{l: layout(table, 'S', shard.Random(2)), base: "d"}
			got, cur := page(t, q, 2, "")
			check(t, "first page", got, []string{"1/a", "2/b"})
			putAll(t, c, table, []map[string]types.AttributeValue{item("d", 1, sv("z"), "z"), item("d", 2, sv("y"), "y")})
			got, _ = page(t, q, 10, cur)
			check(t, "second page", got, []string{"2/c", "2/y", "1/z"})
		})

		t.Run("earlier write", func(t *testing.T) {
			table := s.Table(t, "pk:S", "sk:S")
			putAll(t, c, table, []map[string]types.AttributeValue{item("d", 1, sv("b"), "b"), item("d", 1, sv("c"), "c")})
			q := read{l: layout(table, 'S', shard.Random(2)), base: "d"}
			got, cur := page(t, q, 1, "")
			check(t, "first page", got, []string{"1/b"})
			putAll(t, c, table, []map[string]types.AttributeValue{item("d", 2, sv("a"), "a"), item("d", 2, sv("d"), "d")})
			got, _ = page(t, q, 10, cur)
			check(t, "second page", got, []string{"1/c", "2/d"})
		})

		t.Run("ties", func(t *testing.T) {
			for _, desc := range []bool{false, true} {
				// After 2/m2, items with its sort key follow in shards after
				// it in suffix order (before it when descending).
				table := s.Table(t, "pk:S", "sk:N")
				next, want := item("d", 2, nv("9"), "x2"), []string{"3/m3", "2/x2"}
				if desc {
					next, want = item("d", 2, nv("1"), "x2"), []string{"1/m1", "2/x2"}
				}
				putAll(t, c, table, []map[string]types.AttributeValue{item("d", 2, nv("5"), "m2"), next})
				q := read{l: layout(table, 'N', shard.Random(3)), base: "d", o: scatter.Options{Descending: desc}}
				got, cur := page(t, q, 1, "")
				check(t, "first page", got, []string{"2/m2"})
				putAll(t, c, table, []map[string]types.AttributeValue{item("d", 1, nv("5"), "m1"), item("d", 3, nv("5"), "m3")})
				got, _ = page(t, q, 10, cur)
				check(t, fmt.Sprintf("desc=%v: second page", desc), got, want)
			}
		})
	})
}

// liveModel is a sharded table that a test changes between pages.
type liveModel struct {
	c     *dynamodb.Client
	q     read
	r     *rand.Rand
	key   func(*rand.Rand, byte) types.AttributeValue
	kind  byte
	n     int
	seq   int
	index bool // q reads an index whose sort key repeats within a shard
}

// identity names an item as the merge's position does: its suffix and its
// key in that shard.
func (m *liveModel) identity(it scatter.Item) string {
	if m.index {
		return fmt.Sprint(it.Suffix, "/", show(it.Attrs["id"]))
	}
	return fmt.Sprint(it.Suffix, "/", show(it.Attrs["sk"]))
}

// rest is what one Query over the merged key, resumed after last, returns
// from the current data: the reference's items after last.
func (m *liveModel) rest(t *testing.T, last *scatter.Item) []scatter.Item {
	ref := reference(t, m.c, m.q, suffixRange(m.n))
	if last == nil {
		return ref
	}
	i := slices.IndexFunc(ref, func(it scatter.Item) bool { return m.identity(it) == m.identity(*last) })
	if i < 0 {
		// last no longer passes the filter: compare keys instead.
		return slices.DeleteFunc(ref, func(it scatter.Item) bool { return !m.after(it, *last) })
	}
	return ref[i+1:]
}

// after reports whether a sorts after b (tables only: keys are unique).
func (m *liveModel) after(a, b scatter.Item) bool {
	c, _ := keyorder.Compare(a.Attrs["sk"], b.Attrs["sk"])
	if c == 0 {
		c = a.Suffix - b.Suffix
	}
	if m.q.o.Descending {
		c = -c
	}
	return c > 0
}

// change writes a few items into random shards and deletes a few, never
// last (so that its place stays defined).
func (m *liveModel) change(t *testing.T, last *scatter.Item) {
	var puts []map[string]types.AttributeValue
	for range m.r.IntN(4) {
		m.seq++
		suffix := 1 + m.r.IntN(m.n)
		it := map[string]types.AttributeValue{"id": sv(fmt.Sprintf("w%04d", m.seq)), "v": nv(fmt.Sprint(m.r.IntN(100)))}
		if m.index {
			it["day"], it["sk"] = sv(shard.Key(m.q.base, suffix)), nv(fmt.Sprint(m.r.IntN(6)))
		} else {
			it["pk"], it["sk"] = sv(shard.Key(m.q.base, suffix)), m.key(m.r, m.kind)
			if last != nil && m.identity(scatter.Item{Suffix: suffix, Attrs: it}) == m.identity(*last) {
				continue
			}
		}
		puts = append(puts, it)
	}
	putAll(t, m.c, m.q.l.Table, puts)
	if m.index {
		return
	}
	ref := reference(t, m.c, read{l: m.q.l, base: m.q.base}, suffixRange(m.n))
	for range m.r.IntN(3) {
		if len(ref) == 0 {
			break
		}
		it := ref[m.r.IntN(len(ref))]
		if last != nil && m.identity(it) == m.identity(*last) {
			continue
		}
		key := map[string]types.AttributeValue{"pk": it.Attrs["pk"], "sk": it.Attrs["sk"]}
		if _, err := m.c.DeleteItem(context.Background(), &dynamodb.DeleteItemInput{TableName: aws.String(m.q.l.Table), Key: key}); err != nil {
			t.Fatal(err)
		}
	}
}

// walk pages through m's query, changing the data before every page, and
// checks each page against the model.
func (m *liveModel) walk(t *testing.T, sc *scatter.Scatter) {
	t.Helper()
	var cur scatter.Cursor
	var last *scatter.Item
	for calls := 0; ; calls++ {
		if calls > 0 {
			m.change(t, last)
		}
		want := m.rest(t, last)
		limit := 1 + m.r.IntN(5)
		items, next, err := sc.Page(context.Background(), m.q.base, limit, cur, m.q.opt)
		if err != nil {
			t.Fatalf("page %d: %v", calls, err)
		}
		if got, want := ids(items), ids(want[:min(limit, len(want))]); !slices.Equal(got, want) {
			t.Fatalf("page %d (limit %d): (-got +want)\n%s", calls, limit, cmp.Diff(got, want))
		}
		if m.q.o.Filter == "" && (next == "") != (len(want) <= limit) {
			t.Fatalf("page %d (limit %d) with %d items left: got cursor %q", calls, limit, len(want), next)
		}
		if len(items) > 0 {
			last = &items[len(items)-1]
		}
		if next == "" {
			return
		}
		cur = next
		if calls > 200 {
			t.Fatal("Page never ends")
		}
	}
}

// TestPageLiveModel: on random data that changes between pages (writes
// into any shard, deletes, equal sort keys across shards), every page is
// what one Query over the merged key, resumed after the last item
// returned, would return from the data at that time: with and without a
// key condition and a filter, in both directions, on a table and on an
// index whose sort key repeats.
func TestPageLiveModel(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, s *ddbtest.Server) {
		c, _ := testClient(s.Endpoint)
		seed := uint64(0)
		for _, kind := range []byte{'S', 'N'} {
			r := rand.New(rand.NewPCG(37, uint64(kind)))
			ds := newDataset(t, s, c, r, kind, 4, 6)
			sc := newScatter(t, c, layout(ds.table, kind, shard.Random(ds.n)))
			lo, hi := keysFor(s)(r, kind), keysFor(s)(r, kind)
			if c, _ := keyorder.Compare(lo, hi); c > 0 {
				lo, hi = hi, lo
			}
			conds := map[string]func(*scatter.Options){
				"none": func(*scatter.Options) {},
				"between": func(o *scatter.Options) {
					o.KeyCondition, o.Values = "#sk BETWEEN :lo AND :hi", map[string]types.AttributeValue{":lo": lo, ":hi": hi}
				},
				"lt": func(o *scatter.Options) {
					o.KeyCondition, o.Values = "#sk < :hi", map[string]types.AttributeValue{":hi": hi}
				},
				"ge": func(o *scatter.Options) {
					o.KeyCondition, o.Values = ":lo <= #sk", map[string]types.AttributeValue{":lo": lo}
				},
			}
			if kind == 'S' {
				conds["prefix"] = func(o *scatter.Options) {
					o.KeyCondition, o.Values = "begins_with(#sk, :p)", map[string]types.AttributeValue{":p": sv(string([]rune(show(lo))[:1]))}
				}
			}
			for name, cond := range conds {
				for _, filter := range []bool{false, true} {
					for _, desc := range []bool{false, true} {
						t.Run(fmt.Sprintf("%c/%s/filter=%v/desc=%v", kind, name, filter, desc), func(t *testing.T) {
							seed++
							q := ds.read(shard.Random(ds.n))
							q.o = scatter.Options{Descending: desc, Names: map[string]string{}}
							cond(&q.o)
							if q.o.KeyCondition != "" {
								q.o.Names["#sk"] = "sk"
							}
							if filter {
								q.o.Filter = "#v < :x"
								q.o.Names["#v"] = "v"
								if q.o.Values == nil {
									q.o.Values = map[string]types.AttributeValue{}
								}
								q.o.Values[":x"] = nv("50")
							}
							m := &liveModel{c: c, q: q, r: rand.New(rand.NewPCG(seed, 1)), key: keysFor(s), kind: kind, n: ds.n, seq: int(seed) * 1000}
							m.walk(t, sc)
						})
					}
				}
			}
		}

		t.Run("index", func(t *testing.T) {
			table := indexTable(t, s)
			r := rand.New(rand.NewPCG(41, 41))
			var items []map[string]types.AttributeValue
			for i := range 30 {
				items = append(items, map[string]types.AttributeValue{"id": sv(fmt.Sprintf("i%04d", i)),
					"day": sv(shard.Key("d", 1+r.IntN(3))), "sk": nv(fmt.Sprint(r.IntN(6))), "v": nv(fmt.Sprint(r.IntN(100)))})
			}
			putAll(t, c, table, items)
			sc := newScatter(t, c, indexLayout(table, shard.Random(3)))
			for _, desc := range []bool{false, true} {
				q := read{l: indexLayout(table, shard.Random(3)), base: "d", o: scatter.Options{Descending: desc}}
				m := &liveModel{c: c, q: q, r: rand.New(rand.NewPCG(43, uint64(len(items)))), n: 3, index: true, seq: 5000 * (1 + len(items))}
				if desc {
					m.seq += 1000
				}
				m.walk(t, sc)
			}
		})
	})
}

// indexTable creates a table keyed by id with a global secondary index
// byday (day, sk:N).
func indexTable(t *testing.T, s *ddbtest.Server) string {
	in, err := ddbtest.TableInput("id:S")
	if err != nil {
		t.Fatal(err)
	}
	in.AttributeDefinitions = append(in.AttributeDefinitions,
		types.AttributeDefinition{AttributeName: aws.String("day"), AttributeType: types.ScalarAttributeTypeS},
		types.AttributeDefinition{AttributeName: aws.String("sk"), AttributeType: types.ScalarAttributeTypeN})
	in.GlobalSecondaryIndexes = []types.GlobalSecondaryIndex{{
		IndexName: aws.String("byday"),
		KeySchema: []types.KeySchemaElement{
			{AttributeName: aws.String("day"), KeyType: types.KeyTypeHash},
			{AttributeName: aws.String("sk"), KeyType: types.KeyTypeRange},
		},
		Projection: &types.Projection{ProjectionType: types.ProjectionTypeAll},
	}}
	return s.CreateTable(t, in)
}

// indexLayout is the layout of indexTable's index byday. An index layout
// is not recorded, so it is Unchecked.
func indexLayout(table string, strategy shard.Strategy) shard.Layout {
	return shard.Layout{Table: table, Index: "byday", PartitionKey: "day", SortKey: "sk", SortKeyType: types.ScalarAttributeTypeN,
		TableKey: []string{"id"}, Strategy: strategy, Unchecked: true}
}

// TestForgedPosition: an unsigned cursor whose position has the wrong
// type (the layout's SortKeyType, with or without a key condition), lies
// outside the key condition or is longer than DynamoDB allows is rejected
// with CursorOutOfRange before any request.
func TestForgedPosition(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, s *ddbtest.Server) {
		direct, _ := testClient(s.Endpoint)
		table := s.Table(t, "pk:S", "sk:S")
		putAll(t, direct, table, []map[string]types.AttributeValue{item("d", 1, sv("c"), "c"), item("d", 2, sv("d"), "d")})
		p := newProxy(t, s.Endpoint, faultproxy.Config{})
		c, _ := testClient(p.URL())
		l := layout(table, 'S', shard.Hash(2))
		sc := newScatter(t, c, l)
		between := read{l: l, base: "d", o: scatter.Options{
			KeyCondition: "#sk BETWEEN :lo AND :hi", Names: map[string]string{"#sk": "sk"},
			Values: map[string]types.AttributeValue{":lo": sv("b"), ":hi": sv("m")}}}
		prefix := between
		prefix.o.KeyCondition, prefix.o.Values = "begins_with(#sk, :p)", map[string]types.AttributeValue{":p": sv("c")}
		typed := read{l: l, base: "d"} // no condition: the type is the layout's alone
		cases := []struct {
			name string
			q    read
			key  types.AttributeValue
		}{
			{"number for a string", between, nv("5")},
			{"binary for a string", between, bv([]byte("c"))},
			{"typed number for a string", typed, nv("5")},
			{"above BETWEEN", between, sv("z")},
			{"below BETWEEN", between, sv("a")},
			{"outside begins_with", prefix, sv("d")},
			{"sort key of 1,025 bytes", between, sv("c" + strings.Repeat("x", 1024))},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				cur, err := scatter.ForgeCursor(tc.q.l, tc.q.base, 1, []types.AttributeValue{tc.key}, tc.q.opt)
				if err != nil {
					t.Fatal(err)
				}
				p.ResetStats()
				_, _, err = sc.Page(context.Background(), tc.q.base, 5, cur, tc.q.opt)
				var ce *scatter.CursorError
				if !errors.As(err, &ce) || ce.Reason != scatter.CursorOutOfRange {
					t.Errorf("got %v, want a *CursorError with CursorOutOfRange", err)
				}
				if n := p.Stats().Total.Requests; n != 0 {
					t.Errorf("got %d requests, want 0", n)
				}
			})
		}
		// The neighbours of those cases are accepted.
		for _, tc := range []struct {
			q   read
			key types.AttributeValue
		}{{between, sv("b")}, {between, sv("m")}, {prefix, sv("c")}, {prefix, sv("cz")}, {typed, sv("a")}} {
			cur, err := scatter.ForgeCursor(tc.q.l, tc.q.base, 1, []types.AttributeValue{tc.key}, tc.q.opt)
			if err != nil {
				t.Fatal(err)
			}
			if _, _, err := sc.Page(context.Background(), tc.q.base, 5, cur, tc.q.opt); err != nil {
				t.Errorf("position %s: got %v, want it accepted", show(tc.key), err)
			}
		}
	})
}
