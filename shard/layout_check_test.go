package shard_test

import (
	"context"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"
	"github.com/google/go-cmp/cmp"

	"github.com/dynashard/dynashard/internal/ddbtest"
	"github.com/dynashard/dynashard/repo"
	"github.com/dynashard/dynashard/scatter"
	"github.com/dynashard/dynashard/shard"
)

// opClient returns a real SDK client for s and a function that returns,
// and resets, the count of requests it sent per operation.
func opClient(s *ddbtest.Server) (*dynamodb.Client, func() map[string]int) {
	var mu sync.Mutex
	ops := map[string]int{}
	c := s.Client(func(o *dynamodb.Options) {
		o.APIOptions = append(o.APIOptions, func(st *middleware.Stack) error {
			return st.Finalize.Add(middleware.FinalizeMiddlewareFunc("ops", func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
				mu.Lock()
				ops[awsmiddleware.GetOperationName(ctx)]++
				mu.Unlock()
				return next.HandleFinalize(ctx, in)
			}), middleware.After)
		})
	})
	return c, func() map[string]int {
		mu.Lock()
		defer mu.Unlock()
		got := ops
		ops = map[string]int{}
		return got
	}
}

// keyed carries every key attribute name TestLayoutKeySchema uses, so
// that no Put is refused before its layout check.
type keyed struct {
	PK  string `dynamodbav:"pk"`
	GPK string `dynamodbav:"gpk"`
	SK  string `dynamodbav:"sk"`
	Tag string `dynamodbav:"tag"`
}

// TestLayoutKeySchema: a Layout whose key attributes are not the table's
// is a *LayoutError naming each differing key, from every entry point,
// after the refused record read and one DescribeTable: no data request.
func TestLayoutKeySchema(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, s *ddbtest.Server) {
		ctx := context.Background()
		name := s.Table(t, "pk:S", "sk:S")
		good := shard.Layout{Table: name, PartitionKey: "pk", SortKey: "sk", Strategy: shard.Hash(4)}
		writer, err := shard.NewTable[keyed](s.Client(), good)
		if err != nil {
			t.Fatal(err)
		}
		if err := writer.Put(ctx, "day", keyed{SK: "a", Tag: "a"}); err != nil {
			t.Fatal(err)
		}
		item := keyed{SK: "b", Tag: "b"}
		stored := name + ": pk=pk sk=sk:S"
		for _, tc := range []struct {
			name  string
			l     shard.Layout
			diffs int
		}{
			{"sort key tag", shard.Layout{Table: name, PartitionKey: "pk", SortKey: "tag", Strategy: shard.Hash(4)}, 1},
			{"partition key gpk", shard.Layout{Table: name, PartitionKey: "gpk", SortKey: "sk", Strategy: shard.Hash(4)}, 1},
			{"both", shard.Layout{Table: name, PartitionKey: "gpk", SortKey: "tag", Strategy: shard.Hash(4)}, 2},
		} {
			t.Run(tc.name, func(t *testing.T) {
				c, sent := opClient(s)
				tbl, err := shard.NewTable[keyed](c, tc.l)
				if err != nil {
					t.Fatal(err)
				}
				sc, err := scatter.New(c, tc.l)
				if err != nil {
					t.Fatal(err)
				}
				r, err := repo.New[keyed](c, tc.l)
				if err != nil {
					t.Fatal(err)
				}
				calls := map[string]func() error{
					"Table.Put": func() error { return tbl.Put(ctx, "day", item) },
					"Table.Get": func() error { _, err := tbl.Get(ctx, "day", "a"); return err },
					"scatter.All": func() error {
						for _, err := range sc.All(ctx, "day") {
							if err != nil {
								return err
							}
						}
						return nil
					},
					"scatter.Count": func() error { _, err := sc.Count(ctx, "day"); return err },
					"repo.Put":      func() error { _, err := r.Put(ctx, "day", item); return err },
					"repo.Get":      func() error { _, err := r.Get(ctx, "day", "a"); return err },
				}
				sent()
				for call, f := range calls {
					err := f()
					var le *shard.LayoutError
					if !errors.Is(err, shard.ErrLayoutMismatch) || !errors.As(err, &le) {
						t.Errorf("%s: %v, want a *LayoutError", call, err)
						continue
					}
					if le.Base != "day" || le.Stored != stored || len(le.Keys) != tc.diffs {
						t.Errorf("%s: base %q, stored %q, keys %q; want day, %q, %d keys", call, le.Base, le.Stored, le.Keys, stored, tc.diffs)
					}
					// The refused record read and the description only.
					if diff := cmp.Diff(map[string]int{"GetItem": 1, "DescribeTable": 1}, sent()); diff != "" {
						t.Errorf("%s: requests (-want +got):\n%s", call, diff)
					}
				}
			})
		}
	})
}

// TestLayoutKeySchemaForms: every way a key schema can differ is named,
// through Layout.Verify, and a Layout that matches the table still passes.
func TestLayoutKeySchemaForms(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, s *ddbtest.Server) {
		ctx := context.Background()
		withSK := s.Table(t, "pk:S", "sk:S")
		noSK := s.Table(t, "pk:S")
		numPK := s.Table(t, "pk:N", "sk:S")
		for _, tc := range []struct {
			name   string
			l      shard.Layout
			stored string
			keys   []string
		}{
			{"sort key type", shard.Layout{Table: withSK, PartitionKey: "pk", SortKey: "sk", SortKeyType: "N", Strategy: shard.Hash(2)},
				withSK + ": pk=pk sk=sk:S", []string{"sk=sk:N, the table's sk=sk:S"}},
			{"no sort key", shard.Layout{Table: withSK, PartitionKey: "pk", Strategy: shard.Hash(2)},
				withSK + ": pk=pk sk=sk:S", []string{"no sk, the table's sk=sk:S"}},
			{"extra sort key", shard.Layout{Table: noSK, PartitionKey: "pk", SortKey: "sk", Strategy: shard.Hash(2)},
				noSK + ": pk=pk", []string{"sk=sk:S, the table has no sort key"}},
			{"partition key type", shard.Layout{Table: numPK, PartitionKey: "pk", SortKey: "sk", Strategy: shard.Hash(2)},
				numPK + ": pk=pk:N sk=sk:S", []string{"pk=pk, the table's pk=pk:N"}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				err := tc.l.Verify(ctx, s.Client(), "day")
				var le *shard.LayoutError
				if !errors.As(err, &le) || !errors.Is(err, shard.ErrLayoutMismatch) {
					t.Fatalf("Verify: %v, want a *LayoutError", err)
				}
				if le.Stored != tc.stored || !cmp.Equal(le.Keys, tc.keys) {
					t.Errorf("stored %q, keys %q; want %q, %q", le.Stored, le.Keys, tc.stored, tc.keys)
				}
			})
		}
		for _, l := range []shard.Layout{
			{Table: withSK, PartitionKey: "pk", SortKey: "sk", Strategy: shard.Hash(2)},
			{Table: noSK, PartitionKey: "pk", Strategy: shard.Hash(2)},
		} {
			if err := l.Verify(ctx, s.Client(), "day"); err != nil {
				t.Errorf("Verify %v: %v", l, err)
			}
		}
		// Any other refusal stays the SDK's error.
		bad := shard.Layout{Table: "ab", PartitionKey: "pk", SortKey: "sk", Strategy: shard.Hash(2)}
		if err := bad.Verify(ctx, s.Client(), "day"); err == nil || errors.Is(err, shard.ErrLayoutMismatch) {
			t.Errorf("Verify of table %q: %v, want the SDK's error", bad.Table, err)
		}
	})
}

// TestLayoutErrorBounded: a LayoutError quotes a bounded prefix of a
// stored layout of any size.
func TestLayoutErrorBounded(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, s *ddbtest.Server) {
		ctx := context.Background()
		c := s.Client()
		name := s.Table(t, "pk:S", "sk:S")
		huge := "v1 pk=pk sk=sk:S sep=\".\" strategy=" + strings.Repeat("é", 199_000)
		_, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(name), Item: map[string]types.AttributeValue{
			"pk":               &types.AttributeValueMemberS{Value: "day#dynashard"},
			"sk":               &types.AttributeValueMemberS{Value: "dynashard#layout"},
			"dynashard:layout": &types.AttributeValueMemberS{Value: huge},
			"dynashard:shards": &types.AttributeValueMemberL{Value: []types.AttributeValue{&types.AttributeValueMemberN{Value: "4"}}},
		}})
		if err != nil {
			t.Fatal(err)
		}
		_, err = newOrders(t, c, name, shard.Hash(4)).Get(ctx, "day", "a")
		var le *shard.LayoutError
		if !errors.As(err, &le) {
			t.Fatalf("Get: %v, want a *LayoutError", err)
		}
		// 256 bytes of the stored layout, then "… (N bytes)".
		if n := len(err.Error()); n > 600 {
			t.Errorf("message of %d bytes, want at most 600", n)
		}
		want := fmt.Sprintf("… (%d bytes)", len(huge)-len("v1 "))
		if !strings.Contains(le.Stored, want) || len(le.Stored) > 400 {
			t.Errorf("Stored = %q… (%d bytes), want at most 256 bytes of the layout and %q", clip(le.Stored), len(le.Stored), want)
		}
	})
}

// TestIsRecordByKey: IsRecord recognises a record by its key, also in a
// keys-only Scan, and never takes a data item for one.
func TestIsRecordByKey(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, s *ddbtest.Server) {
		ctx := context.Background()
		c := s.Client()
		name := s.Table(t, "pk:S", "sk:S")
		tbl := newOrders(t, c, name, shard.Hash(4))
		for _, base := range []string{"d1", "d2"} {
			for i := range 3 {
				// A note that looks like a record's partition key.
				if err := tbl.Put(ctx, base, Order{ID: fmt.Sprint("o", i), Note: base + "#dynashard"}); err != nil {
					t.Fatal(err)
				}
			}
		}
		for _, proj := range []string{"", "pk, sk", "pk", "pk, note"} {
			in := &dynamodb.ScanInput{TableName: aws.String(name), ConsistentRead: aws.Bool(true)}
			if proj != "" {
				in.ProjectionExpression = aws.String(proj)
			}
			out, err := c.Scan(ctx, in)
			if err != nil {
				t.Fatal(err)
			}
			records := 0
			for _, it := range out.Items {
				pk := it["pk"].(*types.AttributeValueMemberS).Value
				want := strings.HasSuffix(pk, "#dynashard")
				if got := shard.IsRecord(it); got != want {
					t.Errorf("projection %q: IsRecord of the item at %s (%d attributes) = %v, want %v", proj, pk, len(it), got, want)
				}
				if want {
					records++
				}
			}
			if records != 2 {
				t.Errorf("projection %q: %d records in %d items, want 2", proj, records, len(out.Items))
			}
		}
	})
}

// TestIsRecordForms: the record's key in every sort-key type, and items
// that are not records.
func TestIsRecordForms(t *testing.T) {
	S := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	for _, tc := range []struct {
		name string
		item map[string]types.AttributeValue
		want bool
	}{
		{"S sort key", map[string]types.AttributeValue{"k": S("b#dynashard"), "s": S("dynashard#layout")}, true},
		{"B sort key", map[string]types.AttributeValue{"k": S("b#dynashard"), "s": &types.AttributeValueMemberB{Value: []byte("dynashard#layout")}}, true},
		{"N sort key", map[string]types.AttributeValue{"k": S("b#dynashard"), "s": &types.AttributeValueMemberN{Value: "0"}}, true},
		{"no sort key", map[string]types.AttributeValue{"k": S("b#dynashard")}, true},
		{"whole record", map[string]types.AttributeValue{"k": S("b#dynashard"), "dynashard:layout": S("v1 …"), "dynashard:rev": &types.AttributeValueMemberN{Value: "3"}}, true},
		{"empty", map[string]types.AttributeValue{}, false},
		{"suffix alone", map[string]types.AttributeValue{"k": S("#dynashard")}, false},
		{"data item", map[string]types.AttributeValue{"k": S("b.3"), "s": S("dynashard#layout")}, false},
		{"data with a record-like value", map[string]types.AttributeValue{"k": S("b.3"), "s": S("x"), "note": S("b#dynashard")}, false},
		{"two record-like values", map[string]types.AttributeValue{"k": S("b#dynashard"), "s": S("c#dynashard")}, false},
		{"other attribute", map[string]types.AttributeValue{"k": S("b#dynashard"), "s": S("dynashard#layout"), "x": S("1")}, false},
	} {
		if got := shard.IsRecord(tc.item); got != tc.want {
			t.Errorf("%s: IsRecord = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestLayoutStringDoc: Layout.String's documented form is its output.
func TestLayoutStringDoc(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "layout.go", nil, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	var doc string
	for _, d := range f.Decls {
		if fn, ok := d.(*ast.FuncDecl); ok && fn.Name.Name == "String" && fn.Recv != nil {
			if id, ok := fn.Recv.List[0].Type.(*ast.Ident); ok && id.Name == "Layout" {
				doc = fn.Doc.Text()
			}
		}
	}
	parts := strings.Split(doc, "`")
	if len(parts) < 3 {
		t.Fatalf("Layout.String's doc quotes no example: %q", doc)
	}
	l := shard.Layout{Table: "orders", PartitionKey: "pk", SortKey: "sk", Strategy: shard.Hash(16)}
	if got, want := l.String(), parts[1]; got != want {
		t.Errorf("Layout.String() = %s, documented %s", got, want)
	}
}

// TestMalformedRecordFamily: a record dynashard did not write fails every
// entry point with ErrMalformedRecord, as the docs of shard, scatter and
// repo say, before any data request.
func TestMalformedRecordFamily(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, s *ddbtest.Server) {
		ctx := context.Background()
		name := s.Table(t, "pk:S", "sk:S")
		_, err := s.Client().PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(name), Item: map[string]types.AttributeValue{
			"pk":               &types.AttributeValueMemberS{Value: "day#dynashard"},
			"sk":               &types.AttributeValueMemberS{Value: "dynashard#layout"},
			"dynashard:layout": &types.AttributeValueMemberS{Value: `v1 pk=pk sk=sk:S sep="." strategy=hash`},
			"dynashard:shards": &types.AttributeValueMemberL{},
		}})
		if err != nil {
			t.Fatal(err)
		}
		l := shard.Layout{Table: name, PartitionKey: "pk", SortKey: "sk", Strategy: shard.Hash(4)}
		c, sent := opClient(s)
		tbl, err := shard.NewTable[Order](c, l)
		if err != nil {
			t.Fatal(err)
		}
		sc, err := scatter.New(c, l)
		if err != nil {
			t.Fatal(err)
		}
		r, err := repo.New[Order](c, l)
		if err != nil {
			t.Fatal(err)
		}
		for call, f := range map[string]func() error{
			"Table.Put":     func() error { return tbl.Put(ctx, "day", Order{ID: "a"}) },
			"Table.Get":     func() error { _, err := tbl.Get(ctx, "day", "a"); return err },
			"scatter.Count": func() error { _, err := sc.Count(ctx, "day"); return err },
			"repo.Put":      func() error { _, err := r.Put(ctx, "day", Order{ID: "a"}); return err },
			"repo.Get":      func() error { _, err := r.Get(ctx, "day", "a"); return err },
		} {
			sent()
			err := f()
			if !errors.Is(err, shard.ErrMalformedRecord) || errors.Is(err, shard.ErrInvalid) || errors.Is(err, shard.ErrLayoutMismatch) {
				t.Errorf("%s: %v, want ErrMalformedRecord only", call, err)
			}
			if diff := cmp.Diff(map[string]int{"GetItem": 1}, sent()); diff != "" {
				t.Errorf("%s: requests (-want +got):\n%s", call, diff)
			}
		}
	})
}
