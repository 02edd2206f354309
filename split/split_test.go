package split_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/go-cmp/cmp"

	"github.com/dynashard/dynashard"
	"github.com/dynashard/dynashard/internal/ddbtest"
	"github.com/dynashard/dynashard/internal/localddb"
	"github.com/dynashard/dynashard/shard"
	"github.com/dynashard/dynashard/split"
)

func TestNewRefuses(t *testing.T) {
	ok := func() split.Layout {
		return split.Layout{PartitionKey: "Id", Parts: []split.Part{
			{Name: "a", Table: "ta", Attributes: []string{"A"}},
			{Name: "b", Table: "tb", Attributes: []string{"B"}, Version: "V"},
		}}
	}
	sharded := func(f func(*shard.Layout)) split.Layout {
		l := ok()
		l.SortKey = "sk"
		sl := shard.Layout{Table: "tb", PartitionKey: "pk", SortKey: "id", Strategy: shard.Hash(4), Unchecked: true}
		f(&sl)
		l.Parts[1].Shard = &sl
		l.Parts[1].Table = ""
		return l
	}
	tests := []struct {
		name string
		edit func(*split.Layout)
		l    *split.Layout
	}{
		{name: "no partition key", edit: func(l *split.Layout) { l.PartitionKey = "" }},
		{name: "bad key type", edit: func(l *split.Layout) { l.PartitionKeyType = "B" }},
		{name: "sort key is partition key", edit: func(l *split.Layout) { l.SortKey = "Id" }},
		{name: "sort key type without sort key", edit: func(l *split.Layout) { l.SortKeyType = "S" }},
		{name: "no parts", edit: func(l *split.Layout) { l.Parts = nil }},
		{name: "too many parts", edit: func(l *split.Layout) {
			for i := range split.MaxParts {
				l.Parts = append(l.Parts, split.Part{Name: fmt.Sprint("p", i), Table: fmt.Sprint("t", i), Attributes: []string{fmt.Sprint("a", i)}})
			}
		}},
		{name: "empty part name", edit: func(l *split.Layout) { l.Parts[0].Name = "" }},
		{name: "duplicate part name", edit: func(l *split.Layout) { l.Parts[1].Name = "a" }},
		{name: "empty table", edit: func(l *split.Layout) { l.Parts[0].Table = "" }},
		{name: "shared table", edit: func(l *split.Layout) { l.Parts[1].Table = "ta" }},
		{name: "no attributes", edit: func(l *split.Layout) { l.Parts[0].Attributes = nil }},
		{name: "empty attribute", edit: func(l *split.Layout) { l.Parts[0].Attributes = []string{""} }},
		{name: "attribute in two parts", edit: func(l *split.Layout) { l.Parts[1].Attributes = []string{"A"} }},
		{name: "key attribute in a part", edit: func(l *split.Layout) { l.Parts[0].Attributes = []string{"Id"} }},
		{name: "version is an attribute", edit: func(l *split.Layout) { l.Parts[1].Version = "B" }},
		{name: "version of another part", edit: func(l *split.Layout) { l.Parts[0].Version = "V" }},
		{name: "version is a key", edit: func(l *split.Layout) { l.Parts[1].Version = "Id" }},
		{name: "shard checked", l: ptr(sharded(func(sl *shard.Layout) { sl.Unchecked = false }))},
		{name: "shard random", l: ptr(sharded(func(sl *shard.Layout) { sl.Strategy = shard.Random(4) }))},
		{name: "shard bad N", l: ptr(sharded(func(sl *shard.Layout) { sl.Strategy = shard.Hash(0) }))},
		{name: "shard without sort key", l: ptr(sharded(func(sl *shard.Layout) { sl.SortKey = "" }))},
		{name: "shard with index", l: ptr(sharded(func(sl *shard.Layout) { sl.Index, sl.TableKey = "gsi", []string{"pk", "id"} }))},
		{name: "shard table differs", l: ptr(func() split.Layout {
			l := sharded(func(*shard.Layout) {})
			l.Parts[1].Table = "other"
			return l
		}())},
		{name: "shard without logical sort key", l: ptr(func() split.Layout {
			l := sharded(func(*shard.Layout) {})
			l.SortKey = ""
			return l
		}())},
		{name: "shard attribute is its key", l: ptr(func() split.Layout {
			l := sharded(func(*shard.Layout) {})
			l.Parts[1].Attributes = []string{"pk"}
			return l
		}())},
	}
	c := &dynamodb.Client{}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := ok()
			if tt.l != nil {
				l = *tt.l
			} else {
				tt.edit(&l)
			}
			_, err := split.New[map[string]any](c, l)
			if !errors.Is(err, split.ErrInvalidLayout) || !errors.Is(err, dynashard.ErrInvalid) {
				t.Errorf("New: got %v, want ErrInvalidLayout", err)
			}
			if _, err := l.CreateTableInputs(); !errors.Is(err, split.ErrInvalid) {
				t.Errorf("CreateTableInputs: got %v, want ErrInvalid", err)
			}
		})
	}
	if _, err := split.New[map[string]any](nil, ok()); !errors.Is(err, split.ErrInvalid) {
		t.Errorf("nil client: got %v, want ErrInvalid", err)
	}
	if _, err := split.New[map[string]any]((*dynamodb.Client)(nil), ok()); !errors.Is(err, split.ErrInvalid) {
		t.Errorf("typed nil client: got %v, want ErrInvalid", err)
	}
	if _, err := split.New[map[string]any](c, sharded(func(*shard.Layout) {})); err != nil {
		t.Errorf("a valid sharded layout: %v", err)
	}
}

func ptr[T any](v T) *T { return &v }

// TestBadInputSendsNothing: every call refuses bad input with ErrInvalid
// before any request.
func TestBadInputSendsNothing(t *testing.T) {
	s := ddbtest.Get(t, localddb.DynamoDBLocal)
	c := &counting{Client: s.Client()}
	l := guideLayout()
	st := newStore[Product](t, c, l)
	ctx := context.Background()
	var nilCtx context.Context
	var zero split.Store[Product]
	huge := bigProduct()
	huge.Description = strings.Repeat("x", 410_000)
	type extra struct {
		Id    int
		Title string
		Color string
	}
	stx := newStore[extra](t, c, l)
	setTitle := expression.Set(expression.Name("Title"), expression.Value("x"))
	tests := []struct {
		name string
		call func() error
		want error
	}{
		{"nil ctx Get", func() error { _, err := st.Get(nilCtx, split.Key{PK: "1"}, nil); return err }, split.ErrInvalid},
		{"nil ctx Create", func() error { _, err := st.Create(nilCtx, bigProduct()); return err }, split.ErrInvalid},
		{"zero Store", func() error { _, err := zero.Get(ctx, split.Key{PK: "1"}, nil); return err }, split.ErrInvalid},
		{"nil Store", func() error { var p *split.Store[Product]; return p.Delete(ctx, split.Key{PK: "1"}) }, split.ErrInvalid},
		{"empty key", func() error { _, err := st.Get(ctx, split.Key{}, nil); return err }, split.ErrInvalid},
		{"not a number", func() error { _, err := st.Get(ctx, split.Key{PK: "x"}, nil); return err }, split.ErrInvalid},
		{"sort key without one", func() error { return st.Delete(ctx, split.Key{PK: "1", SK: "a"}) }, split.ErrInvalid},
		{"unknown part", func() error { _, err := st.Get(ctx, split.Key{PK: "1"}, []string{"nope"}); return err }, split.ErrInvalid},
		{"part twice", func() error { _, err := st.Get(ctx, split.Key{PK: "1"}, []string{"catalog", "catalog"}); return err }, split.ErrInvalid},
		{"one bad key of many", func() error {
			_, err := st.GetMany(ctx, []split.Key{{PK: "1"}, {PK: "1e999"}}, nil)
			return err
		}, split.ErrInvalid},
		{"Put no parts", func() error { _, err := st.Put(ctx, bigProduct(), nil); return err }, split.ErrInvalid},
		{"Put too large", func() error { _, err := st.Put(ctx, huge, []string{"catalog"}); return err }, split.ErrItemTooLarge},
		{"Create too large", func() error { _, err := st.Create(ctx, huge); return err }, split.ErrItemTooLarge},
		{"attribute of no part", func() error { _, err := stx.Create(ctx, extra{Id: 1, Color: "red"}); return err }, split.ErrInvalid},
		{"negative version", func() error {
			p := bigProduct()
			p.PriceVersion = -1
			_, err := st.Put(ctx, p, []string{"availability"})
			return err
		}, split.ErrInvalid},
		{"condition of unknown part", func() error {
			return st.Delete(ctx, split.Key{PK: "1"}, func(o *split.Options) {
				o.Conditions = map[string]expression.ConditionBuilder{"nope": expression.AttributeExists(expression.Name("x"))}
			})
		}, split.ErrInvalid},
		{"Update of another part's attribute", func() error {
			_, err := st.Update(ctx, split.Key{PK: "1"}, "availability", setTitle)
			return err
		}, split.ErrInvalid},
		{"Update of the key", func() error {
			_, err := st.Update(ctx, split.Key{PK: "1"}, "catalog", expression.Set(expression.Name("Id"), expression.Value(2)))
			return err
		}, split.ErrInvalid},
		{"Update of the version", func() error {
			_, err := st.Update(ctx, split.Key{PK: "1"}, "availability", expression.Set(expression.Name("PriceVersion"), expression.Value(9)))
			return err
		}, split.ErrInvalid},
		{"empty Update", func() error {
			_, err := st.Update(ctx, split.Key{PK: "1"}, "catalog", expression.UpdateBuilder{})
			return err
		}, split.ErrInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := c.n.Load()
			err := tt.call()
			if !errors.Is(err, tt.want) {
				t.Fatalf("got %v, want %v", err, tt.want)
			}
			if sent := c.n.Load() - before; sent != 0 {
				t.Errorf("sent %d requests, want 0", sent)
			}
		})
	}
}

// TestWrites checks each write's conditions on both servers: what
// dynalite lacks (transactions) is refused with ErrNoTransactions and
// leaves nothing behind.
func TestWrites(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, s *ddbtest.Server) {
		ctx := context.Background()
		c := s.Client()
		l := guideLayout()
		createTables(t, s, l)
		st := newStore[Product](t, c, l)
		k := split.Key{PK: "302"}
		bike := Product{Id: 302, Title: "Red Bicycle", Price: "$125.00 USD", QuantityOnHand: "8"}

		if _, err := st.Put(ctx, bike, []string{"availability"}); !errors.Is(err, split.ErrNotFound) {
			t.Errorf("Put before Create: got %v, want ErrNotFound", err)
		}
		if _, err := st.Put(ctx, bike, []string{"catalog"}); !errors.Is(err, split.ErrNotFound) {
			t.Errorf("Put of an unversioned part before Create: got %v, want ErrNotFound", err)
		}
		if _, err := st.Update(ctx, k, "catalog", expression.Set(expression.Name("Title"), expression.Value("x"))); !errors.Is(err, split.ErrNotFound) {
			t.Errorf("Update before Create: got %v, want ErrNotFound", err)
		}
		if s.Kind == localddb.Dynalite {
			_, err := st.Create(ctx, bike)
			var pe *split.PartError
			if !errors.Is(err, split.ErrNoTransactions) || errors.Is(err, split.ErrInvalid) || errors.As(err, &pe) {
				t.Errorf("Create: got %v, want ErrNoTransactions only", err)
			}
			if err := st.Delete(ctx, k); !errors.Is(err, split.ErrNoTransactions) {
				t.Errorf("Delete: got %v, want ErrNoTransactions", err)
			}
			if _, err := st.Get(ctx, k, nil, consistent); !errors.Is(err, split.ErrNotFound) {
				t.Errorf("Get after a refused Create: got %v, want ErrNotFound (nothing written)", err)
			}
			return
		}
		bike, err := st.Create(ctx, bike)
		if err != nil {
			t.Fatal(err)
		}
		_, err = st.Create(ctx, bike)
		var pe *split.PartError
		if !errors.Is(err, split.ErrConflict) || !errors.As(err, &pe) {
			t.Errorf("second Create: got %v, want ErrConflict with a *PartError", err)
		}
		var tce *types.TransactionCanceledException
		if !errors.As(err, &tce) {
			t.Errorf("second Create: %v does not wrap the SDK's exception", err)
		}

		stale := bike
		bike.Price = "$120.00 USD"
		if bike, err = st.Put(ctx, bike, []string{"availability"}); err != nil || bike.PriceVersion != 2 {
			t.Fatalf("Put: version %d, %v; want 2, nil", bike.PriceVersion, err)
		}
		_, err = st.Put(ctx, stale, []string{"availability"})
		if !errors.Is(err, split.ErrConflict) || !errors.As(err, &pe) || pe.Part != "availability" {
			t.Errorf("stale Put: got %v, want ErrConflict naming availability", err)
		}

		// A checkout: take one off the stock if the price is still the one shown.
		cond := func(price string) func(*split.Options) {
			return func(o *split.Options) {
				o.Conditions = map[string]expression.ConditionBuilder{
					"availability": expression.Name("Price").Equal(expression.Value(price)),
				}
			}
		}
		checkout := expression.Set(expression.Name("QuantityOnHand"), expression.Value("7"))
		if _, err := st.Update(ctx, k, "availability", checkout, cond("$125.00 USD")); !errors.Is(err, split.ErrConflict) {
			t.Errorf("Update with a failing condition: got %v, want ErrConflict", err)
		}
		got, err := st.Update(ctx, k, "availability", checkout, cond("$120.00 USD"))
		if err != nil {
			t.Fatal(err)
		}
		want := Product{Id: 302, Price: "$120.00 USD", QuantityOnHand: "7", PriceVersion: 3}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("Update returned (-want +got):\n%s", diff)
		}
		// REMOVE only: no values of the caller's, a version to advance.
		if _, err := st.Update(ctx, k, "availability", expression.Remove(expression.Name("QuantityOnHand"))); err != nil {
			t.Fatal(err)
		}

		// Several parts at once: one transaction.
		bike.PriceVersion = 4
		bike.Title, bike.Price = "Red Bicycle (2026)", "$99.00 USD"
		if bike, err = st.Put(ctx, bike, []string{"catalog", "availability"}); err != nil {
			t.Fatal(err)
		}
		r, err := st.Get(ctx, k, nil, consistent)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(bike, r.Item); diff != "" {
			t.Errorf("Get after Put of two parts (-want +got):\n%s", diff)
		}

		if err := st.Delete(ctx, k, cond("$1.00 USD")); !errors.Is(err, split.ErrConflict) {
			t.Errorf("Delete with a failing condition: got %v, want ErrConflict", err)
		}
		if _, err := st.Get(ctx, k, []string{"catalog"}, consistent); err != nil {
			t.Errorf("a refused Delete deleted the catalog part: %v", err)
		}
		if err := st.Delete(ctx, k); err != nil {
			t.Fatal(err)
		}
		if err := st.Delete(ctx, k); err != nil {
			t.Errorf("Delete of an absent item: %v, want nil", err)
		}
		if _, err := st.Get(ctx, k, nil, consistent); !errors.Is(err, split.ErrNotFound) {
			t.Errorf("Get after Delete: got %v, want ErrNotFound", err)
		}
	})
}

func consistent(o *split.Options) { o.ConsistentRead = true }

// TestShardedPart: a part whose table is spread by a shard.Layout is
// written at the physical key shard computes, and read back.
func TestShardedPart(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, s *ddbtest.Server) {
		ctx := context.Background()
		c := s.Client()
		type Offer struct {
			Sale  string `dynamodbav:"sale"`
			SKU   string `dynamodbav:"sku"`
			Title string `dynamodbav:"title"`
			Stock int    `dynamodbav:"stock"`
		}
		hot := shard.Layout{Table: ddbtest.TableName(), PartitionKey: "pk", SortKey: "sk", Strategy: shard.Hash(8), Unchecked: true}
		l := split.Layout{PartitionKey: "sale", SortKey: "sku", Parts: []split.Part{
			{Name: "basic", Table: ddbtest.TableName(), Attributes: []string{"title"}},
			{Name: "stock", Shard: &hot, Attributes: []string{"stock"}},
		}}
		createTables(t, s, l)
		st := newStore[Offer](t, c, l)
		// Parts exist only through Create; without transactions, write the
		// parts as another program would, then read and update them here.
		tbl, err := shard.NewTable[map[string]any](c, hot)
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]Offer{}
		for i := range 20 {
			o := Offer{Sale: "2026-11-27", SKU: "SKU-" + strconv.Itoa(i), Title: "thing " + strconv.Itoa(i), Stock: i}
			want[o.SKU] = o
			if s.Kind == localddb.DynamoDBLocal {
				if _, err := st.Create(ctx, o); err != nil {
					t.Fatal(err)
				}
				continue
			}
			if _, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: &l.Parts[0].Table, Item: map[string]types.AttributeValue{
				"sale": &types.AttributeValueMemberS{Value: o.Sale}, "sku": &types.AttributeValueMemberS{Value: o.SKU}, "title": &types.AttributeValueMemberS{Value: o.Title},
			}}); err != nil {
				t.Fatal(err)
			}
			if err := tbl.Put(ctx, o.Sale, map[string]any{"sk": o.SKU, "stock": o.Stock}); err != nil {
				t.Fatal(err)
			}
		}
		// The stock part is where shard's Table says it is.
		pk, err := tbl.Key("2026-11-27", "SKU-3")
		if err != nil {
			t.Fatal(err)
		}
		out, err := c.GetItem(ctx, &dynamodb.GetItemInput{TableName: &hot.Table, ConsistentRead: aws.Bool(true), Key: map[string]types.AttributeValue{
			"pk": &types.AttributeValueMemberS{Value: pk}, "sk": &types.AttributeValueMemberS{Value: "SKU-3"},
		}})
		if err != nil || out.Item == nil {
			t.Fatalf("stock part not at %s: %v", pk, err)
		}
		keys := []split.Key{}
		for i := range 20 {
			keys = append(keys, split.Key{PK: "2026-11-27", SK: "SKU-" + strconv.Itoa(i)})
		}
		rs, err := st.GetMany(ctx, keys, nil, consistent)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rs {
			if diff := cmp.Diff(want[r.Key.SK], r.Item); diff != "" || r.Missing != nil {
				t.Errorf("%v (-want +got):\n%s (missing %q)", r.Key, diff, r.Missing)
			}
		}
		got, err := st.Update(ctx, keys[3], "stock", expression.Add(expression.Name("stock"), expression.Value(-1)))
		if err != nil {
			t.Fatal(err)
		}
		if got.Stock != 2 || got.Sale != "2026-11-27" || got.SKU != "SKU-3" {
			t.Errorf("Update: got %+v, want stock 2 under the logical key", got)
		}
	})
}

// TestGetMany reads 250 items' two parts (500 part items: five
// BatchGetItems at least) with some parts and items missing.
func TestGetMany(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, s *ddbtest.Server) {
		ctx := context.Background()
		c := &counting{Client: s.Client()}
		type Row struct {
			ID string `dynamodbav:"id"`
			A  string `dynamodbav:"a"`
			B  string `dynamodbav:"b"`
		}
		l := split.Layout{PartitionKey: "id", Parts: []split.Part{
			{Name: "a", Table: ddbtest.TableName(), Attributes: []string{"a"}},
			{Name: "b", Table: ddbtest.TableName(), Attributes: []string{"b"}},
		}}
		createTables(t, s, l)
		st := newStore[Row](t, c, l)
		var keys []split.Key
		for i := range 250 {
			id := fmt.Sprintf("id-%03d", i)
			keys = append(keys, split.Key{PK: id})
			for j, p := range l.Parts {
				if (i+j)%3 == 0 { // every third item lacks a part, alternately
					continue
				}
				if _, err := c.Client.PutItem(ctx, &dynamodb.PutItemInput{TableName: &p.Table, Item: map[string]types.AttributeValue{
					"id": &types.AttributeValueMemberS{Value: id}, p.Attributes[0]: &types.AttributeValueMemberS{Value: p.Name + id},
				}}); err != nil {
					t.Fatal(err)
				}
			}
		}
		keys = append(keys, keys[7], split.Key{PK: "absent"})
		before := c.n.Load()
		rs, err := st.GetMany(ctx, keys, nil, consistent)
		if err != nil {
			t.Fatal(err)
		}
		if n := c.n.Load() - before; n < 5 {
			t.Errorf("%d requests for 502 part items, want at least 5 (100 keys each)", n)
		}
		for i, r := range rs {
			if i >= 250 {
				break
			}
			want := Row{ID: keys[i].PK}
			var found, missing []string
			for j, name := range []string{"a", "b"} {
				if (i+j)%3 == 0 {
					missing = append(missing, name)
					continue
				}
				found = append(found, name)
				if j == 0 {
					want.A = "a" + want.ID
				} else {
					want.B = "b" + want.ID
				}
			}
			if diff := cmp.Diff(Result{want, found, missing}, Result{r.Item, r.Found, r.Missing}); diff != "" {
				t.Errorf("key %v (-want +got):\n%s", keys[i], diff)
			}
		}
		if diff := cmp.Diff(rs[7], rs[250]); diff != "" {
			t.Errorf("a key given twice differs (-first +second):\n%s", diff)
		}
		if last := rs[251]; last.Found != nil || len(last.Missing) != 2 {
			t.Errorf("absent key: got %+v, want every part missing", last)
		}
	})
}

// Result is the comparable part of a split.Result of any item type.
type Result struct {
	Item           any
	Found, Missing []string
}
