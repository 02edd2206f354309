package scatter_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/go-cmp/cmp"

	"github.com/dynashard/dynashard/internal/ddbtest"
	"github.com/dynashard/dynashard/internal/keyorder"
	"github.com/dynashard/dynashard/scatter"
	"github.com/dynashard/dynashard/shard"
)

type condCase struct {
	name   string
	cond   string
	values map[string]types.AttributeValue
}

// conditions builds sort-key conditions from values present in ds.
func conditions(r *rand.Rand, ds *dataset) []condCase {
	a := ds.items[r.IntN(len(ds.items))]["sk"]
	b := ds.items[r.IntN(len(ds.items))]["sk"]
	if c, _ := keyorder.Compare(a, b); c > 0 {
		a, b = b, a
	}
	cases := []condCase{
		{name: "none"},
		{name: "between", cond: "#sk BETWEEN :lo AND :hi", values: map[string]types.AttributeValue{":lo": a, ":hi": b}},
		{name: "gt", cond: "#sk > :lo", values: map[string]types.AttributeValue{":lo": a}},
	}
	switch v := a.(type) {
	case *types.AttributeValueMemberS:
		_, n := utf8.DecodeRuneInString(v.Value)
		cases = append(cases, condCase{name: "prefix", cond: "begins_with(#sk, :p)",
			values: map[string]types.AttributeValue{":p": sv(v.Value[:n])}})
	case *types.AttributeValueMemberB:
		cases = append(cases, condCase{name: "prefix", cond: "begins_with(#sk, :p)",
			values: map[string]types.AttributeValue{":p": bv(v.Value[:1])}})
	}
	return cases
}

// TestMergeMatchesReference: on random data sets with S, N and B sort keys,
// in both directions, with and without conditions, filters and page sizes,
// All and Page (random limits) both equal the reference model.
func TestMergeMatchesReference(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, s *ddbtest.Server) {
		c, _ := testClient(s.Endpoint)
		for _, kind := range []byte{'S', 'N', 'B'} {
			t.Run(string(kind), func(t *testing.T) {
				r := rand.New(rand.NewPCG(uint64(kind), 7))
				ds := newDataset(t, s, c, r, kind, 7, 25)
				sc := scatter.New(c)
				for _, cc := range conditions(r, ds) {
					for _, filter := range []bool{false, true} {
						for _, desc := range []bool{false, true} {
							q := scatter.Query{
								Table: ds.table, PartitionKey: "pk", SortKey: "sk", Base: ds.base,
								Strategy: shard.Random(ds.n), KeyCondition: cc.cond, Descending: desc,
								Names:  map[string]string{},
								Values: map[string]types.AttributeValue{},
							}
							if cc.cond != "" {
								q.Names["#sk"] = "sk"
							}
							for k, v := range cc.values {
								q.Values[k] = v
							}
							if filter {
								q.Filter = "#v < :x"
								q.Names["#v"] = "v"
								q.Values[":x"] = nv("50")
							}
							if len(q.Values) == 0 {
								q.Values = nil
							}
							if len(q.Names) == 0 {
								q.Names = nil
							}
							name := fmt.Sprintf("%s/filter=%v/desc=%v", cc.name, filter, desc)
							t.Run(name, func(t *testing.T) {
								want := ids(reference(t, c, q, suffixRange(ds.n)))
								if got := ids(collect(t, sc.All(context.Background(), q))); !slices.Equal(got, want) {
									t.Errorf("All: (-got +want)\n%s", cmp.Diff(got, want))
								}
								q.PageSize = int32(1 + r.IntN(6))
								if got := ids(collect(t, sc.All(context.Background(), q))); !slices.Equal(got, want) {
									t.Errorf("All with PageSize %d: (-got +want)\n%s", q.PageSize, cmp.Diff(got, want))
								}
								limit := 1 + r.IntN(40)
								if got := ids(pages(t, sc, q, limit)); !slices.Equal(got, want) {
									t.Errorf("Page(limit %d): (-got +want)\n%s", limit, cmp.Diff(got, want))
								}
								n, err := sc.Count(context.Background(), q)
								if err != nil || n != int64(len(want)) {
									t.Errorf("Count: got %d, %v, want %d", n, err, len(want))
								}
							})
						}
					}
				}
			})
		}
	})
}

// TestUnordered: the unordered stream holds exactly the reference's items,
// and each shard's items arrive in that shard's order.
func TestUnordered(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, s *ddbtest.Server) {
		c, _ := testClient(s.Endpoint)
		r := rand.New(rand.NewPCG(3, 3))
		ds := newDataset(t, s, c, r, 'N', 9, 30)
		sc := scatter.New(c)
		for _, desc := range []bool{false, true} {
			q := scatter.Query{Table: ds.table, PartitionKey: "pk", SortKey: "sk", Base: ds.base,
				Strategy: shard.Random(ds.n), Descending: desc, Unordered: true, PageSize: 4}
			want := reference(t, c, q, suffixRange(ds.n))
			for _, got := range [][]scatter.Item{
				collect(t, sc.All(context.Background(), q)),
				pages(t, sc, q, 1+r.IntN(20)),
			} {
				perShard := func(items []scatter.Item) map[int][]string {
					m := map[int][]string{}
					for _, it := range items {
						m[it.Suffix] = append(m[it.Suffix], show(it.Attrs["id"]))
					}
					return m
				}
				if diff := cmp.Diff(perShard(got), perShard(want)); diff != "" {
					t.Errorf("desc=%v: per-shard sequences differ (-got +want)\n%s", desc, diff)
				}
			}
		}
	})
}

// TestPageResume: a cursor resumes exactly where it was made, whatever the
// next limit, as often as it is used, and from another Scatter with the same
// signing key; descending is the reverse of ascending.
func TestPageResume(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, s *ddbtest.Server) {
		c, _ := testClient(s.Endpoint)
		r := rand.New(rand.NewPCG(5, 5))
		ds := newDataset(t, s, c, r, 'S', 6, 30)
		key := []byte("secret")
		a := scatter.New(c, func(o *scatter.Options) { o.CursorKey = key })
		b := scatter.New(c, func(o *scatter.Options) { o.CursorKey = key })
		q := scatter.Query{Table: ds.table, PartitionKey: "pk", SortKey: "sk", Base: ds.base, Strategy: shard.Hash(ds.n)}
		want := ids(reference(t, c, q, suffixRange(ds.n)))
		rev := q
		rev.Descending = true
		if got := ids(collect(t, a.All(context.Background(), rev))); !slices.Equal(got, reversed(want)) {
			t.Errorf("descending is not the reverse of ascending (-got +want)\n%s", cmp.Diff(got, reversed(want)))
		}
		for trial := range 6 {
			// Walk with random limits, remembering every cursor and how many
			// items preceded it.
			type mark struct {
				c    scatter.Cursor
				done int
			}
			marks := []mark{{"", 0}}
			var got []string
			var cur scatter.Cursor
			for {
				items, next, err := a.Page(context.Background(), q, 1+r.IntN(15), cur)
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, ids(items)...)
				if next == "" {
					break
				}
				cur = next
				marks = append(marks, mark{cur, len(got)})
			}
			if !slices.Equal(got, want) {
				t.Fatalf("trial %d: pages (-got +want)\n%s", trial, cmp.Diff(got, want))
			}
			// Resume from random marks with another instance and limit.
			for range 4 {
				m := marks[r.IntN(len(marks))]
				limit := 1 + r.IntN(25)
				items, _, err := b.Page(context.Background(), q, limit, m.c)
				if err != nil {
					t.Fatal(err)
				}
				end := min(m.done+limit, len(want))
				if got := ids(items); !slices.Equal(got, want[m.done:end]) {
					t.Errorf("resume after %d items, limit %d: (-got +want)\n%s", m.done, limit, cmp.Diff(got, want[m.done:end]))
				}
			}
		}
	})
}

func reversed(s []string) []string {
	s = slices.Clone(s)
	slices.Reverse(s)
	return s
}

// TestExpressionBuilder: queries built with the SDK's expression package
// work, and a projection that leaves out the keys still merges and resumes.
func TestExpressionBuilder(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, s *ddbtest.Server) {
		c, _ := testClient(s.Endpoint)
		r := rand.New(rand.NewPCG(9, 9))
		ds := newDataset(t, s, c, r, 'N', 5, 30)
		e, err := expression.NewBuilder().
			WithKeyCondition(expression.Key("sk").Between(expression.Value(-5), expression.Value(15))).
			WithFilter(expression.Name("v").GreaterThanEqual(expression.Value(20))).
			WithProjection(expression.NamesList(expression.Name("id"))).
			Build()
		if err != nil {
			t.Fatal(err)
		}
		q := scatter.Query{Table: ds.table, PartitionKey: "pk", SortKey: "sk", Base: ds.base, Strategy: shard.Hash(ds.n)}.WithExpression(e)
		want := ids(reference(t, c, q, suffixRange(ds.n)))
		sc := scatter.New(c)
		all := collect(t, sc.All(context.Background(), q))
		if got := ids(all); !slices.Equal(got, want) {
			t.Errorf("All: (-got +want)\n%s", cmp.Diff(got, want))
		}
		for _, it := range all {
			if _, ok := it.Attrs["v"]; ok {
				t.Fatalf("projection ignored: item has v: %v", it.Attrs)
			}
		}
		if got := ids(pages(t, sc, q, 3)); !slices.Equal(got, want) {
			t.Errorf("Page: (-got +want)\n%s", cmp.Diff(got, want))
		}
	})
}

func TestInvalidQuery(t *testing.T) {
	ok := scatter.Query{Table: "t", PartitionKey: "pk", SortKey: "sk", Base: "b", Strategy: shard.Hash(4)}
	tests := []struct {
		name string
		edit func(*scatter.Query)
	}{
		{"no table", func(q *scatter.Query) { q.Table = "" }},
		{"no partition key", func(q *scatter.Query) { q.PartitionKey = "" }},
		{"no base", func(q *scatter.Query) { q.Base = "" }},
		{"no strategy", func(q *scatter.Query) { q.Strategy = nil }},
		{"both strategy and suffixes", func(q *scatter.Query) { q.Suffixes = []int{1} }},
		{"shard count 0", func(q *scatter.Query) { q.Strategy = badN(0) }},
		{"shard count too large", func(q *scatter.Query) { q.Strategy = badN(shard.MaxN + 1) }},
		{"suffix 0", func(q *scatter.Query) { q.Strategy, q.Suffixes = nil, []int{0, 1} }},
		{"suffix twice", func(q *scatter.Query) { q.Strategy, q.Suffixes = nil, []int{3, 1, 3} }},
		{"key too long after suffix", func(q *scatter.Query) { q.Base = string(make([]byte, shard.MaxKeyBytes-1)) }},
		{"index without table key", func(q *scatter.Query) { q.Index = "gsi" }},
		{"sort key is partition key", func(q *scatter.Query) { q.SortKey = "pk" }},
		{"negative page size", func(q *scatter.Query) { q.PageSize = -1 }},
		{"reserved name", func(q *scatter.Query) { q.Names = map[string]string{"#dynashard_pk": "x"} }},
		{"reserved value", func(q *scatter.Query) {
			q.Values = map[string]types.AttributeValue{":dynashard_pk": sv("x")}
		}},
		{"reserved placeholder in filter", func(q *scatter.Query) { q.Filter = "#dynashard_pk = :v" }},
		{"reserved placeholder in condition", func(q *scatter.Query) { q.KeyCondition = "#sk > :dynashard_pk" }},
	}
	// No client: an invalid query must fail before any request.
	sc := scatter.New(nil)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := ok
			tt.edit(&q)
			for it, err := range sc.All(context.Background(), q) {
				if !errorsIs(err, scatter.ErrInvalidQuery) {
					t.Errorf("All: got %v, %v, want ErrInvalidQuery", it, err)
				}
			}
			if _, _, err := sc.Page(context.Background(), q, 10, ""); !errorsIs(err, scatter.ErrInvalidQuery) {
				t.Errorf("Page: got %v, want ErrInvalidQuery", err)
			}
			if _, err := sc.Count(context.Background(), q); !errorsIs(err, scatter.ErrInvalidQuery) {
				t.Errorf("Count: got %v, want ErrInvalidQuery", err)
			}
		})
	}
	if _, _, err := sc.Page(context.Background(), ok, 0, ""); !errorsIs(err, scatter.ErrInvalidQuery) {
		t.Errorf("Page(limit 0): got %v, want ErrInvalidQuery", err)
	}
}

type badN int

func (b badN) N() int          { return int(b) }
func (b badN) Pick(string) int { return 1 }
