package scatter_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/go-cmp/cmp"

	"github.com/dynashard/dynashard/internal/ddbtest"
	"github.com/dynashard/dynashard/scatter"
	"github.com/dynashard/dynashard/shard"
)

// row is an item written through shard.Table: its id is the sort key.
type row struct {
	SK string `dynamodbav:"sk"`
	ID string `dynamodbav:"id"`
	V  int    `dynamodbav:"v"`
}

// recordedTable creates a table from the layout (pk:S, sk:S, Hash(16)) and
// writes 40 rows under base "day" through shard.Table, which records the
// layout. It returns the layout and the rows' ids.
func recordedTable(t *testing.T, s *ddbtest.Server) (shard.Layout, []string) {
	t.Helper()
	l := layout(ddbtest.TableName(), 'S', shard.Hash(16))
	in, err := l.CreateTableInput()
	if err != nil {
		t.Fatal(err)
	}
	s.CreateTable(t, in)
	tbl, err := shard.NewTable[row](s.Client(), l)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for i := range 40 {
		id := fmt.Sprintf("id-%03d", i)
		if err := tbl.Put(context.Background(), "day", row{SK: id, ID: id, V: i}); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	return l, ids
}

// outcome is what one call returned and the requests it sent.
type outcome struct {
	err                   error
	query, batch, getItem int
	total                 int
}

// calls makes every call of sc on base, one after another, and returns
// what each returned and sent, by name.
func calls(sc *scatter.Scatter, sent *requests, base string, sortKey types.AttributeValue) map[string]outcome {
	out := map[string]outcome{}
	for name, call := range map[string]func() error{
		"All": func() error {
			for _, err := range sc.All(context.Background(), base) {
				if err != nil {
					return err
				}
			}
			return nil
		},
		"Page": func() error {
			_, _, err := sc.Page(context.Background(), base, 5, "")
			return err
		},
		"Count": func() error {
			_, err := sc.Count(context.Background(), base)
			return err
		},
		"Lookup": func() error {
			_, err := sc.Lookup(context.Background(), base, sortKey)
			return err
		},
	} {
		sent.reset()
		err := call()
		out[name] = outcome{err: err, query: sent.of("Query"), batch: sent.of("BatchGetItem"), getItem: sent.of("GetItem"), total: sent.total()}
	}
	return out
}

// TestLayoutMismatch: a Scatter whose layout differs from the one recorded
// for a base (another separator or strategy; N is the base's own, see
// TestReshardReads) fails every call with a
// *shard.LayoutError, after at most the one GetItem of the record and
// before any Query or BatchGetItem.
func TestLayoutMismatch(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, s *ddbtest.Server) {
		written, _ := recordedTable(t, s)
		sep := written
		sep.Codec = shard.Codec{Sep: "#"}
		random := written
		random.Strategy = shard.Random(16)
		for name, l := range map[string]shard.Layout{"separator": sep, "Random(16)": random} {
			t.Run(name, func(t *testing.T) {
				c, sent := countingClient(s.Endpoint)
				sc := newScatter(t, c, l)
				for range 2 { // a mismatch is not cached: each call reads the record
					for call, o := range calls(sc, sent, "day", sv("id-001")) {
						var le *shard.LayoutError
						if !errors.Is(o.err, shard.ErrLayoutMismatch) || !errors.As(o.err, &le) || le.Base != "day" {
							t.Errorf("%s: got %v, want a *shard.LayoutError for base day", call, o.err)
						}
						if errors.Is(o.err, scatter.ErrInvalid) {
							t.Errorf("%s: got %v, want it not to match ErrInvalid", call, o.err)
						}
						if o.query != 0 || o.batch != 0 || o.getItem > 1 || o.total != o.getItem {
							t.Errorf("%s: sent %d requests (%d Query, %d BatchGetItem, %d GetItem), want at most one GetItem",
								call, o.total, o.query, o.batch, o.getItem)
						}
					}
				}
			})
		}
	})
}

// TestLayoutChecked: the Scatter with the recorded layout reads everything,
// and checks the record once per base and client: one GetItem for every
// call of the process.
func TestLayoutChecked(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, s *ddbtest.Server) {
		l, written := recordedTable(t, s)
		direct, _ := testClient(s.Endpoint)
		q := read{l: l, base: "day"}
		want := ids(reference(t, direct, q, suffixRange(16)))
		if len(want) != len(written) {
			t.Fatalf("reference: got %d items, want %d", len(want), len(written))
		}
		c, sent := countingClient(s.Endpoint)
		sc := newScatter(t, c, l)
		if got := ids(collect(t, sc.All(context.Background(), "day"))); !slices.Equal(got, want) {
			t.Errorf("All: (-got +want)\n%s", cmp.Diff(got, want))
		}
		if got := ids(pages(t, sc, q, 7)); !slices.Equal(got, want) {
			t.Errorf("Page: (-got +want)\n%s", cmp.Diff(got, want))
		}
		if n, err := sc.Count(context.Background(), "day"); err != nil || n != int64(len(written)) {
			t.Errorf("Count: got %d, %v, want %d", n, err, len(written))
		}
		items, err := sc.Lookup(context.Background(), "day", sv("id-007"))
		if err != nil || len(items) != 1 || items[0].Suffix != l.Strategy.Pick("id-007") {
			t.Errorf("Lookup: got %v, %v, want id-007 in suffix %d", items, err, l.Strategy.Pick("id-007"))
		}
		// Another Scatter shares the verified record: the cache is the
		// process's (the writer above may have filled it already).
		if _, err := newScatter(t, c, l).Count(context.Background(), "day"); err != nil {
			t.Error(err)
		}
		if g := sent.of("GetItem"); g > 1 {
			t.Errorf("got %d GetItem requests over every call, want at most 1", g)
		}
	})
}

// TestUnchecked: a base written without dynashard has no record; a checked
// layout reads it as is, paying one GetItem per call, and an Unchecked one
// reads it without any GetItem. An Unchecked layout is trusted even when a
// record says otherwise.
func TestUnchecked(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, s *ddbtest.Server) {
		direct, _ := testClient(s.Endpoint)
		ds := newDataset(t, s, direct, rand.New(rand.NewPCG(53, 53)), 'S', 6, 10)
		q := ds.read(shard.Hash(ds.n))
		want := ids(reference(t, direct, q, suffixRange(ds.n)))
		unchecked := q
		unchecked.l.Unchecked = true
		for _, tc := range []struct {
			l       shard.Layout
			getItem int // per call
		}{{q.l, 1}, {unchecked.l, 0}} {
			c, sent := countingClient(s.Endpoint)
			sc := newScatter(t, c, tc.l)
			for range 2 {
				sent.reset()
				if got := ids(collect(t, sc.All(context.Background(), ds.base))); !slices.Equal(got, want) {
					t.Errorf("Unchecked=%v: All: (-got +want)\n%s", tc.l.Unchecked, cmp.Diff(got, want))
				}
				if g := sent.of("GetItem"); g != tc.getItem {
					t.Errorf("Unchecked=%v: got %d GetItem requests, want %d", tc.l.Unchecked, g, tc.getItem)
				}
			}
			sent.reset()
			if n, err := sc.Count(context.Background(), ds.base); err != nil || n != int64(len(want)) {
				t.Errorf("Unchecked=%v: Count: got %d, %v, want %d", tc.l.Unchecked, n, err, len(want))
			}
			if _, err := sc.Lookup(context.Background(), ds.base, sv("a")); err != nil {
				t.Errorf("Unchecked=%v: Lookup: %v", tc.l.Unchecked, err)
			}
			if g := sent.of("GetItem"); g != 2*tc.getItem {
				t.Errorf("Unchecked=%v: Count and Lookup sent %d GetItem requests, want %d", tc.l.Unchecked, g, 2*tc.getItem)
			}
		}

		// A wrong Unchecked layout reads, silently, what it describes.
		written, rows := recordedTable(t, s)
		wrong := written
		wrong.Strategy, wrong.Unchecked = shard.Hash(8), true
		c, sent := countingClient(s.Endpoint)
		n, err := newScatter(t, c, wrong).Count(context.Background(), "day")
		if err != nil || n >= int64(len(rows)) || sent.of("GetItem") != 0 {
			t.Errorf("wrong Unchecked layout: got %d of %d items, %v, %d GetItem; want fewer, no error, no GetItem",
				n, len(rows), err, sent.of("GetItem"))
		}
	})
}

// TestNew: New's error cases, on a client of each server, send nothing;
// a valid layout gives a Scatter that reports it.
func TestNew(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, s *ddbtest.Server) {
		c, sent := countingClient(s.Endpoint)
		l := layout(ddbtest.TableName(), 'N', shard.Hash(4))
		tests := []struct {
			name   string
			c      scatter.Client
			l      func(*shard.Layout)
			opt    func(*scatter.Options)
			layout bool // the error also matches shard.ErrInvalidLayout
		}{
			{name: "nil client"},
			{name: "typed nil client", c: (*dynamodb.Client)(nil)},
			{name: "empty layout", l: func(l *shard.Layout) { *l = shard.Layout{} }, layout: true},
			{name: "no strategy", l: func(l *shard.Layout) { l.Strategy = nil }, layout: true},
			{name: "bad sort key type", l: func(l *shard.Layout) { l.SortKeyType = "SS" }, layout: true},
			{name: "1-byte CursorKey", opt: func(o *scatter.Options) { o.CursorKey = []byte{1} }},
			{name: "15-byte CursorKey", opt: func(o *scatter.Options) { o.CursorKey = make([]byte, 15) }},
			{name: "negative MaxConcurrency", opt: func(o *scatter.Options) { o.MaxConcurrency = -2 }},
			{name: "negative PageSize", opt: func(o *scatter.Options) { o.PageSize = -2 }},
			{name: "suffix above N", opt: func(o *scatter.Options) { o.Suffixes = []int{1, 5} }},
			{name: "suffix repeated", opt: func(o *scatter.Options) { o.Suffixes = []int{2, 2} }},
			{name: "malformed KeyCondition", opt: func(o *scatter.Options) { o.KeyCondition = "sk >" }},
			{name: "KeyCondition of the wrong type", opt: func(o *scatter.Options) {
				o.KeyCondition, o.Values = "sk > :v", map[string]types.AttributeValue{":v": sv("1")}
			}},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				client := tt.c
				if client == nil && tt.name != "nil client" {
					client = c
				}
				l := l
				if tt.l != nil {
					tt.l(&l)
				}
				sc, err := scatter.New(client, l, tt.opt)
				if sc != nil || !errors.Is(err, scatter.ErrInvalidQuery) || !errors.Is(err, scatter.ErrInvalid) {
					t.Errorf("got %v, %v, want ErrInvalidQuery", sc, err)
				}
				if tt.layout && !errors.Is(err, shard.ErrInvalidLayout) {
					t.Errorf("got %v, want it to match shard.ErrInvalidLayout", err)
				}
			})
		}
		sc, err := scatter.New(c, l, func(o *scatter.Options) { o.CursorKey = make([]byte, 16) }, nil)
		if err != nil || !reflect.DeepEqual(sc.Layout(), l) {
			t.Errorf("valid layout: got %v, %v, want a Scatter of %v", sc, err, l)
		}
		if n := sent.total(); n != 0 {
			t.Errorf("New sent %d requests, want 0", n)
		}
	})
}
