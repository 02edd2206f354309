package scatter_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/go-cmp/cmp"

	"github.com/dynashard/dynashard/dynashardtest/faultproxy"
	"github.com/dynashard/dynashard/internal/ddbtest"
	"github.com/dynashard/dynashard/scatter"
	"github.com/dynashard/dynashard/shard"
)

// TestLookup: under shard.Random, an item is found by its sort key with
// ⌈N/100⌉ BatchGetItem requests, also when a quarter of the keys come back
// unprocessed; a key written under two suffixes yields both items.
func TestLookup(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, s *ddbtest.Server) {
		direct, _ := testClient(s.Endpoint)
		table := s.Table(t, "pk:S", "sk:S")
		const n = 250
		strategy := shard.Random(n)
		r := rand.New(rand.NewPCG(29, 29))
		where := map[string][]int{} // sort key -> suffixes holding it
		var items []map[string]types.AttributeValue
		for i := range 60 {
			id := fmt.Sprintf("order-%03d", i)
			suffixes := []int{strategy.Pick(id)}
			if i%20 == 0 { // the same id written twice, under another suffix
				suffixes = append(suffixes, 1+(suffixes[0]+r.IntN(n-1))%n)
			}
			slices.Sort(suffixes)
			where[id] = suffixes
			for _, sfx := range suffixes {
				items = append(items, map[string]types.AttributeValue{
					"pk": sv(shard.Key("day", sfx)), "sk": sv(id), "v": nv(fmt.Sprint(sfx)), "w": sv("x"),
				})
			}
		}
		putAll(t, direct, table, items)
		where["order-999"] = nil // never written

		l := layout(table, 'S', strategy)
		p := newProxy(t, s.Endpoint, faultproxy.Config{UnprocessedRate: 0.25, Seed: 3})
		for _, endpoint := range []string{s.Endpoint, p.URL()} {
			c, _ := testClient(endpoint)
			checked := 0
			for id, want := range where {
				if checked++; endpoint == p.URL() && checked > 12 {
					break
				}
				sc := newScatter(t, c, l)
				got, err := sc.Lookup(context.Background(), "day", sv(id))
				if err != nil {
					t.Fatalf("Lookup(%s): %v", id, err)
				}
				var suffixes []int
				for _, it := range got {
					suffixes = append(suffixes, it.Suffix)
					if show(it.Attrs["sk"]) != id || show(it.Attrs["v"]) != fmt.Sprint(it.Suffix) {
						t.Errorf("Lookup(%s): got item %v from suffix %d", id, it.Attrs, it.Suffix)
					}
				}
				if !slices.Equal(suffixes, want) {
					t.Errorf("Lookup(%s): got suffixes %v, want %v", id, suffixes, want)
				}
				if endpoint == s.Endpoint {
					if got, want := sc.Stats().BatchGets, int64((n+99)/100); got != want {
						t.Errorf("Lookup(%s): got %d BatchGetItem requests, want %d", id, got, want)
					}
				}
			}
		}

		c, _ := testClient(s.Endpoint)
		sc := newScatter(t, c, l)
		got, err := sc.Lookup(context.Background(), "day", sv("order-001"), func(o *scatter.Options) {
			o.Projection, o.Names = "#v", map[string]string{"#v": "v"}
		})
		if err != nil || len(got) != 1 {
			t.Fatalf("got %v, %v, want one item", got, err)
		}
		if diff := cmp.Diff(slices.Sorted(func(yield func(string) bool) {
			for k := range got[0].Attrs {
				if !yield(k) {
					return
				}
			}
		}), []string{"pk", "v"}); diff != "" {
			t.Errorf("projected attributes (-got +want)\n%s", diff)
		}

		index := l
		index.Index, index.TableKey, index.Unchecked = "gsi", []string{"pk", "sk"}, true
		counted, sent := countingClient(s.Endpoint)
		for name, tc := range map[string]struct {
			l   shard.Layout
			opt func(*scatter.Options)
			key types.AttributeValue
		}{
			"index":  {index, nil, sv("x")},
			"filter": {l, func(o *scatter.Options) { o.Filter = "v > :x" }, sv("x")},
			"key condition": {l, func(o *scatter.Options) {
				o.KeyCondition, o.Values = "sk = :x", map[string]types.AttributeValue{":x": sv("x")}
			}, sv("x")},
			"empty sort key":      {l, nil, sv("")},
			"nil sort key":        {l, nil, nil},
			"wrong type":          {l, nil, &types.AttributeValueMemberBOOL{Value: true}},
			"not the SortKeyType": {l, nil, nv("1")},
		} {
			if _, err := newScatter(t, counted, tc.l).Lookup(context.Background(), "day", tc.key, tc.opt); !errors.Is(err, scatter.ErrInvalidQuery) {
				t.Errorf("%s: got %v, want ErrInvalidQuery", name, err)
			}
		}
		if n := sent.total(); n != 0 {
			t.Errorf("invalid lookups sent %d requests, want 0", n)
		}
	})
}
