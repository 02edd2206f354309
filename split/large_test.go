package split_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynashard/dynashard/chunk"
	"github.com/dynashard/dynashard/dynashardtest/faultproxy"
	"github.com/dynashard/dynashard/internal/ddbtest"
	"github.com/dynashard/dynashard/internal/localddb"
	"github.com/dynashard/dynashard/split"
)

// Doc is a document over two parts: meta (a title, read by listings) and
// body (the text, a large value, with its format and a version).
type Doc struct {
	ID          string `dynamodbav:"ID"`
	Title       string `dynamodbav:"Title,omitempty"`
	Body        []byte `dynamodbav:"Body,omitempty"`
	Format      string `dynamodbav:"Format,omitempty"`
	BodyVersion int64  `dynamodbav:"BodyVersion,omitempty"`
}

// Note is Doc with a string body.
type Note struct {
	ID          string `dynamodbav:"ID"`
	Title       string `dynamodbav:"Title,omitempty"`
	Body        string `dynamodbav:"Body,omitempty"`
	Format      string `dynamodbav:"Format,omitempty"`
	BodyVersion int64  `dynamodbav:"BodyVersion,omitempty"`
}

// docLayout is the two parts, the body's value stored through cs (whose
// parent table is body); it creates the tables on s.
func docLayout(t *testing.T, s *ddbtest.Server, c chunk.Client, optFns ...func(*chunk.Options)) (split.Layout, *chunk.Store) {
	t.Helper()
	body := ddbtest.TableName()
	cs, err := chunk.New(c, body, ddbtest.TableName(), optFns...)
	if err != nil {
		t.Fatal(err)
	}
	l := split.Layout{PartitionKey: "ID", Parts: []split.Part{
		{Name: "meta", Table: ddbtest.TableName(), Attributes: []string{"Title"}},
		{Name: "body", Table: body, Attributes: []string{"Body", "Format"}, Version: "BodyVersion",
			Large: &split.LargeField{Attribute: "Body", Store: cs}},
	}}
	createTables(t, s, l)
	return l, cs
}

// largeSizes are on both sides of the chunk store's inline limit (4 KiB)
// and chunk size (384 KiB), and of DynamoDB's item limit (409,600 bytes).
var largeSizes = []int{0, 1, 4095, 4096, 4097, 393_215, 393_216, 393_217, 409_599, 409_600, 409_601, 1 << 20}

func body(seed, n int) []byte {
	b := make([]byte, n)
	x := uint32(seed*2654435761 + 1)
	for i := range b {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		b[i] = byte(x)
	}
	return b
}

// chunkItems counts the items of the chunk table.
func chunkItems(t *testing.T, c *dynamodb.Client, cs *chunk.Store) int {
	t.Helper()
	in, err := cs.ChunkTableInput()
	if err != nil {
		t.Fatal(err)
	}
	out, err := c.Scan(context.Background(), &dynamodb.ScanInput{TableName: in.TableName, Select: types.SelectCount, ConsistentRead: aws.Bool(true)})
	if err != nil {
		t.Fatal(err)
	}
	return int(out.Count)
}

// TestLargeRoundTrip: Get(Put(b)) == b for a []byte and a string value
// of every size around the thresholds, through Create, Put of the large
// part alone and with another part, Get and GetMany; Delete leaves no
// chunk behind.
func TestLargeRoundTrip(t *testing.T) {
	ddbtest.EachTx(t, func(t *testing.T, s *ddbtest.Server) {
		ctx := context.Background()
		c := s.Client()
		l, cs := docLayout(t, s, c)
		docs := newStore[Doc](t, c, l)
		notes := newStore[Note](t, c, l)
		var keys []split.Key
		for i, n := range largeSizes {
			id := fmt.Sprint("doc", i)
			keys = append(keys, split.Key{PK: id})
			d, err := docs.Create(ctx, Doc{ID: id, Title: "t", Body: body(i, n), Format: "raw"})
			if err != nil {
				t.Fatalf("Create of %d bytes: %v", n, err)
			}
			check := func(what string, want Doc) {
				t.Helper()
				r, err := docs.Get(ctx, split.Key{PK: id}, nil, consistent)
				if err != nil || !bytes.Equal(r.Item.Body, want.Body) || r.Item.Format != want.Format || r.Item.BodyVersion != want.BodyVersion || r.Item.Title != want.Title {
					t.Fatalf("%s, %d bytes: got %d bytes, %q v%d, %v; want %d bytes, %q v%d", what, n, len(r.Item.Body), r.Item.Format, r.Item.BodyVersion, err, len(want.Body), want.Format, want.BodyVersion)
				}
			}
			check("after Create", d)
			d.Body, d.Format = body(i+100, largeSizes[(i+5)%len(largeSizes)]), "other"
			if d, err = docs.Put(ctx, d, []string{"body"}); err != nil {
				t.Fatalf("Put of the body: %v", err)
			}
			check("after a Put of the body", d)
			d.Title, d.Body = "t2", body(i+200, n)
			if d, err = docs.Put(ctx, d, []string{"meta", "body"}); err != nil {
				t.Fatalf("Put of both parts: %v", err)
			}
			check("after a Put of both parts", d)

			nid := fmt.Sprint("note", i)
			text := strings.Repeat("é", n/2) + strings.Repeat("x", n%2)
			if _, err := notes.Create(ctx, Note{ID: nid, Title: "n", Body: text}); err != nil {
				t.Fatal(err)
			}
			r, err := notes.Get(ctx, split.Key{PK: nid}, []string{"body"}, consistent)
			if err != nil || r.Item.Body != text {
				t.Fatalf("a string of %d bytes: got %d bytes, %v", len(text), len(r.Item.Body), err)
			}
		}
		rs, err := docs.GetMany(ctx, keys, []string{"body"}, consistent)
		if err != nil {
			t.Fatal(err)
		}
		for i, r := range rs {
			if want := body(i+200, largeSizes[i]); !bytes.Equal(r.Item.Body, want) {
				t.Errorf("GetMany %v: %d bytes, want %d", r.Key, len(r.Item.Body), len(want))
			}
		}
		for i := range largeSizes {
			for _, id := range []string{fmt.Sprint("doc", i), fmt.Sprint("note", i)} {
				if err := docs.Delete(ctx, split.Key{PK: id}); err != nil {
					t.Fatal(err)
				}
				if _, err := docs.Get(ctx, split.Key{PK: id}, nil, consistent); !errors.Is(err, split.ErrNotFound) {
					t.Errorf("Get after Delete: got %v, want ErrNotFound", err)
				}
			}
		}
		if n := chunkItems(t, c, cs); n != 0 {
			t.Errorf("%d chunk items after every Delete, want 0", n)
		}
	})
}

// TestLargeConflicts: a refused write of the large part, alone or with
// another part, changes nothing and leaves no chunk behind; a condition
// of the caller's is checked in the flip; Update changes the part's other
// attributes and leaves the value.
func TestLargeConflicts(t *testing.T) {
	ddbtest.EachTx(t, func(t *testing.T, s *ddbtest.Server) {
		ctx := context.Background()
		c := s.Client()
		l, cs := docLayout(t, s, c)
		docs := newStore[Doc](t, c, l)
		k := split.Key{PK: "d"}
		if _, err := docs.Put(ctx, Doc{ID: "d", Body: body(1, 500_000)}, []string{"body"}); !errors.Is(err, split.ErrNotFound) {
			t.Errorf("Put before Create: got %v, want ErrNotFound", err)
		}
		d, err := docs.Create(ctx, Doc{ID: "d", Title: "t", Body: body(1, 500_000), Format: "raw"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := docs.Create(ctx, d); !errors.Is(err, split.ErrConflict) {
			t.Errorf("Create of an existing item: got %v, want ErrConflict", err)
		}
		stale := d
		stale.BodyVersion, stale.Body, stale.Title = 7, body(2, 800_000), "new"
		if _, err := docs.Put(ctx, stale, []string{"body"}); !errors.Is(err, split.ErrConflict) {
			t.Errorf("Put of a stale version: got %v, want ErrConflict", err)
		}
		if _, err := docs.Put(ctx, stale, []string{"meta", "body"}); !errors.Is(err, split.ErrConflict) {
			t.Errorf("Put of two parts, the body's version stale: got %v, want ErrConflict", err)
		}
		notRaw := func(o *split.Options) {
			o.Conditions = map[string]expression.ConditionBuilder{"body": expression.Name("Format").Equal(expression.Value("gzip"))}
		}
		fresh := d
		fresh.Body, fresh.Title = body(3, 800_000), "new"
		var pe *split.PartError
		if _, err := docs.Put(ctx, fresh, []string{"meta", "body"}, notRaw); !errors.Is(err, split.ErrConflict) || !errors.As(err, &pe) || pe.Part != "body" {
			t.Errorf("Put whose condition on the body fails: got %v, want ErrConflict naming part body", err)
		}
		if _, err := docs.Put(ctx, fresh, []string{"body"}, notRaw); !errors.Is(err, split.ErrConflict) {
			t.Errorf("Put of the body whose condition fails: got %v, want ErrConflict", err)
		}
		r, err := docs.Get(ctx, k, nil, consistent)
		if err != nil || !bytes.Equal(r.Item.Body, d.Body) || r.Item.Title != "t" || r.Item.BodyVersion != 1 {
			t.Errorf("after refused writes: %d bytes, title %q, v%d, %v; want the created item", len(r.Item.Body), r.Item.Title, r.Item.BodyVersion, err)
		}
		if n := chunkItems(t, c, cs); n != 2 {
			t.Errorf("%d chunk items after refused writes, want the created value's 2", n)
		}
		u, err := docs.Update(ctx, k, "body", expression.Set(expression.Name("Format"), expression.Value("text")))
		if err != nil || u.Format != "text" || u.BodyVersion != 2 || u.Body != nil {
			t.Errorf("Update: got %q v%d with %d bytes, %v; want text v2 without the value", u.Format, u.BodyVersion, len(u.Body), err)
		}
		r, err = docs.Get(ctx, k, []string{"body"}, consistent)
		if err != nil || !bytes.Equal(r.Item.Body, d.Body) || r.Item.Format != "text" {
			t.Errorf("after Update: %d bytes, %q, %v; want the value unchanged, format text", len(r.Item.Body), r.Item.Format, err)
		}
		if err := docs.Delete(ctx, k); err != nil {
			t.Fatal(err)
		}
		if err := docs.Delete(ctx, k); err != nil {
			t.Errorf("Delete of a deleted item: %v", err)
		}
		if n := chunkItems(t, c, cs); n != 0 {
			t.Errorf("%d chunk items after Delete, want 0", n)
		}
	})
}

// TestLargeWithoutTransactions: on dynalite a Put of the large part alone
// works (the flip is one UpdateItem); Create, Delete and a Put of both
// parts fail with ErrNoTransactions, change nothing and leave no chunk.
func TestLargeWithoutTransactions(t *testing.T) {
	s := ddbtest.Get(t, localddb.Dynalite)
	ctx := context.Background()
	c := s.Client()
	l, cs := docLayout(t, s, c)
	docs := newStore[Doc](t, c, l)
	if _, err := docs.Create(ctx, Doc{ID: "d", Title: "t", Body: body(1, 500_000)}); !errors.Is(err, split.ErrNoTransactions) {
		t.Fatalf("Create: got %v, want ErrNoTransactions", err)
	}
	if n := chunkItems(t, c, cs); n != 0 {
		t.Errorf("%d chunk items after a refused Create, want 0", n)
	}
	// The item as other code would write it: the body through the chunk
	// store, the title with PutItem.
	key := chunk.Key{PartitionName: "ID", Partition: &types.AttributeValueMemberS{Value: "d"}}
	if _, err := cs.Put(ctx, key, body(1, 500_000), func(o *chunk.PutOptions) { o.Attributes = map[string]any{"BodyVersion": 1} }); err != nil {
		t.Fatal(err)
	}
	meta, _ := attributevalue.MarshalMap(map[string]string{"ID": "d", "Title": "t"})
	if _, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(l.Parts[0].Table), Item: meta}); err != nil {
		t.Fatal(err)
	}
	d := Doc{ID: "d", Title: "t2", Body: body(2, 800_000), BodyVersion: 1}
	if _, err := docs.Put(ctx, d, []string{"meta", "body"}); !errors.Is(err, split.ErrNoTransactions) {
		t.Errorf("Put of both parts: got %v, want ErrNoTransactions", err)
	}
	if err := docs.Delete(ctx, split.Key{PK: "d"}); !errors.Is(err, split.ErrNoTransactions) {
		t.Errorf("Delete: got %v, want ErrNoTransactions", err)
	}
	r, err := docs.Get(ctx, split.Key{PK: "d"}, nil, consistent)
	if err != nil || !bytes.Equal(r.Item.Body, body(1, 500_000)) || r.Item.Title != "t" {
		t.Fatalf("after refused writes: %d bytes, %q, %v; want the item as written", len(r.Item.Body), r.Item.Title, err)
	}
	if n := chunkItems(t, c, cs); n != 2 {
		t.Errorf("%d chunk items after refused writes, want 2", n)
	}
	if d, err = docs.Put(ctx, d, []string{"body"}); err != nil {
		t.Fatalf("Put of the body alone: %v", err)
	}
	r, err = docs.Get(ctx, split.Key{PK: "d"}, []string{"body"}, consistent)
	if err != nil || !bytes.Equal(r.Item.Body, d.Body) || r.Item.BodyVersion != 2 {
		t.Errorf("after a Put of the body: %d bytes v%d, %v; want %d bytes v2", len(r.Item.Body), r.Item.BodyVersion, err, len(d.Body))
	}
}

// TestLargeFailedFlip: through a proxy answering every flip (UpdateItem,
// TransactWriteItems) with HTTP 500 before it reaches the server, a write
// of the large part fails, and the previous value is read whole; through
// one answering 500 after applying it, the store settles the outcome and
// the write succeeds.
func TestLargeFailedFlip(t *testing.T) {
	ddbtest.EachTx(t, func(t *testing.T, s *ddbtest.Server) {
		ctx := context.Background()
		c := s.Client()
		l, _ := docLayout(t, s, c)
		docs := newStore[Doc](t, c, l)
		p, err := faultproxy.New(s.Endpoint, faultproxy.Config{ErrorRate: 1, Ops: []string{"UpdateItem", "TransactWriteItems"}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { p.Close() })
		faulty := newStore[Doc](t, s.Client(func(o *dynamodb.Options) { o.BaseEndpoint = aws.String(p.URL()) }), l)
		d, err := docs.Create(ctx, Doc{ID: "d", Title: "t", Body: body(1, 500_000)})
		if err != nil {
			t.Fatal(err)
		}
		for _, parts := range [][]string{{"body"}, {"meta", "body"}} {
			next := d
			next.Title, next.Body = "new", body(2, 800_000)
			if _, err := faulty.Put(ctx, next, parts); err == nil || errors.Is(err, split.ErrConflict) || errors.Is(err, split.ErrInvalid) {
				t.Errorf("Put of %q whose flips all fail: got %v, want an unknown outcome", parts, err)
			}
			r, err := docs.Get(ctx, split.Key{PK: "d"}, nil, consistent)
			if err != nil || !bytes.Equal(r.Item.Body, d.Body) || r.Item.Title != d.Title || r.Item.BodyVersion != d.BodyVersion {
				t.Errorf("after the failed Put of %q: %d bytes, %q v%d, %v; want the previous item", parts, len(r.Item.Body), r.Item.Title, r.Item.BodyVersion, err)
			}
		}
		p.Set(faultproxy.Config{ErrorAfterRate: 1, Ops: []string{"UpdateItem", "TransactWriteItems"}})
		for i, parts := range [][]string{{"body"}, {"meta", "body"}} {
			next := d
			next.Body = body(3+i, 800_000)
			if len(parts) == 2 {
				next.Title = fmt.Sprint("new", i)
			}
			if d, err = faulty.Put(ctx, next, parts); err != nil {
				t.Fatalf("Put of %q whose flip is applied and answered 500: %v", parts, err)
			}
			r, err := docs.Get(ctx, split.Key{PK: "d"}, nil, consistent)
			if err != nil || !bytes.Equal(r.Item.Body, d.Body) || r.Item.Title != d.Title || r.Item.BodyVersion != d.BodyVersion {
				t.Errorf("after the Put of %q: %d bytes, %q v%d, %v; want the new item", parts, len(r.Item.Body), r.Item.Title, r.Item.BodyVersion, err)
			}
		}
	})
}

// TestLargeRefuses: a Large that cannot work is refused by New, naming the
// part.
func TestLargeRefuses(t *testing.T) {
	c := &dynamodb.Client{}
	store := func(parents, chunks string) *chunk.Store {
		cs, err := chunk.New(c, parents, chunks)
		if err != nil {
			t.Fatal(err)
		}
		return cs
	}
	ok := func() split.Layout {
		return split.Layout{PartitionKey: "ID", Parts: []split.Part{
			{Name: "meta", Table: "tm", Attributes: []string{"Title"}},
			{Name: "body", Table: "tb", Attributes: []string{"Body", "Format"}, Large: &split.LargeField{Attribute: "Body", Store: store("tb", "tc")}},
		}}
	}
	tests := []struct {
		name string
		edit func(*split.Layout)
	}{
		{"no store", func(l *split.Layout) { l.Parts[1].Large.Store = nil }},
		{"no attribute", func(l *split.Layout) { l.Parts[1].Large.Attribute = "" }},
		{"attribute of no part", func(l *split.Layout) { l.Parts[1].Large.Attribute = "Other" }},
		{"attribute of another part", func(l *split.Layout) { l.Parts[1].Large.Attribute = "Title" }},
		{"attribute is the version", func(l *split.Layout) { l.Parts[1].Version = "V"; l.Parts[1].Large.Attribute = "V" }},
		{"store of another table", func(l *split.Layout) { l.Parts[1].Large.Store = store("tm", "tc") }},
		{"chunk table is a part's table", func(l *split.Layout) { l.Parts[1].Large.Store = store("tb", "tm") }},
		{"chunk table shared", func(l *split.Layout) {
			l.Parts[0].Large = &split.LargeField{Attribute: "Title", Store: store("tm", "tc")}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := ok()
			tt.edit(&l)
			if _, err := split.New[Doc](c, l); !errors.Is(err, split.ErrInvalidLayout) {
				t.Errorf("New: got %v, want ErrInvalidLayout", err)
			}
		})
	}
	l := ok()
	if _, err := split.New[Doc](c, l); err != nil {
		t.Fatalf("a valid layout: %v", err)
	}
	ins, err := l.CreateTableInputs()
	if err != nil || len(ins) != 3 || aws.ToString(ins[2].TableName) != "tc" {
		t.Errorf("CreateTableInputs: %d inputs, %v; want the two parts' and the chunk table", len(ins), err)
	}
}

// TestLargeBadInputSendsNothing: bad input to a call with a large part is
// refused with ErrInvalid, naming the part, before any request of split
// or of the chunk store.
func TestLargeBadInputSendsNothing(t *testing.T) {
	s := ddbtest.Get(t, localddb.DynamoDBLocal)
	c := &counting{Client: s.Client()}
	l, _ := docLayout(t, s, c)
	docs := newStore[Doc](t, c, l)
	anys := newStore[map[string]any](t, c, l)
	ctx := context.Background()
	bigFormat := Doc{ID: "d", Body: body(1, 10), Format: strings.Repeat("f", 410_000)}
	many := make([]split.Part, 0, 10)
	for i := range 10 {
		many = append(many, split.Part{Name: fmt.Sprint("p", i), Table: fmt.Sprint("t", i), Attributes: []string{fmt.Sprint("a", i)}})
	}
	tests := []struct {
		name string
		call func() error
		want error
	}{
		{"value neither B nor S", func() error {
			_, err := anys.Put(ctx, map[string]any{"ID": "d", "Body": 5}, []string{"body"})
			return err
		}, split.ErrInvalid},
		{"part too large without its value", func() error { _, err := docs.Create(ctx, bigFormat); return err }, split.ErrItemTooLarge},
		{"value over the store's MaxSize", func() error {
			lc, _ := docLayout(t, s, c, func(o *chunk.Options) { o.MaxSize = 1000 })
			st := newStore[Doc](t, c, lc)
			_, err := st.Put(ctx, Doc{ID: "d", Body: body(1, 1001)}, []string{"body"})
			return err
		}, split.ErrItemTooLarge},
		{"Update of the value", func() error {
			_, err := docs.Update(ctx, split.Key{PK: "d"}, "body", expression.Set(expression.Name("Body"), expression.Value([]byte("x"))))
			return err
		}, split.ErrInvalid},
		{"Update of a chunk store attribute", func() error {
			_, err := docs.Update(ctx, split.Key{PK: "d"}, "body", expression.Set(expression.Name("ChunkVersion"), expression.Value("x")))
			return err
		}, split.ErrInvalid},
		{"Delete with a condition on the large part", func() error {
			return docs.Delete(ctx, split.Key{PK: "d"}, func(o *split.Options) {
				o.Conditions = map[string]expression.ConditionBuilder{"body": expression.AttributeExists(expression.Name("Format"))}
			})
		}, split.ErrInvalid},
		{"transaction over 4 MB with the large part counted at 400 KB", func() error {
			ml := l
			ml.Parts = append(append([]split.Part{}, l.Parts...), many...)
			st := newStore[map[string]any](t, c, ml)
			item := map[string]any{"ID": "d", "Body": []byte("x")}
			for i := range 10 {
				item[fmt.Sprint("a", i)] = strings.Repeat("v", 380_000)
			}
			_, err := st.Create(ctx, item)
			return err
		}, split.ErrItemTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := c.n.Load()
			err := tt.call()
			if !errors.Is(err, tt.want) {
				t.Fatalf("got %v, want %v", err, tt.want)
			}
			var pe *split.PartError
			if !strings.HasPrefix(tt.name, "transaction") && !strings.HasPrefix(tt.name, "Update") { // those name the part in the message
				if !errors.As(err, &pe) || pe.Part != "body" {
					t.Errorf("the error does not name part body: %v", err)
				}
			}
			if sent := c.n.Load() - before; sent != 0 {
				t.Errorf("sent %d requests, want 0", sent)
			}
		})
	}
}
