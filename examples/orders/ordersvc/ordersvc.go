// Package ordersvc is the orders example's HTTP JSON service, kept apart
// from its main package so the demo can run it in-process.
//
// The table is described once, by the shard.Layout that Layout returns,
// and everything is built from it: the CreateTable request
// (Layout.CreateTableInput) and the repo.Repo that stores the orders. The
// logical partition key (the base) is the order's day, "2026-11-22",
// spread over N physical keys "2026-11-22.1" … "2026-11-22.N" by
// shard.Hash on the order id, so a busy day's writes reach N partitions
// instead of throttling one. The id starts with the day
// ("20261122-153012482917-9f3ac2e1"), so GET /orders/{id} computes base
// and suffix from the id and reads the order with one GetItem; listing a
// day queries its N keys in parallel and merges them in id (that is, time)
// order. The first write of a day records the layout and the day's shard
// count in the table, and every later read or write of the day checks it:
// a service started with another N reads and writes the day at its
// recorded count (its own N applies to days not written yet), and one
// with another layout fails with shard.ErrLayoutMismatch instead of
// missing orders.
package ordersvc

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"

	"github.com/dynashard/dynashard/examples/internal/httpjson"
	"github.com/dynashard/dynashard/examples/internal/sortid"
	"github.com/dynashard/dynashard/repo"
	"github.com/dynashard/dynashard/scatter"
	"github.com/dynashard/dynashard/shard"
)

// Line is one line of an order.
type Line struct {
	SKU        string `json:"sku"`
	Quantity   int    `json:"qty"`
	PriceCents int64  `json:"price_cents"` // per unit
}

// Order is what the service stores and returns. Field names are the JSON
// names and, through the repository's TagKey "json", the attribute names.
type Order struct {
	ID         string    `json:"id"` // the table's sort key
	Day        string    `json:"day"`
	Customer   string    `json:"customer"`
	Currency   string    `json:"currency"`
	Lines      []Line    `json:"lines"`
	TotalCents int64     `json:"total_cents"`
	PlacedAt   time.Time `json:"placed_at"`
	// Version is the optimistic-locking attribute: a create writes only
	// if no order has the id yet.
	Version int64 `json:"version"`
}

// NewOrder is the body of POST /orders.
type NewOrder struct {
	Customer string `json:"customer"`
	Currency string `json:"currency"`
	Lines    []Line `json:"lines"`
	// PlacedAt is RFC 3339; empty means now. Importers set it to file
	// orders under the day they were placed.
	PlacedAt string `json:"placed_at,omitempty"`
}

// Page is the body of GET /days/{day}/orders.
type Page struct {
	Day    string  `json:"day"`
	Orders []Order `json:"orders"`
	// Next continues the listing; absent on the last page.
	Next string `json:"next_cursor,omitempty"`
}

// Count is the body of GET /days/{day}/count.
type Count struct {
	Day   string `json:"day"`
	Count int64  `json:"count"`
}

// Input limits. A request beyond them gets a 400 naming the field.
const (
	MaxLines      = 100
	MaxQuantity   = 1000
	MaxPriceCents = 100_000_00
	MaxCustomer   = 200 // bytes
	MaxSKU        = 64  // bytes
	DefaultLimit  = 50  // orders per page
	MaxLimit      = 500
	DefaultShards = 16 // physical keys per day
)

const (
	attrPartition = "pk"
	attrID        = "id"
	attrVersion   = "version"
	maxBody       = 64 << 10
	// placed_at may run ahead of the server's clock by this much: client
	// clocks are skewed, and a day is still a day's base.
	futureTolerance = 24 * time.Hour
)

// Layout describes the orders table named table: partition key pk
// holding physical keys "2026-11-22.7", a day's orders spread over shards
// keys (0: DefaultShards) by shard.Hash on the order id, and sort key id.
// Create the table with its CreateTableInput, and pass it to New.
func Layout(table string, shards int) shard.Layout {
	if shards == 0 {
		shards = DefaultShards
	}
	return shard.Layout{Table: table, PartitionKey: attrPartition, SortKey: attrID, Strategy: shard.Hash(shards)}
}

// Config configures the service. CursorKey is required.
type Config struct {
	// CursorKey signs list cursors (HMAC-SHA256), so clients cannot forge
	// or alter them. Instances behind one load balancer must share it.
	CursorKey []byte
	// CacheEntries bounds the read-through cache of GET /orders/{id}.
	// Default 0: no cache.
	CacheEntries int
	// Now is the clock for orders without placed_at. Default time.Now.
	Now func() time.Time
	// Log receives server errors. Default log.Default().
	Log *log.Logger
}

// Service serves the orders API. Safe for concurrent use.
type Service struct {
	orders *repo.Repo[Order]
	cfg    Config
}

// New returns the service over the table layout describes (see Layout),
// which must exist. It fails for a layout or a cursor key the repository
// refuses (errors matching repo.ErrInvalid) and without a cursor key.
func New(c repo.Client, layout shard.Layout, cfg Config) (*Service, error) {
	if len(cfg.CursorKey) == 0 {
		return nil, errors.New("ordersvc: no cursor key")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Log == nil {
		cfg.Log = log.Default()
	}
	r, err := repo.New[Order](c, layout, func(o *repo.Options) {
		o.Version = attrVersion
		o.CursorKey = cfg.CursorKey
		o.CacheEntries = cfg.CacheEntries
		o.Encoder = func(eo *attributevalue.EncoderOptions) { eo.TagKey = "json" }
		o.Decoder = func(do *attributevalue.DecoderOptions) { do.TagKey = "json" }
	})
	if err != nil {
		return nil, fmt.Errorf("ordersvc: %w", err)
	}
	return &Service{orders: r, cfg: cfg}, nil
}

// Layout returns the layout of the service's table.
func (s *Service) Layout() shard.Layout { return s.orders.Layout() }

// CacheStats reports the GET /orders/{id} cache's counters.
func (s *Service) CacheStats() repo.CacheStats { return s.orders.CacheStats() }

// Handler returns the HTTP API:
//
//	POST /orders                         create an order (201, the Order)
//	GET  /orders/{id}                    one order (404 if none)
//	GET  /days/{day}/orders?limit=&cursor=  a page of the day's orders in id order
//	GET  /days/{day}/count               how many orders the day has
//
// Invalid input gets a 400 whose body names each offending field.
func (s *Service) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("POST /orders", httpjson.Wrap(s.cfg.Log, s.create))
	mux.Handle("GET /orders/{id}", httpjson.Wrap(s.cfg.Log, s.get))
	mux.Handle("GET /days/{day}/orders", httpjson.Wrap(s.cfg.Log, s.list))
	mux.Handle("GET /days/{day}/count", httpjson.Wrap(s.cfg.Log, s.count))
	return mux
}

func (s *Service) create(r *http.Request) (int, any, error) {
	var in NewOrder
	if err := httpjson.Decode(r, &in, maxBody); err != nil {
		return 0, nil, err
	}
	o, err := s.validate(in)
	if err != nil {
		return 0, nil, err
	}
	// Version 0 makes Put conditional on the id being new: a create
	// never overwrites an order.
	o, err = s.orders.Put(r.Context(), o.Day, o)
	switch {
	case errors.Is(err, repo.ErrConflict):
		return 0, nil, &httpjson.Error{Status: http.StatusConflict, Message: "an order with this id exists; retry"}
	case errors.Is(err, repo.ErrInvalid):
		return 0, nil, httpjson.BadRequest("body", "%v", err)
	case err != nil:
		return 0, nil, err
	}
	return http.StatusCreated, o, nil
}

// validate checks every field, reporting all problems at once, and
// returns the order to store.
func (s *Service) validate(in NewOrder) (Order, error) {
	var p httpjson.Problems
	switch c := strings.TrimSpace(in.Customer); {
	case c == "":
		p.Add("customer", "required")
	case len(c) > MaxCustomer || !utf8.ValidString(c):
		p.Add("customer", "at most %d bytes of UTF-8", MaxCustomer)
	}
	if !isCurrency(in.Currency) {
		p.Add("currency", "want an ISO 4217 code such as USD")
	}
	if len(in.Lines) == 0 || len(in.Lines) > MaxLines {
		p.Add("lines", "want 1 to %d lines", MaxLines)
	}
	var total int64
	for i, l := range in.Lines {
		if i == MaxLines {
			break
		}
		f := fmt.Sprintf("lines[%d].", i)
		if l.SKU == "" || len(l.SKU) > MaxSKU || !utf8.ValidString(l.SKU) {
			p.Add(f+"sku", "want 1 to %d bytes of UTF-8", MaxSKU)
		}
		if l.Quantity < 1 || l.Quantity > MaxQuantity {
			p.Add(f+"qty", "want 1 to %d", MaxQuantity)
		}
		if l.PriceCents < 0 || l.PriceCents > MaxPriceCents {
			p.Add(f+"price_cents", "want 0 to %d", MaxPriceCents)
		}
		total += int64(l.Quantity) * l.PriceCents // bounded: no overflow
	}
	now := s.cfg.Now()
	placed := now
	if in.PlacedAt != "" {
		t, err := time.Parse(time.RFC3339Nano, in.PlacedAt)
		switch {
		case err != nil:
			p.Add("placed_at", "want an RFC 3339 time such as 2026-11-22T15:30:00Z")
		case t.Year() < 2000 || t.After(now.Add(futureTolerance)):
			p.Add("placed_at", "want a time between 2000 and tomorrow")
		default:
			placed = t
		}
	}
	if err := p.Err(); err != nil {
		return Order{}, err
	}
	placed = placed.UTC()
	return Order{
		ID:         sortid.New(placed),
		Day:        placed.Format(sortid.DayLayout),
		Customer:   strings.TrimSpace(in.Customer),
		Currency:   in.Currency,
		Lines:      in.Lines,
		TotalCents: total,
		PlacedAt:   placed,
	}, nil
}

func isCurrency(c string) bool {
	if len(c) != 3 {
		return false
	}
	for _, r := range c {
		if r < 'A' || r > 'Z' {
			return false
		}
	}
	return true
}

func (s *Service) get(r *http.Request) (int, any, error) {
	id := r.PathValue("id")
	day, err := sortid.Day(id)
	if err != nil {
		return 0, nil, httpjson.BadRequest("id", "want an order id such as 20261122-153012482917-9f3ac2e1")
	}
	o, err := s.orders.Get(r.Context(), day, id)
	if errors.Is(err, repo.ErrNotFound) {
		return 0, nil, httpjson.NotFound("no order %s", id)
	}
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, o, nil
}

func pathDay(r *http.Request) (string, error) {
	day := r.PathValue("day")
	if t, err := time.Parse(sortid.DayLayout, day); err != nil || t.Format(sortid.DayLayout) != day {
		return "", httpjson.BadRequest("day", "want a day such as 2026-11-22")
	}
	return day, nil
}

func (s *Service) list(r *http.Request) (int, any, error) {
	day, err := pathDay(r)
	if err != nil {
		return 0, nil, err
	}
	q := r.URL.Query()
	limit := DefaultLimit
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > MaxLimit {
			return 0, nil, httpjson.BadRequest("limit", "want 1 to %d", MaxLimit)
		}
		limit = n
	}
	orders, next, err := s.orders.List(r.Context(), day, limit, scatter.Cursor(q.Get("cursor")))
	if errors.Is(err, repo.ErrInvalidCursor) {
		// Altered, forged, or issued for another day.
		return 0, nil, httpjson.BadRequest("cursor", "not a cursor this service issued for %s", day)
	}
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, Page{Day: day, Orders: orders, Next: string(next)}, nil
}

func (s *Service) count(r *http.Request) (int, any, error) {
	day, err := pathDay(r)
	if err != nil {
		return 0, nil, err
	}
	n, err := s.orders.Count(r.Context(), day)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, Count{Day: day, Count: n}, nil
}

// Client is a typed client of the API, for the demo and the tests.
type Client struct{ httpjson.Client }

// Create posts an order.
func (c *Client) Create(ctx context.Context, in NewOrder) (Order, error) {
	var o Order
	err := c.Do(ctx, http.MethodPost, "/orders", in, &o)
	return o, err
}

// Get reads an order.
func (c *Client) Get(ctx context.Context, id string) (Order, error) {
	var o Order
	err := c.Do(ctx, http.MethodGet, "/orders/"+url.PathEscape(id), nil, &o)
	return o, err
}

// List reads a page of a day.
func (c *Client) List(ctx context.Context, day string, limit int, cursor string) (Page, error) {
	var p Page
	q := url.Values{}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	if cursor != "" {
		q.Set("cursor", cursor)
	}
	path := "/days/" + url.PathEscape(day) + "/orders"
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	err := c.Do(ctx, http.MethodGet, path, nil, &p)
	return p, err
}

// Count counts a day.
func (c *Client) Count(ctx context.Context, day string) (int64, error) {
	var n Count
	err := c.Do(ctx, http.MethodGet, "/days/"+url.PathEscape(day)+"/count", nil, &n)
	return n.Count, err
}
