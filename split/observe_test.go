package split_test

import (
	"context"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/tracing"
	"github.com/google/go-cmp/cmp"

	"github.com/dynashard/dynashard"
	"github.com/dynashard/dynashard/internal/ddbsize"
	"github.com/dynashard/dynashard/internal/ddbtest"
	"github.com/dynashard/dynashard/internal/localddb"
	"github.com/dynashard/dynashard/internal/observe/observetest"
	"github.com/dynashard/dynashard/split"
)

// txUnits is what DynamoDB Local 1.25 reports per started KB of each
// action of a TransactWriteItems (a Put, a Delete): 4 write units, where
// the AWS documentation charges 2 (prepare and commit) and a plain write
// 1. dynalite has no transactions.
const txUnits = 4

// wcu is the write units of a plain write of an item of n bytes: one per
// started KB.
func wcu(n int) float64 { return math.Ceil(float64(n) / 1024) }

// rcu is the read units of reading an item of n bytes with GetItem or
// BatchGetItem: one per started 4 KB, strongly consistent, half that
// eventually consistent.
func rcu(n int, consistent bool) float64 {
	u := math.Ceil(float64(n) / 4096)
	if !consistent {
		u /= 2
	}
	return u
}

// partSize is the size, as DynamoDB counts it (internal/ddbsize), of the
// item split stores for part of p: the key and the part's attributes and
// version as p marshals them. It fails the test for a size within 32
// bytes of a KB boundary, where a counting difference of a few bytes
// between ddbsize and a server could change a figure: the sizes below
// stay clear of them so that each figure follows from the size alone.
func partSize(t *testing.T, p Product, part split.Part) int {
	t.Helper()
	av, err := attributevalue.MarshalMap(p)
	if err != nil {
		t.Fatal(err)
	}
	item := map[string]types.AttributeValue{"Id": av["Id"]}
	for _, a := range append(slices.Clone(part.Attributes), part.Version) {
		if v, ok := av[a]; ok && a != "" {
			item[a] = v
		}
	}
	n, err := ddbsize.ItemSize(item)
	if err != nil {
		t.Fatal(err)
	}
	if r := n % 1024; r < 32 || r > 1024-32 {
		t.Fatalf("part %s of item %d is %d bytes, too near a KB boundary for an exact figure", part.Name, p.Id, n)
	}
	return n
}

// observed is a product whose parts span several KB: catalog about
// 2.6 KB (3 write units, one 4 KB read), availability under 1 KB,
// extended about 5.1 KB (6 write units, two 4 KB reads).
func observed(id int) Product {
	return Product{
		Id: id, Title: "Observed", Description: strings.Repeat("d", 2600),
		Price: "$5.00 USD", QuantityOnHand: "12",
		AverageCustomerRating: "4.5", TrackListing: strings.Repeat("t", 5200),
	}
}

// TestUsage runs every entry point of a Store with a dynashard.Usage in
// the context and asserts the capacity, per table, and the requests the
// server reported, each figure computed from the sizes of the items the
// call wrote or read (see wcu, rcu, txUnits). Failed requests report no
// capacity: a Create, multi-part Put or Delete on dynalite (no
// transactions) costs one request and nothing else.
func TestUsage(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, s *ddbtest.Server) {
		ctx := context.Background()
		c := s.Client()
		l := guideLayout()
		createTables(t, s, l)
		st := newStore[Product](t, c, l)
		catalog, avail, extended := l.Parts[0], l.Parts[1], l.Parts[2]
		tx := s.Kind != localddb.Dynalite

		var u dynashard.Usage
		uctx := dynashard.WithUsage(ctx, &u)
		// check compares u with want and requests, then resets u.
		check := func(t *testing.T, what string, want map[string]dynashard.Capacity, requests int64) {
			t.Helper()
			if want == nil {
				want = map[string]dynashard.Capacity{}
			}
			if diff := cmp.Diff(want, u.Tables()); diff != "" {
				t.Errorf("%s: capacity by table (-want +got):\n%s", what, diff)
			}
			if got := u.Requests(); got != requests {
				t.Errorf("%s: %d requests, want %d", what, got, requests)
			}
			if u.Throttled() != 0 || u.Unprocessed() != 0 {
				t.Errorf("%s: %d throttled, %d unprocessed, want none", what, u.Throttled(), u.Unprocessed())
			}
			u.Reset()
		}
		w := func(units float64) dynashard.Capacity { return dynashard.Capacity{Write: units} }
		r := func(units float64) dynashard.Capacity { return dynashard.Capacity{Read: units} }

		// Create: one TransactWriteItems putting the three parts, each
		// charged txUnits per started KB; the availability part at
		// version 1.
		p := observed(7)
		created, err := st.Create(uctx, p)
		p.PriceVersion = 1
		if tx {
			if err != nil {
				t.Fatal(err)
			}
			check(t, "Create", map[string]dynashard.Capacity{
				catalog.Table:  w(txUnits * wcu(partSize(t, p, catalog))),
				avail.Table:    w(txUnits * wcu(partSize(t, p, avail))),
				extended.Table: w(txUnits * wcu(partSize(t, p, extended))),
			}, 1)
		} else {
			if !errors.Is(err, split.ErrNoTransactions) {
				t.Fatalf("Create on dynalite: got %v, want ErrNoTransactions", err)
			}
			check(t, "Create refused", nil, 1)
			created = p
			seed(t, c, l, p)
		}
		if created.PriceVersion != 1 {
			t.Fatalf("Create: version %d, want 1", created.PriceVersion)
		}

		// Get of one named part: one BatchGetItem, half a unit per
		// started 4 KB (eventually consistent).
		k := split.Key{PK: "7"}
		if _, err := st.Get(uctx, k, []string{"catalog"}); err != nil {
			t.Fatal(err)
		}
		check(t, "Get catalog", map[string]dynashard.Capacity{catalog.Table: r(rcu(partSize(t, p, catalog), false))}, 1)

		// Get of two named parts, strongly consistent: one BatchGetItem,
		// a unit per started 4 KB of each item.
		if _, err := st.Get(uctx, k, []string{"catalog", "extended"}, func(o *split.Options) { o.ConsistentRead = true }); err != nil {
			t.Fatal(err)
		}
		check(t, "consistent Get of catalog and extended", map[string]dynashard.Capacity{
			catalog.Table:  r(rcu(partSize(t, p, catalog), true)),
			extended.Table: r(rcu(partSize(t, p, extended), true)),
		}, 1)

		// GetMany (the listing of several items): every part of two
		// items in one BatchGetItem; each item rounded on its own.
		q := observed(8)
		q.PriceVersion = 1
		q.TrackListing = strings.Repeat("t", 9000) // 3 reads of 4 KB
		seed(t, c, l, q)
		if rs, err := st.GetMany(uctx, []split.Key{k, {PK: "8"}}, nil); err != nil || len(rs) != 2 || len(rs[1].Found) != 3 {
			t.Fatalf("GetMany: %+v, %v; want two items of three parts", rs, err)
		}
		both := map[string]dynashard.Capacity{}
		for _, part := range l.Parts {
			both[part.Table] = r(rcu(partSize(t, p, part), false) + rcu(partSize(t, q, part), false))
		}
		check(t, "GetMany of two items", both, 1)

		// Put of one part: one PutItem of the availability part (its
		// version advanced to 2), a unit per started KB of the larger of
		// the old and the new item.
		p2 := p
		p2.Price = "$4.50 USD"
		if p2, err = st.Put(uctx, p2, []string{"availability"}); err != nil {
			t.Fatal(err)
		}
		check(t, "Put availability", map[string]dynashard.Capacity{
			avail.Table: w(wcu(max(partSize(t, p, avail), partSize(t, p2, avail)))),
		}, 1)

		// Update of one part: one UpdateItem, the same rule.
		if _, err := st.Update(uctx, k, "availability", expression.Set(expression.Name("QuantityOnHand"), expression.Value("11"))); err != nil {
			t.Fatal(err)
		}
		p3 := p2
		p3.QuantityOnHand, p3.PriceVersion = "11", p2.PriceVersion+1
		check(t, "Update availability", map[string]dynashard.Capacity{
			avail.Table: w(wcu(max(partSize(t, p2, avail), partSize(t, p3, avail)))),
		}, 1)

		// Put of two parts: one TransactWriteItems of two Puts of items
		// the size of those they replace.
		p4 := p3
		p4.Title = "Observer" // same length
		p4, err = st.Put(uctx, p4, []string{"catalog", "availability"})
		if tx {
			if err != nil {
				t.Fatal(err)
			}
			check(t, "Put of two parts", map[string]dynashard.Capacity{
				catalog.Table: w(txUnits * wcu(partSize(t, p4, catalog))),
				avail.Table:   w(txUnits * wcu(partSize(t, p4, avail))),
			}, 1)
		} else {
			if !errors.Is(err, split.ErrNoTransactions) {
				t.Fatalf("Put of two parts on dynalite: got %v, want ErrNoTransactions", err)
			}
			check(t, "Put of two parts refused", nil, 1)
			p4 = p3
		}

		// Get of an item that does not exist: ErrNotFound after one
		// BatchGetItem. DynamoDB Local charges nothing for a key it does
		// not find; dynalite charges the minimum, half a unit per key
		// read eventually consistent.
		if _, err := st.Get(uctx, split.Key{PK: "9"}, nil); !errors.Is(err, split.ErrNotFound) {
			t.Fatalf("Get of a missing item: got %v, want ErrNotFound", err)
		}
		missing := map[string]dynashard.Capacity{}
		for _, part := range l.Parts {
			missing[part.Table] = r(0)
			if !tx {
				missing[part.Table] = r(0.5)
			}
		}
		check(t, "Get of a missing item", missing, 1)

		// Delete: one TransactWriteItems of three Deletes, each charged
		// txUnits per started KB of the item it deletes.
		err = st.Delete(uctx, k)
		if tx {
			if err != nil {
				t.Fatal(err)
			}
			check(t, "Delete", map[string]dynashard.Capacity{
				catalog.Table:  w(txUnits * wcu(partSize(t, p4, catalog))),
				avail.Table:    w(txUnits * wcu(partSize(t, p4, avail))),
				extended.Table: w(txUnits * wcu(partSize(t, p4, extended))),
			}, 1)
		} else {
			if !errors.Is(err, split.ErrNoTransactions) {
				t.Fatalf("Delete on dynalite: got %v, want ErrNoTransactions", err)
			}
			check(t, "Delete refused", nil, 1)
		}

		// A one-part layout deletes with one DeleteItem: a unit per
		// started KB of the deleted item, on either server.
		one := split.Layout{PartitionKey: "Id", PartitionKeyType: "N", Parts: []split.Part{catalog}}
		one.Parts[0].Table = ddbtest.TableName()
		createTables(t, s, one)
		single := newStore[Product](t, c, one)
		solo := Product{Id: 7, Title: "Solo", Description: strings.Repeat("d", 1500)}
		seed(t, c, one, solo)
		if err := single.Delete(uctx, k); err != nil {
			t.Fatal(err)
		}
		check(t, "Delete of a one-part item", map[string]dynashard.Capacity{one.Parts[0].Table: w(wcu(partSize(t, solo, one.Parts[0])))}, 1)
	})
}

// seed writes every part of p as split would, with plain PutItems and
// no Usage (dynalite's Create fails for want of transactions).
func seed(t *testing.T, c *dynamodb.Client, l split.Layout, p Product) {
	t.Helper()
	av, err := attributevalue.MarshalMap(p)
	if err != nil {
		t.Fatal(err)
	}
	for _, part := range l.Parts {
		item := map[string]types.AttributeValue{"Id": av["Id"]}
		for _, a := range append(slices.Clone(part.Attributes), part.Version) {
			if v, ok := av[a]; ok && a != "" {
				item[a] = v
			}
		}
		if _, err := c.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(part.Table), Item: item}); err != nil {
			t.Fatal(err)
		}
	}
}

// TestAsksOnlyWhenObserved: with no Usage in the context and no provider
// on the client, no request of any entry point asks DynamoDB for its
// consumed capacity; with a Usage, every request asks for it per index.
func TestAsksOnlyWhenObserved(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, s *ddbtest.Server) {
		ctx := context.Background()
		var a observetest.Asks
		c := s.Client(a.Option)
		l := guideLayout()
		createTables(t, s, l)
		st := newStore[Product](t, c, l)
		var u dynashard.Usage
		for _, tc := range []struct {
			ctx  context.Context
			want types.ReturnConsumedCapacity
		}{{ctx, ""}, {dynashard.WithUsage(ctx, &u), types.ReturnConsumedCapacityIndexes}} {
			p := observed(1)
			seed(t, c, l, p)
			a.Take()
			k := split.Key{PK: "1"}
			p.PriceVersion = 0
			_, _ = st.Create(tc.ctx, observed(2)) // refused on dynalite
			_, _ = st.Get(tc.ctx, k, nil)
			_, _ = st.GetMany(tc.ctx, []split.Key{k}, []string{"catalog"})
			if _, err := st.Put(tc.ctx, p, []string{"availability"}); err != nil {
				t.Fatal(err)
			}
			if _, err := st.Update(tc.ctx, k, "catalog", expression.Set(expression.Name("Title"), expression.Value("x"))); err != nil {
				t.Fatal(err)
			}
			_, _ = st.Put(tc.ctx, observed(1), []string{"catalog", "extended"})
			_ = st.Delete(tc.ctx, k)
			_ = st.Delete(tc.ctx, split.Key{PK: "2"})
			asked := a.Take()
			var seen []types.ReturnConsumedCapacity // of the requests that have the field, by operation
			for _, op := range []string{"GetItem", "PutItem", "UpdateItem", "DeleteItem", "BatchGetItem", "TransactWriteItems"} {
				seen = append(seen, asked[op]...)
			}
			if len(seen) < 8 {
				t.Fatalf("saw %d requests, want at least 8", len(seen))
			}
			for i, rc := range seen {
				if rc != tc.want {
					t.Errorf("with Usage %v: request %d asked for %q, want %q", tc.want != "", i, rc, tc.want)
				}
			}
		}
	})
}

// TestSpans: with a TracerProvider on the client, each entry point opens
// one span named dynashard.split.<Op>, ended, with the tables and the key
// as attributes and the request totals set by End; the SDK's spans of its
// requests are its children. No Usage is needed.
func TestSpans(t *testing.T) {
	s := ddbtest.Get(t, localddb.DynamoDBLocal)
	ctx := context.Background()
	var rec observetest.Tracer
	c := s.Client(func(o *dynamodb.Options) { o.TracerProvider = &rec })
	l := guideLayout()
	createTables(t, s, l)
	st := newStore[Product](t, c, l)
	p, err := st.Create(ctx, observed(5))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Put(ctx, p, []string{"availability"}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Get(ctx, split.Key{PK: "5"}, []string{"catalog"}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Get(ctx, split.Key{PK: "6"}, nil); !errors.Is(err, split.ErrNotFound) {
		t.Fatalf("Get of a missing item: %v", err)
	}
	if _, err := st.Update(ctx, split.Key{PK: "5"}, "nope", expression.Set(expression.Name("Title"), expression.Value("x"))); !errors.Is(err, split.ErrInvalid) {
		t.Fatalf("Update of an unknown part: %v", err)
	}
	if err := st.Delete(ctx, split.Key{PK: "5"}); err != nil {
		t.Fatal(err)
	}
	all := strings.Join([]string{l.Parts[0].Table, l.Parts[1].Table, l.Parts[2].Table}, ",")
	for _, tc := range []struct {
		op       string
		n        int
		table    string
		requests int64
		status   tracing.SpanStatus
	}{
		{"Create", 1, all, 1, tracing.SpanStatusOK},
		{"Put", 1, l.Parts[1].Table, 1, tracing.SpanStatusOK},
		{"Get", 2, l.Parts[0].Table, 1, tracing.SpanStatusOK}, // the second found nothing: an answer, not an error
		{"Update", 1, "", 0, tracing.SpanStatusError},         // refused before any request
		{"Delete", 1, all, 1, tracing.SpanStatusOK},
	} {
		got := rec.Named("dynashard.split." + tc.op)
		if len(got) != tc.n {
			t.Errorf("%d spans dynashard.split.%s, want %d", len(got), tc.op, tc.n)
			continue
		}
		for _, sp := range got {
			if !sp.Ended || sp.Parent != "" || sp.Status != tc.status {
				t.Errorf("%s: ended %v, parent %q, status %v; want ended, a root, status %v", tc.op, sp.Ended, sp.Parent, sp.Status, tc.status)
			}
		}
		sp := got[0]
		if tc.table != "" && (sp.Properties["aws.dynamodb.table_name"] != tc.table || sp.Properties["dynashard.base"] != "5") {
			t.Errorf("%s: table %v, base %v; want %q and 5", tc.op, sp.Properties["aws.dynamodb.table_name"], sp.Properties["dynashard.base"], tc.table)
		}
		if sp.Properties["dynashard.requests"] != tc.requests {
			t.Errorf("%s: dynashard.requests %v, want %d", tc.op, sp.Properties["dynashard.requests"], tc.requests)
		}
		children := len(rec.Children(sp))
		if int64(children) < tc.requests {
			t.Errorf("%s: %d child spans, want the SDK's span of each of its %d requests", tc.op, children, tc.requests)
		}
	}
}

// TestUsageLargePart: a part with a Large value held inline (under the
// chunk store's 4 KiB InlineLimit, so no chunk item): the store's
// requests on the part's item go through split (internal/parentio) and
// are counted once each. Figures follow from the sizes of the items as
// stored, read back after each write. dynalite refuses Create (no
// transactions) after the store's first read.
func TestUsageLargePart(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, s *ddbtest.Server) {
		ctx := context.Background()
		c := s.Client()
		l, _ := docLayout(t, s, c)
		meta, bodyPart := l.Parts[0], l.Parts[1]
		st := newStore[Doc](t, c, l)
		var u dynashard.Usage
		uctx := dynashard.WithUsage(ctx, &u)
		check := func(t *testing.T, what string, want map[string]dynashard.Capacity, requests int64) {
			t.Helper()
			if diff := cmp.Diff(want, u.Tables()); diff != "" {
				t.Errorf("%s: capacity by table (-want +got):\n%s", what, diff)
			}
			if got := u.Requests(); got != requests {
				t.Errorf("%s: %d requests, want %d", what, got, requests)
			}
			u.Reset()
		}
		// stored is the size of the item of table with key ID "d".
		stored := func(table string) int {
			t.Helper()
			out, err := c.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true),
				Key: map[string]types.AttributeValue{"ID": &types.AttributeValueMemberS{Value: "d"}}})
			if err != nil || len(out.Item) == 0 {
				t.Fatalf("reading the part of table %s: %v, %d attributes", table, err, len(out.Item))
			}
			n, err := ddbsize.ItemSize(out.Item)
			if err != nil {
				t.Fatal(err)
			}
			if r := n % 1024; r < 32 || r > 1024-32 {
				t.Fatalf("the part of table %s is %d bytes, too near a KB boundary for an exact figure", table, n)
			}
			return n
		}
		// The store reads the part consistently first (missing: the
		// minimum, one unit), then the transaction puts the meta part and
		// flips the body's item.
		d := Doc{ID: "d", Title: strings.Repeat("T", 1500), Body: body(1, 1000), Format: "txt"}
		d, err := st.Create(uctx, d)
		if s.Kind == localddb.Dynalite {
			if !errors.Is(err, split.ErrNoTransactions) {
				t.Fatalf("Create on dynalite: got %v, want ErrNoTransactions", err)
			}
			check(t, "Create refused", map[string]dynashard.Capacity{bodyPart.Table: {Read: 1}}, 2)
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		metaSize, bodySize := stored(meta.Table), stored(bodyPart.Table)
		check(t, "Create", map[string]dynashard.Capacity{
			meta.Table:     {Write: txUnits * wcu(metaSize)},
			bodyPart.Table: {Read: 1, Write: txUnits * wcu(bodySize)},
		}, 2)

		// Put of the large part alone: a consistent GetItem of the part,
		// then the flip as one UpdateItem (the larger of the old and new
		// item, per started KB).
		d.Body = body(2, 1000)
		if d, err = st.Put(uctx, d, []string{"body"}); err != nil {
			t.Fatal(err)
		}
		after := stored(bodyPart.Table)
		check(t, "Put of the large part", map[string]dynashard.Capacity{
			bodyPart.Table: {Read: rcu(bodySize, true), Write: wcu(max(bodySize, after))},
		}, 2)
		bodySize = after

		// Get: one BatchGetItem; the value is inline, nothing more.
		if _, err := st.Get(uctx, split.Key{PK: "d"}, nil); err != nil {
			t.Fatal(err)
		}
		check(t, "Get", map[string]dynashard.Capacity{
			meta.Table:     {Read: rcu(metaSize, false)},
			bodyPart.Table: {Read: rcu(bodySize, false)},
		}, 1)

		// Delete: the store reads the value's version consistently, then
		// one transaction deletes both parts.
		if err := st.Delete(uctx, split.Key{PK: "d"}); err != nil {
			t.Fatal(err)
		}
		check(t, "Delete", map[string]dynashard.Capacity{
			meta.Table:     {Write: txUnits * wcu(metaSize)},
			bodyPart.Table: {Read: rcu(bodySize, true), Write: txUnits * wcu(bodySize)},
		}, 2)
	})
}
