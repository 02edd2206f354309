package scatter_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"
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
// All and Page (random limits) both equal the reference model. The "long"
// sets put a common 24-byte prefix before every S and B key, so that the
// merge's prefix words always tie and the whole keys decide.
func TestMergeMatchesReference(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, s *ddbtest.Server) {
		c, _ := testClient(s.Endpoint)
		keys := keysFor(s)
		const common = "2014-07-09T00:00:00.000Z"
		long := func(r *rand.Rand, kind byte) types.AttributeValue {
			switch v := keys(r, kind).(type) {
			case *types.AttributeValueMemberS:
				return sv(common + v.Value)
			case *types.AttributeValueMemberB:
				return bv(append([]byte(common), v.Value...))
			default:
				return v
			}
		}
		for _, set := range []struct {
			name string
			kind byte
			key  func(*rand.Rand, byte) types.AttributeValue
		}{{"S", 'S', keys}, {"N", 'N', keys}, {"B", 'B', keys}, {"S/long", 'S', long}, {"B/long", 'B', long}} {
			kind := set.kind
			t.Run(set.name, func(t *testing.T) {
				r := rand.New(rand.NewPCG(uint64(kind), 7))
				ds := newDatasetOf(t, s, c, r, kind, 7, 25, set.key)
				sc := newScatter(t, c, layout(ds.table, kind, shard.Random(ds.n)))
				for _, cc := range conditions(r, ds) {
					for _, filter := range []bool{false, true} {
						for _, desc := range []bool{false, true} {
							q := ds.read(shard.Random(ds.n))
							q.o = scatter.Options{KeyCondition: cc.cond, Descending: desc,
								Names:  map[string]string{},
								Values: map[string]types.AttributeValue{},
							}
							if cc.cond != "" {
								q.o.Names["#sk"] = "sk"
							}
							for k, v := range cc.values {
								q.o.Values[k] = v
							}
							if filter {
								q.o.Filter = "#v < :x"
								q.o.Names["#v"] = "v"
								q.o.Values[":x"] = nv("50")
							}
							if len(q.o.Values) == 0 {
								q.o.Values = nil
							}
							if len(q.o.Names) == 0 {
								q.o.Names = nil
							}
							name := fmt.Sprintf("%s/filter=%v/desc=%v", cc.name, filter, desc)
							t.Run(name, func(t *testing.T) {
								want := ids(reference(t, c, q, suffixRange(ds.n)))
								if got := ids(collect(t, sc.All(context.Background(), q.base, q.opt))); !slices.Equal(got, want) {
									t.Errorf("All: (-got +want)\n%s", cmp.Diff(got, want))
								}
								q.o.PageSize = int32(1 + r.IntN(6))
								if got := ids(collect(t, sc.All(context.Background(), q.base, q.opt))); !slices.Equal(got, want) {
									t.Errorf("All with PageSize %d: (-got +want)\n%s", q.o.PageSize, cmp.Diff(got, want))
								}
								limit := 1 + r.IntN(40)
								if got := ids(pages(t, sc, q, limit)); !slices.Equal(got, want) {
									t.Errorf("Page(limit %d): (-got +want)\n%s", limit, cmp.Diff(got, want))
								}
								n, err := sc.Count(context.Background(), q.base, q.opt)
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
		sc := newScatter(t, c, layout(ds.table, 'N', shard.Random(ds.n)))
		for _, desc := range []bool{false, true} {
			q := ds.read(shard.Random(ds.n))
			q.o = scatter.Options{Descending: desc, Unordered: true, PageSize: 4}
			want := reference(t, c, q, suffixRange(ds.n))
			for _, got := range [][]scatter.Item{
				collect(t, sc.All(context.Background(), q.base, q.opt)),
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
		key := []byte("a secret of 32 random bytes, say")
		q := ds.read(shard.Hash(ds.n))
		a := newScatter(t, c, q.l, func(o *scatter.Options) { o.CursorKey = key })
		b := newScatter(t, c, q.l, func(o *scatter.Options) { o.CursorKey = key })
		want := ids(reference(t, c, q, suffixRange(ds.n)))
		rev := q
		rev.o.Descending = true
		if got := ids(collect(t, a.All(context.Background(), rev.base, rev.opt))); !slices.Equal(got, reversed(want)) {
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
				items, next, err := a.Page(context.Background(), q.base, 1+r.IntN(15), cur)
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
				items, _, err := b.Page(context.Background(), q.base, limit, m.c)
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
// work, per call and as the Scatter's options, and a projection that
// leaves out the keys still merges and resumes.
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
		q := ds.read(shard.Hash(ds.n))
		scatter.WithExpression(e)(&q.o)
		want := ids(reference(t, c, q, suffixRange(ds.n)))
		sc := newScatter(t, c, q.l)
		all := collect(t, sc.All(context.Background(), ds.base, scatter.WithExpression(e)))
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
		// The same expression as the Scatter's own options.
		own := newScatter(t, c, q.l, scatter.WithExpression(e))
		if got := ids(collect(t, own.All(context.Background(), ds.base))); !slices.Equal(got, want) {
			t.Errorf("All, expression in New: (-got +want)\n%s", cmp.Diff(got, want))
		}
		if n, err := own.Count(context.Background(), ds.base); err != nil || n != int64(len(want)) {
			t.Errorf("Count, expression in New: got %d, %v, want %d", n, err, len(want))
		}
	})
}

// TestInvalidQuery: an invalid layout or invalid options fail New, and
// invalid options or an invalid base fail every call, with ErrInvalidQuery
// (and ErrInvalid) before any request.
func TestInvalidQuery(t *testing.T) {
	tests := []struct {
		name   string
		layout func(*shard.Layout)    // may make the layout invalid
		opts   func(*scatter.Options) // may make the options invalid
		base   *string                // nil means "b"
	}{
		// The layout: New fails, and the error matches shard.ErrInvalidLayout.
		{name: "no table", layout: func(l *shard.Layout) { l.Table = "" }},
		{name: "no partition key", layout: func(l *shard.Layout) { l.PartitionKey = "" }},
		{name: "no strategy", layout: func(l *shard.Layout) { l.Strategy = nil }},
		{name: "shard count 0", layout: func(l *shard.Layout) { l.Strategy = badN(0) }},
		{name: "shard count too large", layout: func(l *shard.Layout) { l.Strategy = badN(shard.MaxN + 1) }},
		{name: "index without table key", layout: func(l *shard.Layout) { l.Index, l.Unchecked = "gsi", true }},
		{name: "index not Unchecked", layout: func(l *shard.Layout) { l.Index, l.TableKey = "gsi", []string{"id"} }},
		{name: "sort key is partition key", layout: func(l *shard.Layout) { l.SortKey = "pk" }},
		{name: "sort key type not S, N or B", layout: func(l *shard.Layout) { l.SortKeyType = "BOOL" }},
		{name: "separator with a digit", layout: func(l *shard.Layout) { l.Codec = shard.Codec{Sep: "1"} }},

		// The base: every call fails.
		{name: "no base", base: aws.String("")},
		{name: "key too long after suffix", base: aws.String(string(make([]byte, shard.MaxKeyBytes-1)))},
		{name: "base not UTF-8", base: aws.String("\xff")},

		// The options: New fails with them, and so does every call given them.
		{name: "suffix outside 1..N", opts: func(o *scatter.Options) { o.Suffixes = []int{5} }},
		{name: "suffix 0", opts: func(o *scatter.Options) { o.Suffixes = []int{0, 1} }},
		{name: "suffix twice", opts: func(o *scatter.Options) { o.Suffixes = []int{3, 1, 3} }},
		{name: "negative page size", opts: func(o *scatter.Options) { o.PageSize = -1 }},
		{name: "negative MaxConcurrency", opts: func(o *scatter.Options) { o.MaxConcurrency = -1 }},
		{name: "negative MaxShardPages", opts: func(o *scatter.Options) { o.MaxShardPages = -1 }},
		{name: "reserved name", opts: func(o *scatter.Options) { o.Names = map[string]string{"#dynashard_pk": "x"} }},
		{name: "reserved value", opts: func(o *scatter.Options) {
			o.Values = map[string]types.AttributeValue{":dynashard_pk": sv("x")}
		}},
		{name: "reserved placeholder in filter", opts: func(o *scatter.Options) { o.Filter = "#dynashard_pk = :v" }},
		{name: "reserved placeholder in condition", opts: func(o *scatter.Options) { o.KeyCondition = "#sk > :dynashard_pk" }},
		{name: "condition without sort key", layout: func(l *shard.Layout) { l.SortKey = "" },
			opts: func(o *scatter.Options) { o.KeyCondition = "#sk > :v" }},
		{name: "condition on another attribute", opts: func(o *scatter.Options) {
			o.KeyCondition, o.Names, o.Values = "#x > :v", map[string]string{"#x": "x"}, map[string]types.AttributeValue{":v": sv("a")}
		}},
		{name: "condition with unknown value", opts: func(o *scatter.Options) { o.KeyCondition = "sk > :v" }},
		{name: "condition with two operators", opts: func(o *scatter.Options) {
			o.KeyCondition, o.Values = "sk > :v AND sk < :w", map[string]types.AttributeValue{":v": sv("a"), ":w": sv("b")}
		}},
		{name: "condition values of two types", opts: func(o *scatter.Options) {
			o.KeyCondition, o.Values = "sk BETWEEN :v AND :w", map[string]types.AttributeValue{":v": sv("a"), ":w": nv("1")}
		}},
		{name: "inverted BETWEEN", opts: func(o *scatter.Options) {
			o.KeyCondition, o.Values = "sk BETWEEN :v AND :w", map[string]types.AttributeValue{":v": sv("b"), ":w": sv("a")}
		}},
		{name: "begins_with on a number", layout: func(l *shard.Layout) { l.SortKeyType = types.ScalarAttributeTypeN },
			opts: func(o *scatter.Options) {
				o.KeyCondition, o.Values = "begins_with(sk, :v)", map[string]types.AttributeValue{":v": nv("1")}
			}},
		{name: "condition against the sort key type", layout: func(l *shard.Layout) { l.SortKeyType = types.ScalarAttributeTypeN },
			opts: func(o *scatter.Options) {
				o.KeyCondition, o.Values = "sk > :v", map[string]types.AttributeValue{":v": sv("a")}
			}},
	}
	// A real client; anything it sent would be counted (and fail).
	c, sent := countingClient(unreachable)
	isInvalid := func(err error) bool {
		return errors.Is(err, scatter.ErrInvalidQuery) && errors.Is(err, scatter.ErrInvalid) && errors.Is(err, shard.ErrInvalid)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := validLayout
			if tt.layout != nil {
				tt.layout(&l)
			}
			if tt.layout != nil || tt.opts != nil {
				sc, err := scatter.New(c, l, tt.opts)
				if sc != nil || !isInvalid(err) {
					t.Errorf("New: got %v, %v, want ErrInvalidQuery", sc, err)
				}
				if l.Validate() != nil && !errors.Is(err, shard.ErrInvalidLayout) {
					t.Errorf("New: got %v, want it to match shard.ErrInvalidLayout", err)
				}
			}
			if l.Validate() != nil {
				return
			}
			sc := newScatter(t, c, l)
			base := "b"
			if tt.base != nil {
				base = *tt.base
			}
			for it, err := range sc.All(context.Background(), base, tt.opts) {
				if !isInvalid(err) {
					t.Errorf("All: got %v, %v, want ErrInvalidQuery", it, err)
				}
			}
			if _, _, err := sc.Page(context.Background(), base, 10, "", tt.opts); !isInvalid(err) {
				t.Errorf("Page: got %v, want ErrInvalidQuery", err)
			}
			if _, err := sc.Count(context.Background(), base, tt.opts); !isInvalid(err) {
				t.Errorf("Count: got %v, want ErrInvalidQuery", err)
			}
			_, err := sc.Lookup(context.Background(), base, sv("x"), tt.opts)
			if !isInvalid(err) {
				t.Errorf("Lookup: got %v, want ErrInvalidQuery", err)
			}
			if tt.base != nil && !errors.Is(err, shard.ErrInvalidKey) {
				t.Errorf("Lookup: got %v, want it to match shard.ErrInvalidKey too", err)
			}
		})
	}
	sc := newScatter(t, c, validLayout)
	if _, _, err := sc.Page(context.Background(), "b", 0, ""); !isInvalid(err) {
		t.Errorf("Page(limit 0): got %v, want ErrInvalidQuery", err)
	}
	if n := sent.total(); n != 0 {
		t.Errorf("invalid queries sent %d requests, want 0", n)
	}
}

type badN int

func (b badN) N() int          { return int(b) }
func (b badN) Pick(string) int { return 1 }
