package shard_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"
	"github.com/google/go-cmp/cmp"

	"github.com/dynashard/dynashard/internal/ddbtest"
	"github.com/dynashard/dynashard/internal/exampletest"
	"github.com/dynashard/dynashard/internal/localddb"
	"github.com/dynashard/dynashard/shard"
)

func TestMain(m *testing.M) { exampletest.Main(m) }

type Order struct {
	Day    string `dynamodbav:"pk"` // set by the Table to the physical key
	ID     string `dynamodbav:"sk"`
	Amount int    `dynamodbav:"amount"`
	Note   string `dynamodbav:"note,omitempty"`
}

// countingClient returns a real SDK client for s that counts the requests
// it sends, so tests can prove validation happens before any request.
func countingClient(s *ddbtest.Server) (*dynamodb.Client, *atomic.Int64) {
	var n atomic.Int64
	c := s.Client(func(o *dynamodb.Options) {
		o.APIOptions = append(o.APIOptions, func(st *middleware.Stack) error {
			return st.Finalize.Add(middleware.FinalizeMiddlewareFunc("count", func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
				n.Add(1)
				return next.HandleFinalize(ctx, in)
			}), middleware.After)
		})
	})
	return c, &n
}

// rawGet reads an item by its physical key, bypassing the Table.
func rawGet(t *testing.T, c *dynamodb.Client, table, pk, sk string) map[string]types.AttributeValue {
	t.Helper()
	out, err := c.GetItem(context.Background(), &dynamodb.GetItemInput{
		TableName:      aws.String(table),
		ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{
			"pk": &types.AttributeValueMemberS{Value: pk},
			"sk": &types.AttributeValueMemberS{Value: sk},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return out.Item
}

func TestTableCalculated(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, s *ddbtest.Server) {
		ctx := context.Background()
		c := s.Client()
		for _, st := range []shard.Strategy{shard.Hash(200), shard.CodePointProduct(10)} {
			for _, codec := range []shard.Codec{{}, {Sep: "#"}} {
				// A table per layout: a base is recorded with one layout.
				name := s.Table(t, "pk:S", "sk:S")
				tbl, err := shard.NewTable[Order](c, shard.Layout{Table: name, PartitionKey: "pk", SortKey: "sk", Strategy: st, Codec: codec})
				if err != nil {
					t.Fatal(err)
				}
				base := "2014-07-09"
				for _, id := range []string{"ORD-00000001", "ORD-00000002", "Müller-😀"} {
					in := Order{ID: id, Amount: 42, Note: "n"}
					if err := tbl.Put(ctx, base, in); err != nil {
						t.Fatalf("%v Put(%q): %v", st, id, err)
					}
					// The item is stored under exactly the documented key.
					wantPK := codec.Key(base, st.Pick(id))
					if raw := rawGet(t, c, name, wantPK, id); raw == nil {
						t.Fatalf("%v: item %q not under physical key %q", st, id, wantPK)
					}
					if k, err := tbl.Key(base, id); err != nil || k != wantPK {
						t.Errorf("Key(%q, %q) = %q, %v, want %q", base, id, k, err, wantPK)
					}
					got, err := tbl.Get(ctx, base, id, func(o *shard.Options) { o.ConsistentRead = true })
					if err != nil {
						t.Fatalf("Get(%q): %v", id, err)
					}
					want := in
					want.Day = wantPK
					if diff := cmp.Diff(want, got); diff != "" {
						t.Errorf("Get(%q) (-want +got):\n%s", id, diff)
					}
					upd, err := tbl.Update(ctx, base, id, expression.Set(expression.Name("amount"), expression.Value(43)))
					if err != nil {
						t.Fatalf("Update(%q): %v", id, err)
					}
					want.Amount = 43
					if diff := cmp.Diff(want, upd); diff != "" {
						t.Errorf("Update(%q) (-want +got):\n%s", id, diff)
					}
					if err := tbl.Delete(ctx, base, id); err != nil {
						t.Fatalf("Delete(%q): %v", id, err)
					}
					if _, err := tbl.Get(ctx, base, id, func(o *shard.Options) { o.ConsistentRead = true }); !errors.Is(err, shard.ErrNotFound) {
						t.Errorf("Get after Delete: %v, want ErrNotFound", err)
					}
				}
			}
		}
	})
}

func TestTableConditions(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, s *ddbtest.Server) {
		ctx := context.Background()
		name := s.Table(t, "pk:S", "sk:S")
		tbl, err := shard.NewTable[Order](s.Client(), shard.Layout{Table: name, PartitionKey: "pk", SortKey: "sk", Strategy: shard.Hash(50)})
		if err != nil {
			t.Fatal(err)
		}
		notExists := func(o *shard.Options) { o.Condition = expression.AttributeNotExists(expression.Name("sk")) }
		if err := tbl.Put(ctx, "d", Order{ID: "a", Amount: 1}, notExists); err != nil {
			t.Fatalf("first conditional Put: %v", err)
		}
		var ccf *types.ConditionalCheckFailedException
		if err := tbl.Put(ctx, "d", Order{ID: "a", Amount: 2}, notExists); !errors.As(err, &ccf) {
			t.Errorf("second conditional Put: %v, want ConditionalCheckFailedException", err)
		}
		amountIs := func(v int) func(*shard.Options) {
			return func(o *shard.Options) { o.Condition = expression.Name("amount").Equal(expression.Value(v)) }
		}
		if _, err := tbl.Update(ctx, "d", "a", expression.Set(expression.Name("note"), expression.Value("x")), amountIs(9)); !errors.As(err, &ccf) {
			t.Errorf("Update with false condition: %v, want ConditionalCheckFailedException", err)
		}
		if got, err := tbl.Update(ctx, "d", "a", expression.Set(expression.Name("note"), expression.Value("x")), amountIs(1)); err != nil || got.Note != "x" {
			t.Errorf("Update with true condition: %+v, %v", got, err)
		}
		if err := tbl.Delete(ctx, "d", "a", amountIs(9)); !errors.As(err, &ccf) {
			t.Errorf("Delete with false condition: %v, want ConditionalCheckFailedException", err)
		}
		if err := tbl.Delete(ctx, "d", "a", amountIs(1)); err != nil {
			t.Errorf("Delete with true condition: %v", err)
		}
	})
}

func TestTableRandom(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, s *ddbtest.Server) {
		ctx := context.Background()
		c := s.Client()
		name := s.Table(t, "pk:S", "sk:S")
		tbl, err := shard.NewTable[Order](c, shard.Layout{Table: name, PartitionKey: "pk", SortKey: "sk", Strategy: shard.Random(5)})
		if err != nil {
			t.Fatal(err)
		}
		if err := tbl.Put(ctx, "day", Order{ID: "x", Amount: 7}); err != nil {
			t.Fatal(err)
		}
		// The item is under exactly one of the 5 keys.
		found := 0
		for k := range shard.Keys("day", 5) {
			if rawGet(t, c, name, k, "x") != nil {
				found++
			}
		}
		if found != 1 {
			t.Errorf("item found under %d keys, want 1", found)
		}
		if _, err := tbl.Get(ctx, "day", "x"); !errors.Is(err, shard.ErrNotCalculated) {
			t.Errorf("Get with Random: %v, want ErrNotCalculated", err)
		}
		if err := tbl.Delete(ctx, "day", "x"); !errors.Is(err, shard.ErrNotCalculated) {
			t.Errorf("Delete with Random: %v, want ErrNotCalculated", err)
		}
		if _, err := tbl.Update(ctx, "day", "x", expression.Set(expression.Name("a"), expression.Value(1))); !errors.Is(err, shard.ErrNotCalculated) {
			t.Errorf("Update with Random: %v, want ErrNotCalculated", err)
		}
	})
}

// attrsSize is DynamoDB's size of an item of only S attributes.
func attrsSize(m map[string]string) int {
	n := 0
	for k, v := range m {
		n += len(k) + len(v)
	}
	return n
}

func TestTableValidation(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, s *ddbtest.Server) {
		ctx := context.Background()
		c, sent := countingClient(s)
		name := s.Table(t, "pk:S", "sk:S")
		tbl, err := shard.NewTable[map[string]string](c, shard.Layout{Table: name, PartitionKey: "pk", SortKey: "sk", Strategy: shard.Hash(200)})
		if err != nil {
			t.Fatal(err)
		}
		// 2,046 bytes + "." + up to 3 digits: always over 2,048 bytes.
		longBase := strings.Repeat("b", 2046)
		tests := []struct {
			name   string
			base   string
			item   map[string]string
			target error
		}{
			{"empty id", "d", map[string]string{"sk": ""}, shard.ErrInvalidItem},
			{"no sort key", "d", map[string]string{"other": "x"}, shard.ErrInvalidItem},
			{"empty base", "", map[string]string{"sk": "a"}, shard.ErrInvalidKey},
			{"key too long after suffix", longBase, map[string]string{"sk": "a"}, shard.ErrKeyTooLong},
			{"sort key too long", "d", map[string]string{"sk": strings.Repeat("s", 1025)}, shard.ErrInvalidItem},
			{"invalid UTF-8 id", "d", map[string]string{"sk": "a\xff"}, shard.ErrInvalidItem},
			{"over 400 KB", "d", map[string]string{"sk": "a", "data": strings.Repeat("x", 409600)}, shard.ErrItemTooLarge},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				before := sent.Load()
				err := tbl.Put(ctx, tt.base, tt.item)
				if !errors.Is(err, tt.target) || !errors.Is(err, shard.ErrInvalidItem) {
					t.Errorf("Put: %v, want %v and ErrInvalidItem", err, tt.target)
				}
				var ie *shard.ItemError
				if !errors.As(err, &ie) || ie.Table != name || ie.Base != tt.base {
					t.Errorf("Put: %#v, want *ItemError naming table %s and base", err, name)
				}
				if id, ok := tt.item["sk"]; ok && tt.target != shard.ErrItemTooLarge {
					// The same (base, id) is rejected by every keyed call.
					upd := expression.Set(expression.Name("a"), expression.Value(1))
					for _, f := range []func() error{
						func() error { _, err := tbl.Get(ctx, tt.base, id); return err },
						func() error { _, err := tbl.Update(ctx, tt.base, id, upd); return err },
						func() error { return tbl.Delete(ctx, tt.base, id) },
						func() error { _, err := tbl.Key(tt.base, id); return err },
					} {
						if err := f(); !errors.Is(err, tt.target) || !errors.Is(err, shard.ErrInvalidItem) {
							t.Errorf("keyed call (%q, %q): %v, want %v", clip(tt.base), clip(id), err, tt.target)
						}
					}
				}
				if n := sent.Load() - before; n != 0 {
					t.Errorf("%d requests sent for invalid input, want 0", n)
				}
			})
		}

		// Exactly 409,600 bytes is accepted and stored; one more byte is not.
		// Multi-byte text only on DynamoDB Local: dynalite counts UTF-16
		// units.
		fillers := []string{"x"}
		if s.Kind == localddb.DynamoDBLocal {
			fillers = append(fillers, "é")
		}
		for _, fill := range fillers {
			pk, err := tbl.Key("d", "exact")
			if err != nil {
				t.Fatal(err)
			}
			item := map[string]string{"sk": "exact", "pk": pk, "data": ""}
			room := 409600 - attrsSize(item)
			item["data"] = strings.Repeat(fill, room/len(fill)) + strings.Repeat("x", room%len(fill))
			if err := tbl.Put(ctx, "d", item); err != nil {
				t.Errorf("Put of exactly 409,600 bytes (%q): %v", fill, err)
			}
			if got := rawGet(t, c, name, pk, "exact"); got == nil {
				t.Errorf("409,600-byte item (%q) not stored", fill)
			}
			item["data"] += "x"
			before := sent.Load()
			if err := tbl.Put(ctx, "d", item); !errors.Is(err, shard.ErrItemTooLarge) {
				t.Errorf("Put of 409,601 bytes (%q): %v, want ErrItemTooLarge", fill, err)
			}
			if n := sent.Load() - before; n != 0 {
				t.Errorf("%d requests sent for an oversized item, want 0", n)
			}
		}
	})
}

// TestUpdateKeyAttributes: an update that touches a key attribute is
// refused before any request; one that only reads a key attribute is sent.
func TestUpdateKeyAttributes(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, s *ddbtest.Server) {
		ctx := context.Background()
		c, sent := countingClient(s)
		tbl, err := shard.NewTable[map[string]string](c, shard.Layout{Table: s.Table(t, "pk:S", "sk:S"), PartitionKey: "pk", SortKey: "sk", Strategy: shard.Hash(4)})
		if err != nil {
			t.Fatal(err)
		}
		for name, upd := range map[string]expression.UpdateBuilder{
			"set pk":        expression.Set(expression.Name("pk"), expression.Value("x")),
			"set sk nested": expression.Set(expression.Name("a"), expression.Value(1)).Set(expression.Name("sk.b"), expression.Value(2)),
			"remove sk":     expression.Remove(expression.Name("sk")),
			"add pk":        expression.Add(expression.Name("pk"), expression.Value(1)),
			"set pk via if_not_exists": expression.Set(expression.Name("note"), expression.Value("n")).
				Set(expression.Name("pk"), expression.IfNotExists(expression.Name("x"), expression.Value("y"))),
		} {
			before := sent.Load()
			_, err := tbl.Update(ctx, "d", "a", upd)
			if !errors.Is(err, shard.ErrInvalidKey) || !errors.Is(err, shard.ErrInvalidItem) {
				t.Errorf("%s: %v, want ErrInvalidKey", name, err)
			}
			if n := sent.Load() - before; n != 0 {
				t.Errorf("%s: %d requests, want 0", name, n)
			}
		}
		got, err := tbl.Update(ctx, "d", "a", expression.Set(expression.Name("copy"), expression.Name("sk")))
		if err != nil || got["copy"] != "a" {
			t.Errorf("update reading sk: %v, %v; want copy = a", got, err)
		}
	})
}

func clip(s string) string {
	if len(s) > 20 {
		return s[:20] + "…"
	}
	return s
}

func TestNewTableErrors(t *testing.T) {
	c := dynamodb.New(dynamodb.Options{Region: "us-east-1"})
	tests := []struct {
		name, table, pk, sk string
		s                   shard.Strategy
		codec               shard.Codec
		target              error
	}{
		{"no table", "", "pk", "sk", shard.Hash(2), shard.Codec{}, shard.ErrInvalidLayout},
		{"no pk", "t", "", "sk", shard.Hash(2), shard.Codec{}, shard.ErrInvalidLayout},
		{"no sk", "t", "pk", "", shard.Hash(2), shard.Codec{}, shard.ErrInvalidLayout},
		{"same", "t", "k", "k", shard.Hash(2), shard.Codec{}, shard.ErrInvalidLayout},
		{"nil strategy", "t", "pk", "sk", nil, shard.Codec{}, shard.ErrInvalidStrategy},
		{"digit separator", "t", "pk", "sk", shard.Hash(2), shard.Codec{Sep: "0"}, shard.ErrInvalidLayout},
	}
	for _, tt := range tests {
		_, err := shard.NewTable[Order](c, shard.Layout{Table: tt.table, PartitionKey: tt.pk, SortKey: tt.sk, Strategy: tt.s, Codec: tt.codec})
		if !errors.Is(err, tt.target) {
			t.Errorf("%s: %v, want %v", tt.name, err, tt.target)
		}
	}
	if _, err := shard.NewTable[Order](nil, shard.Layout{Table: "t", PartitionKey: "pk", SortKey: "sk", Strategy: shard.Hash(2)}); !errors.Is(err, shard.ErrInvalid) {
		t.Errorf("nil client: %v, want ErrInvalid", err)
	}
}

// The attributevalue options pass through.
func TestTableEncoderOptions(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, s *ddbtest.Server) {
		type J struct {
			ID string `json:"sk"`
			V  int    `json:"v"`
		}
		ctx := context.Background()
		name := s.Table(t, "pk:S", "sk:S")
		tbl, err := shard.NewTable[J](s.Client(), shard.Layout{Table: name, PartitionKey: "pk", SortKey: "sk", Strategy: shard.Hash(3)}, func(o *shard.Options) {
			o.Encoder = func(e *attributevalue.EncoderOptions) { e.TagKey = "json" }
			o.Decoder = func(d *attributevalue.DecoderOptions) { d.TagKey = "json" }
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := tbl.Put(ctx, "b", J{ID: "i", V: 5}); err != nil {
			t.Fatal(err)
		}
		got, err := tbl.Get(ctx, "b", "i", func(o *shard.Options) { o.ConsistentRead = true })
		if err != nil || got != (J{ID: "i", V: 5}) {
			t.Errorf("Get = %+v, %v", got, err)
		}
	})
}
