package main

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/go-cmp/cmp"
	"golang.org/x/sync/errgroup"

	"github.com/dynashard/dynashard/dynashardtest"
	"github.com/dynashard/dynashard/examples/internal/httpjson"
	"github.com/dynashard/dynashard/examples/internal/sortid"
	"github.com/dynashard/dynashard/examples/internal/svctest"
	"github.com/dynashard/dynashard/examples/orders/ordersvc"
	"github.com/dynashard/dynashard/shard"
)

func TestMain(m *testing.M) { svctest.Main(m) }

const shards = 8

// start runs the real program (flags, table creation, listener, graceful
// shutdown) against s on a free loopback port until t ends.
func start(t *testing.T, s *dynashardtest.Server, table string) *ordersvc.Client {
	t.Helper()
	t.Cleanup(func() { // runs after the service has stopped
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := svctest.Client(t, s).DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(table)}); err != nil {
			t.Errorf("delete table %s: %v", table, err)
		}
	})
	return serve(t, s, table, shards)
}

// serve runs the program on table with n shards per day until t ends.
func serve(t *testing.T, s *dynashardtest.Server, table string, n int) *ordersvc.Client {
	t.Helper()
	base := svctest.Start(t, run, "-endpoint", s.Endpoint(), "-addr", "127.0.0.1:0", "-table", table,
		"-shards", fmt.Sprint(n), "-cursor-key", hex.EncodeToString([]byte("a test key of 32 bytes, no more!")))
	return &ordersvc.Client{Client: httpjson.Client{Base: base}}
}

// newOrder makes a valid order placed at ts.
func newOrder(r *rand.Rand, ts time.Time) ordersvc.NewOrder {
	in := ordersvc.NewOrder{
		Customer: fmt.Sprintf("customer-%d", r.IntN(50)),
		Currency: []string{"EUR", "USD", "JPY"}[r.IntN(3)],
		PlacedAt: ts.Format(time.RFC3339Nano),
	}
	for range 1 + r.IntN(4) {
		in.Lines = append(in.Lines, ordersvc.Line{
			SKU: fmt.Sprintf("sku-%03d", r.IntN(300)), Quantity: 1 + r.IntN(9), PriceCents: int64(r.IntN(10_000)),
		})
	}
	return in
}

func TestOrders(t *testing.T) {
	svctest.Each(t, func(t *testing.T, s *dynashardtest.Server) {
		ctx := context.Background()
		table := dynashardtest.TableName("orders")
		c := start(t, s, table)
		r := rand.New(rand.NewPCG(1, 2))

		// Two days, the busy one with many orders, many placed in the same
		// second so their ids differ only in microseconds and random bits.
		days := map[string]int{"2025-03-14": 240, "2025-03-15": 40}
		var inputs []ordersvc.NewOrder
		for day, n := range days {
			d, err := time.Parse(sortid.DayLayout, day)
			if err != nil {
				t.Fatal(err)
			}
			for range n {
				ts := d.Add(time.Duration(r.IntN(100))*time.Second + time.Duration(r.IntN(1000))*time.Microsecond)
				inputs = append(inputs, newOrder(r, ts))
			}
		}
		created := make([]ordersvc.Order, len(inputs))
		g, gctx := errgroup.WithContext(ctx)
		g.SetLimit(8)
		for i, in := range inputs {
			g.Go(func() error {
				o, err := c.Create(gctx, in)
				if err != nil {
					return fmt.Errorf("create %+v: %w", in, err)
				}
				created[i] = o
				return nil
			})
		}
		if err := g.Wait(); err != nil {
			t.Fatal(err)
		}

		byDay := map[string][]ordersvc.Order{}
		for i, o := range created {
			in := inputs[i]
			var total int64
			for _, l := range in.Lines {
				total += int64(l.Quantity) * l.PriceCents
			}
			placed, err := time.Parse(time.RFC3339Nano, in.PlacedAt)
			if err != nil {
				t.Fatal(err)
			}
			want := ordersvc.Order{
				ID: o.ID, Day: placed.UTC().Format(sortid.DayLayout), Customer: in.Customer, Currency: in.Currency,
				Lines: in.Lines, TotalCents: total, PlacedAt: placed, Version: 1,
			}
			if diff := cmp.Diff(want, o); diff != "" {
				t.Fatalf("created order differs from input (-want +got):\n%s", diff)
			}
			if day, err := sortid.Day(o.ID); err != nil || day != want.Day {
				t.Fatalf("id %q: day %q, %v; want %q", o.ID, day, err, want.Day)
			}
			byDay[o.Day] = append(byDay[o.Day], o)
		}

		t.Run("spread over suffixes", func(t *testing.T) {
			// The stored physical keys are exactly what shard.Hash computes
			// from the ids, and a busy day uses the suffixes that predicts.
			got := scanKeys(t, svctest.Client(t, s), table)
			want := map[string]string{}
			for _, o := range created {
				want[o.ID] = shard.Key(o.Day, shard.Hash(shards).Pick(o.ID))
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("physical keys (-want +got):\n%s", diff)
			}
			used := map[string]bool{}
			for _, o := range byDay["2025-03-14"] {
				used[want[o.ID]] = true
			}
			if len(used) < 2 {
				t.Errorf("a day of %d orders used %d physical keys", days["2025-03-14"], len(used))
			}
		})

		t.Run("page through days", func(t *testing.T) {
			for day, want := range byDay {
				slices.SortFunc(want, func(a, b ordersvc.Order) int { return strings.Compare(a.ID, b.ID) })
				for _, limit := range []int{1, 7, 500} {
					var got []ordersvc.Order
					cursor, pages := "", 0
					for {
						p, err := c.List(ctx, day, limit, cursor)
						if err != nil {
							t.Fatalf("%s limit %d page %d: %v", day, limit, pages, err)
						}
						pages++
						got = append(got, p.Orders...)
						if p.Next == "" {
							break
						}
						if len(p.Orders) != limit {
							t.Fatalf("%s limit %d page %d: got %d orders before the end, want %d", day, limit, pages, len(p.Orders), limit)
						}
						cursor = p.Next
						if pages > len(want)+1 {
							t.Fatalf("%s limit %d: more pages than orders", day, limit)
						}
					}
					if diff := cmp.Diff(want, got); diff != "" {
						t.Errorf("%s limit %d: listed orders (-want +got):\n%s", day, limit, diff)
					}
				}
			}
		})

		t.Run("get by id", func(t *testing.T) {
			for i := 0; i < len(created); i += 13 {
				for range 2 { // the second read may come from the cache
					got, err := c.Get(ctx, created[i].ID)
					if err != nil {
						t.Fatalf("get %s: %v", created[i].ID, err)
					}
					if diff := cmp.Diff(created[i], got); diff != "" {
						t.Errorf("get %s (-want +got):\n%s", created[i].ID, diff)
					}
				}
			}
			missing := sortid.New(time.Date(2025, 3, 14, 12, 0, 0, 0, time.UTC))
			_, err := c.Get(ctx, missing)
			if e := new(httpjson.Error); !errors.As(err, &e) || e.Status != http.StatusNotFound {
				t.Errorf("get missing %s: got %v, want a 404", missing, err)
			}
		})

		t.Run("count", func(t *testing.T) {
			for day, want := range map[string]int{"2025-03-14": len(byDay["2025-03-14"]), "2025-03-15": len(byDay["2025-03-15"]), "2025-03-16": 0} {
				got, err := c.Count(ctx, day)
				if err != nil || got != int64(want) {
					t.Errorf("count %s: got %d, %v; want %d", day, got, err, want)
				}
			}
			p, err := c.List(ctx, "2025-03-16", 10, "")
			if err != nil || len(p.Orders) != 0 || p.Next != "" {
				t.Errorf("list empty day: got %d orders, next %q, %v; want none", len(p.Orders), p.Next, err)
			}
		})

		t.Run("bad cursor", func(t *testing.T) {
			p, err := c.List(ctx, "2025-03-14", 5, "")
			if err != nil || p.Next == "" {
				t.Fatalf("first page: next %q, %v", p.Next, err)
			}
			other, err := c.List(ctx, "2025-03-15", 5, "")
			if err != nil || other.Next == "" {
				t.Fatalf("first page of 2025-03-15: next %q, %v", other.Next, err)
			}
			for name, cursor := range map[string]string{
				"tampered":     tamper(p.Next),
				"truncated":    p.Next[:len(p.Next)/2],
				"extended":     p.Next + "AAAA",
				"garbage":      "not a cursor!",
				"another day":  other.Next,
				"unsigned-ish": strings.Repeat("A", 40),
			} {
				_, err := c.List(ctx, "2025-03-14", 5, cursor)
				wantBadRequest(t, name, err, "cursor")
			}
		})

		t.Run("bad input", func(t *testing.T) {
			ok := `{"customer":"ada","currency":"EUR","lines":[{"sku":"tea","qty":2,"price_cents":350}]}`
			for _, tc := range []struct {
				name   string
				body   string
				fields []string
			}{
				{"no customer", `{"currency":"EUR","lines":[{"sku":"tea","qty":2,"price_cents":350}]}`, []string{"customer"}},
				{"blank customer", `{"customer":"  ","currency":"EUR","lines":[{"sku":"tea","qty":2,"price_cents":350}]}`, []string{"customer"}},
				{"several problems", `{"customer":"ada","currency":"eur","lines":[{"sku":"","qty":0,"price_cents":-1},{"sku":"x","qty":1001,"price_cents":1}]}`,
					[]string{"currency", "lines[0].sku", "lines[0].qty", "lines[0].price_cents", "lines[1].qty"}},
				{"no lines", `{"customer":"ada","currency":"EUR","lines":[]}`, []string{"lines"}},
				{"bad time", `{"customer":"ada","currency":"EUR","lines":[{"sku":"tea","qty":2,"price_cents":350}],"placed_at":"yesterday"}`, []string{"placed_at"}},
				{"ancient", `{"customer":"ada","currency":"EUR","lines":[{"sku":"tea","qty":2,"price_cents":350}],"placed_at":"1999-12-31T23:59:59Z"}`, []string{"placed_at"}},
				{"unknown field", `{"customer":"ada","currency":"EUR","lines":[{"sku":"tea","qty":2,"price_cents":350}],"discount":5}`, []string{"discount"}},
				{"wrong type", `{"customer":"ada","currency":"EUR","lines":[{"sku":"tea","qty":"two","price_cents":350}]}`, []string{"lines.qty"}},
				{"malformed", `{"customer":"ada",`, []string{"body"}},
				{"empty", ``, []string{"body"}},
				{"trailing", ok + ok, []string{"body"}},
			} {
				err := c.Raw(ctx, http.MethodPost, "/orders", "application/json", []byte(tc.body), nil)
				var e *httpjson.Error
				if !errors.As(err, &e) || e.Status != http.StatusBadRequest {
					t.Errorf("%s: got %v, want a 400", tc.name, err)
					continue
				}
				var got []string
				for _, f := range e.Fields {
					got = append(got, f.Field)
				}
				if diff := cmp.Diff(tc.fields, got); diff != "" {
					t.Errorf("%s: fields named (-want +got):\n%s", tc.name, diff)
				}
			}
			err := c.Raw(ctx, http.MethodPost, "/orders", "text/plain", []byte(ok), nil)
			if e := new(httpjson.Error); !errors.As(err, &e) || e.Status != http.StatusUnsupportedMediaType {
				t.Errorf("text/plain body: got %v, want a 415", err)
			}
			huge := `{"customer":"` + strings.Repeat("x", 1<<20) + `"}`
			err = c.Raw(ctx, http.MethodPost, "/orders", "application/json", []byte(huge), nil)
			if e := new(httpjson.Error); !errors.As(err, &e) || e.Status != http.StatusRequestEntityTooLarge {
				t.Errorf("1 MB body: got %v, want a 413", err)
			}

			_, err = c.Get(ctx, "not-an-order-id")
			wantBadRequest(t, "get malformed id", err, "id")
			for _, path := range []string{"/days/2025-13-01/orders", "/days/25-03-14/count", "/days/2025-3-14/orders"} {
				err := c.Do(ctx, http.MethodGet, path, nil, nil)
				wantBadRequest(t, path, err, "day")
			}
			for _, limit := range []string{"0", "-1", "501", "ten"} {
				err := c.Do(ctx, http.MethodGet, "/days/2025-03-14/orders?limit="+limit, nil, nil)
				wantBadRequest(t, "limit="+limit, err, "limit")
			}
			// Nothing above was stored.
			if n, err := c.Count(ctx, "2025-03-14"); err != nil || n != int64(len(byDay["2025-03-14"])) {
				t.Errorf("count after bad input: got %d, %v; want %d", n, err, len(byDay["2025-03-14"]))
			}
		})

		t.Run("another N reads the day's own", func(t *testing.T) {
			// Each day records the shard counts it was written with: an
			// instance started with another N reads and writes the day at
			// its recorded count (every order found, none filed where the
			// first instance would not look); the N an instance is started
			// with is the count for days not written yet.
			other := serve(t, s, table, shards/2)
			day := "2025-03-14"
			want := len(byDay[day])
			if n, err := other.Count(ctx, day); err != nil || n != int64(want) {
				t.Errorf("count with %d shards over a day written with %d: got %d, %v; want %d", shards/2, shards, n, err, want)
			}
			p, err := other.List(ctx, day, 500, "")
			if err != nil || len(p.Orders) != want {
				t.Errorf("list with %d shards over a day written with %d: got %d orders, %v; want %d", shards/2, shards, len(p.Orders), err, want)
			}
			if got, err := other.Get(ctx, created[0].ID); err != nil || got.ID != created[0].ID {
				t.Errorf("get with %d shards over a day written with %d: got %v, %v; want order %s", shards/2, shards, got.ID, err, created[0].ID)
			}
			d, err := time.Parse(sortid.DayLayout, day)
			if err != nil {
				t.Fatal(err)
			}
			o, err := other.Create(ctx, newOrder(r, d.Add(time.Hour)))
			if err != nil {
				t.Fatalf("create with %d shards over a day written with %d: %v", shards/2, shards, err)
			}
			if got, err := c.Get(ctx, o.ID); err != nil || got.ID != o.ID {
				t.Errorf("the first instance's get of the order the other created: got %v, %v", got.ID, err)
			}
			if n, err := c.Count(ctx, day); err != nil || n != int64(want+1) {
				t.Errorf("count after the other's create: got %d, %v; want %d", n, err, want+1)
			}
		})
	})
}

func wantBadRequest(t *testing.T, what string, err error, field string) {
	t.Helper()
	var e *httpjson.Error
	if !errors.As(err, &e) || e.Status != http.StatusBadRequest || !e.Has(field) {
		t.Errorf("%s: got %v, want a 400 naming %q", what, err, field)
	}
}

// tamper changes one character in the middle of a base64url cursor.
func tamper(c string) string {
	b := []byte(c)
	i := len(b) / 2
	if b[i] == 'A' {
		b[i] = 'B'
	} else {
		b[i] = 'A'
	}
	return string(b)
}

// scanKeys reads every item's id and physical key straight from the table.
func scanKeys(t *testing.T, c *dynamodb.Client, table string) map[string]string {
	t.Helper()
	keys := map[string]string{}
	p := dynamodb.NewScanPaginator(c, &dynamodb.ScanInput{TableName: aws.String(table)})
	for p.HasMorePages() {
		out, err := p.NextPage(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range out.Items {
			if shard.IsRecord(it) {
				continue // the day's layout record, not an order
			}
			keys[it["id"].(*types.AttributeValueMemberS).Value] = it["pk"].(*types.AttributeValueMemberS).Value
		}
	}
	return keys
}
