package main

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/go-cmp/cmp"

	"github.com/dynashard/dynashard/dynashardtest"
	"github.com/dynashard/dynashard/examples/catalog/catalogsvc"
	"github.com/dynashard/dynashard/examples/internal/httpjson"
	"github.com/dynashard/dynashard/examples/internal/svctest"
)

func TestMain(m *testing.M) { svctest.Main(m) }

// start runs the real program against s on a free loopback port until t
// ends, with tables of its own and the guide's sample products.
func start(t *testing.T, s *dynashardtest.Server) (*catalogsvc.Client, catalogsvc.Tables) {
	t.Helper()
	prefix := dynashardtest.TableName("catalog") + "-"
	tables := catalogsvc.TablesWithPrefix(prefix)
	t.Cleanup(func() { // runs after the service has stopped
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c := svctest.Client(t, s)
		for _, n := range tables.Names() {
			if _, err := c.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(n)}); err != nil {
				t.Errorf("delete table %s: %v", n, err)
			}
		}
	})
	base := svctest.Start(t, run, "-endpoint", s.Endpoint(), "-addr", "127.0.0.1:0", "-table-prefix", prefix)
	if s.Kind() == dynashardtest.Dynalite {
		// No transactions: the program could not create the samples (it
		// logged why). Load their parts as an import would, one PutItem
		// per part; everything but creating and deleting works on them.
		putParts(t, svctest.Client(t, s), tables, catalogsvc.Samples())
	}
	return &catalogsvc.Client{Client: httpjson.Client{Base: base}}, tables
}

func TestCatalog(t *testing.T) {
	svctest.Each(t, func(t *testing.T, s *dynashardtest.Server) {
		ctx := context.Background()
		c, tables := start(t, s)
		db := svctest.Client(t, s)

		t.Run("product page reads the catalog part only", func(t *testing.T) {
			for _, p := range catalogsvc.Samples() {
				r, err := c.Page(ctx, p.ID)
				if err != nil {
					t.Fatal(err)
				}
				want := catalogsvc.Product{ID: p.ID, Title: p.Title, Description: p.Description}
				if diff := cmp.Diff(want, r.Product); diff != "" {
					t.Errorf("page %d (-want +got):\n%s", p.ID, diff)
				}
				checkCapacity(t, "page", r, map[string]float64{tables.Catalog: 0.5})
			}
		})

		t.Run("detail page reads catalog and extended parts", func(t *testing.T) {
			r, err := c.Details(ctx, 58)
			if err != nil {
				t.Fatal(err)
			}
			want := catalogsvc.Product{ID: 58, Title: "Music Album", Description: "Lorem ipsum", TrackListing: []string{"Overture", "Finale"}}
			if diff := cmp.Diff(want, r.Product); diff != "" {
				t.Errorf("details (-want +got):\n%s", diff)
			}
			checkCapacity(t, "details", r, map[string]float64{tables.Catalog: 0.5, tables.Extended: 0.5})
		})

		t.Run("checkouts never oversell", func(t *testing.T) {
			// Red Bicycle: 8 in stock. 12 customers buy one each at once.
			var mu sync.Mutex
			var sold, refused int
			left := map[int64]bool{}
			var wg sync.WaitGroup
			for range 12 {
				wg.Go(func() {
					r, err := c.Checkout(ctx, 302, catalogsvc.Checkout{Quantity: 1, Price: "$125.00 USD"})
					mu.Lock()
					defer mu.Unlock()
					if isStatus(err, http.StatusConflict) {
						refused++
						return
					}
					if err != nil {
						t.Error(err)
						return
					}
					sold++
					left[*r.Product.QuantityOnHand] = true
					checkCapacity(t, "checkout", r, map[string]float64{tables.Availability: 1})
				})
			}
			wg.Wait()
			if sold != 8 || refused != 4 || len(left) != 8 {
				t.Errorf("sold %d, refused %d, distinct stock left %d; want 8, 4 and 8", sold, refused, len(left))
			}
			if got := stock(t, c, 302); got != 0 {
				t.Errorf("stock after the rush: %d, want 0", got)
			}
		})

		t.Run("checkout at an old price is refused", func(t *testing.T) {
			r, err := c.SetPrice(ctx, 21, "$4.50 USD")
			if err != nil {
				t.Fatal(err)
			}
			checkCapacity(t, "price change", r, map[string]float64{tables.Availability: 1})
			_, err = c.Checkout(ctx, 21, catalogsvc.Checkout{Quantity: 2, Price: "$5.00 USD"})
			if !isStatus(err, http.StatusConflict) {
				t.Errorf("checkout at the old price: got %v, want a 409", err)
			}
			if got := stock(t, c, 21); got != 3750 {
				t.Errorf("stock after the refused checkout: %d, want 3750", got)
			}
			if _, err := c.Checkout(ctx, 21, catalogsvc.Checkout{Quantity: 2, Price: "$4.50 USD"}); err != nil {
				t.Fatal(err)
			}
			if got := stock(t, c, 21); got != 3748 {
				t.Errorf("stock after the checkout: %d, want 3748", got)
			}
		})

		t.Run("digital item sells without stock", func(t *testing.T) {
			r, err := c.Checkout(ctx, 58, catalogsvc.Checkout{Quantity: 3, Price: "$5.00 USD"})
			if err != nil {
				t.Fatal(err)
			}
			if want := (catalogsvc.Product{ID: 58, Price: "$5.00 USD"}); !cmp.Equal(want, r.Product) {
				t.Errorf("checkout of 58: got %+v, want %+v", r.Product, want)
			}
			_, err = c.Checkout(ctx, 58, catalogsvc.Checkout{Quantity: 1, Price: "$1.00 USD"})
			if !isStatus(err, http.StatusConflict) {
				t.Errorf("checkout of 58 at another price: got %v, want a 409", err)
			}
		})

		t.Run("create and delete are one unit", func(t *testing.T) {
			kettle := catalogsvc.Product{ID: 7, Title: "Blue Kettle", Description: "Whistles.", Price: "$30.00 USD", QuantityOnHand: ptr(int64(5))}
			_, err := c.Create(ctx, kettle)
			if s.Kind() == dynashardtest.Dynalite {
				// Documented: without transactions split refuses to write
				// a product part by part (split.ErrNoTransactions).
				if !isStatus(err, http.StatusNotImplemented) {
					t.Errorf("create on dynalite: got %v, want a 501", err)
				}
				if got := stored(t, db, tables, 7); len(got) != 0 {
					t.Errorf("after the refused create, tables %v hold product 7", got)
				}
				_, err = c.Delete(ctx, 21)
				if !isStatus(err, http.StatusNotImplemented) {
					t.Errorf("delete on dynalite: got %v, want a 501", err)
				}
				if got := stored(t, db, tables, 21); len(got) != 3 {
					t.Errorf("after the refused delete, product 21 is in tables %v, want all three", got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := stored(t, db, tables, 7); len(got) != 3 {
				t.Errorf("after create, product 7 is in tables %v, want all three", got)
			}
			if r, err := c.Availability(ctx, 7); err != nil || r.Product.Price != kettle.Price || *r.Product.QuantityOnHand != 5 {
				t.Errorf("availability of 7: got %+v, %v", r.Product, err)
			}
			if _, err := c.Create(ctx, kettle); !isStatus(err, http.StatusConflict) {
				t.Errorf("second create: got %v, want a 409", err)
			}
			r, err := c.Delete(ctx, 7)
			if err != nil {
				t.Fatal(err)
			}
			if n := len(r.ConsumedCapacity); n != 3 {
				t.Errorf("delete wrote to %d tables (%v), want 3", n, r.ConsumedCapacity)
			}
			if got := stored(t, db, tables, 7); len(got) != 0 {
				t.Errorf("after delete, tables %v hold product 7", got)
			}
			if _, err := c.Page(ctx, 7); !isStatus(err, http.StatusNotFound) {
				t.Errorf("page after delete: got %v, want a 404", err)
			}
		})

		t.Run("not found", func(t *testing.T) {
			for what, err := range map[string]error{
				"page":         ignore(c.Page(ctx, 999)),
				"details":      ignore(c.Details(ctx, 999)),
				"checkout":     ignore(c.Checkout(ctx, 999, catalogsvc.Checkout{Quantity: 1, Price: "$1.00 USD"})),
				"price change": ignore(c.SetPrice(ctx, 999, "$1.00 USD")),
			} {
				if !isStatus(err, http.StatusNotFound) {
					t.Errorf("%s: got %v, want a 404", what, err)
				}
			}
		})

		t.Run("bad input", func(t *testing.T) {
			before := stock(t, c, 21)
			for _, tc := range []struct {
				what, field string
				err         error
			}{
				{"id not a number", "id", c.Do(ctx, http.MethodGet, "/products/abc", nil, nil)},
				{"id zero", "id", ignore(c.Page(ctx, 0))},
				{"quantity zero", "quantity", ignore(c.Checkout(ctx, 21, catalogsvc.Checkout{Quantity: 0, Price: "$4.50 USD"}))},
				{"quantity too large", "quantity", ignore(c.Checkout(ctx, 21, catalogsvc.Checkout{Quantity: catalogsvc.MaxQuantity + 1, Price: "$4.50 USD"}))},
				{"checkout without a price", "price", ignore(c.Checkout(ctx, 21, catalogsvc.Checkout{Quantity: 1}))},
				{"empty price", "price", ignore(c.SetPrice(ctx, 21, " "))},
				{"product without a title", "title", ignore(c.Create(ctx, catalogsvc.Product{ID: 8, Price: "$1.00 USD"}))},
				{"product id zero", "id", ignore(c.Create(ctx, catalogsvc.Product{Title: "t", Price: "$1.00 USD"}))},
				{"negative stock", "quantity_on_hand", ignore(c.Create(ctx, catalogsvc.Product{ID: 8, Title: "t", Price: "$1.00 USD", QuantityOnHand: ptr(int64(-1))}))},
				{"rating over 5", "average_customer_rating", ignore(c.Create(ctx, catalogsvc.Product{ID: 8, Title: "t", Price: "$1.00 USD", AverageCustomerRating: 6}))},
			} {
				var e *httpjson.Error
				if !errors.As(tc.err, &e) || e.Status != http.StatusBadRequest || !e.Has(tc.field) {
					t.Errorf("%s: got %v, want a 400 naming %q", tc.what, tc.err, tc.field)
				}
			}
			if got := stock(t, c, 21); got != before {
				t.Errorf("stock of 21 after bad input: %d, want %d", got, before)
			}
			if got := stored(t, db, tables, 8); len(got) != 0 {
				t.Errorf("after bad input, tables %v hold product 8", got)
			}
		})
	})
}

// checkCapacity checks the capacity a response reports, by table.
func checkCapacity(t *testing.T, what string, r catalogsvc.Response, want map[string]float64) {
	t.Helper()
	if diff := cmp.Diff(want, r.ConsumedCapacity); diff != "" {
		t.Errorf("%s: consumed capacity (-want +got):\n%s", what, diff)
	}
}

// stock returns a product's QuantityOnHand through the API.
func stock(t *testing.T, c *catalogsvc.Client, id int64) int64 {
	t.Helper()
	r, err := c.Availability(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if r.Product.QuantityOnHand == nil {
		t.Fatalf("product %d: no stock", id)
	}
	return *r.Product.QuantityOnHand
}

// stored returns the tables holding a part of product id, read directly
// with strongly consistent GetItems.
func stored(t *testing.T, db *dynamodb.Client, tables catalogsvc.Tables, id int64) []string {
	t.Helper()
	key := map[string]types.AttributeValue{"Id": &types.AttributeValueMemberN{Value: strconv.FormatInt(id, 10)}}
	var in []string
	for _, table := range tables.Names() {
		out, err := db.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String(table), Key: key, ConsistentRead: aws.Bool(true)})
		if err != nil {
			t.Fatal(err)
		}
		if out.Item != nil {
			in = append(in, table)
		}
	}
	return in
}

// putParts writes each product's parts with one PutItem per part, as an
// import from elsewhere would.
func putParts(t *testing.T, db *dynamodb.Client, tables catalogsvc.Tables, ps []catalogsvc.Product) {
	t.Helper()
	for _, p := range ps {
		whole, err := attributevalue.MarshalMap(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, part := range tables.Layout().Parts {
			item := map[string]types.AttributeValue{"Id": whole["Id"]}
			for _, a := range part.Attributes {
				if v, ok := whole[a]; ok {
					item[a] = v
				}
			}
			if _, err := db.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(part.Table), Item: item}); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func isStatus(err error, status int) bool {
	var e *httpjson.Error
	return errors.As(err, &e) && e.Status == status
}

func ptr[T any](v T) *T { return &v }

func ignore[T any](_ T, err error) error { return err }
