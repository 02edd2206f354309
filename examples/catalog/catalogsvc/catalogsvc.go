// Package catalogsvc is the catalog example's HTTP JSON service, kept apart
// from its main package as the other examples' services are.
//
// It is the DynamoDB developer guide's product catalog, split by access
// pattern over three tables that share the product's Id (a number), as
// the guide's "Use Multiple Tables to Support Varied Access Patterns"
// lays it out:
//
//	ProductCatalog          Title, Description                   read on every product page
//	ProductAvailability     Price, QuantityOnHand                written on every sale
//	ExtendedProductCatalog  AverageCustomerRating, TrackListing  read on the detail page
//
// One split.Store over the split.Layout that Tables.Layout returns does
// every request: a page reads only the parts it shows (one BatchGetItem
// across their tables), a checkout writes only the availability part (one
// UpdateItem whose condition keeps the stock from going negative and the
// price from changing under the customer), and a product is created and
// deleted whole (one TransactWriteItems over the three tables). Every
// response carries the capacity DynamoDB reported for it, by table, so the
// guide's point shows in each answer: a checkout costs 1 WCU of
// ProductAvailability however long the product's description.
//
// A digital item (the guide's Music Album, QuantityOnHand "infinity") has
// no stock to count down: its checkout's conditional update fails, and the
// read that explains every refused checkout finds no QuantityOnHand and
// sells at the price shown without a write.
//
// On a server without transactions (dynalite) creating and deleting a
// product fail with 501 and write nothing (split.ErrNoTransactions); the
// pages, checkouts and price changes work on any server.
package catalogsvc

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"

	"github.com/dynashard/dynashard"
	"github.com/dynashard/dynashard/examples/internal/httpjson"
	"github.com/dynashard/dynashard/split"
)

// Product is a product, whole, under the guide's attribute names. A
// response holds the parts its call read or wrote; the others' fields are
// absent.
type Product struct {
	ID          int64  `dynamodbav:"Id" json:"id"`
	Title       string `dynamodbav:"Title,omitempty" json:"title,omitempty"`
	Description string `dynamodbav:"Description,omitempty" json:"description,omitempty"`
	// Price is as the guide writes it: "$5.00 USD".
	Price string `dynamodbav:"Price,omitempty" json:"price,omitempty"`
	// QuantityOnHand is the stock; nil for a digital item, which never
	// runs out.
	QuantityOnHand        *int64   `dynamodbav:"QuantityOnHand,omitempty" json:"quantity_on_hand,omitempty"`
	AverageCustomerRating float64  `dynamodbav:"AverageCustomerRating,omitempty" json:"average_customer_rating,omitempty"`
	TrackListing          []string `dynamodbav:"TrackListing,omitempty" json:"track_listing,omitempty"`
}

// The parts, by name.
const (
	Catalog      = "catalog"      // ProductCatalog: Title, Description
	Availability = "availability" // ProductAvailability: Price, QuantityOnHand
	Extended     = "extended"     // ExtendedProductCatalog: AverageCustomerRating, TrackListing
)

// Response is the body of every successful response: the product as read
// or written, and the capacity units DynamoDB reported for the call, by
// table (read units for a page, write units for a checkout).
type Response struct {
	Product          Product            `json:"product"`
	ConsumedCapacity map[string]float64 `json:"consumed_capacity"`
}

// Checkout is the body of POST /products/{id}/checkout.
type Checkout struct {
	Quantity int64 `json:"quantity"` // 1..MaxQuantity
	// Price is the price the customer was shown; the checkout fails with
	// 409 if it has changed since.
	Price string `json:"price"`
}

// NewPrice is the body of PUT /products/{id}/price.
type NewPrice struct {
	Price string `json:"price"`
}

// Input limits. A request beyond them gets a 400 naming the field.
const (
	MaxQuantity    = 1000      // per checkout
	MaxStock       = 1 << 40   // QuantityOnHand of a new product
	MaxText        = 200       // bytes of a title, a price, a track
	MaxDescription = 16 << 10  // bytes
	MaxTracks      = 100       // tracks in a listing
	maxBody        = 128 << 10 // JSON may escape a byte as six
)

// Samples returns the guide's sample rows: its three products with their
// titles, prices and stock (the Music Album, a digital item, has none);
// the ratings and the track listing are ours.
func Samples() []Product {
	stock := func(n int64) *int64 { return &n }
	return []Product{
		{ID: 21, Title: "Famous Book", Description: "Lorem ipsum", Price: "$5.00 USD", QuantityOnHand: stock(3750), AverageCustomerRating: 4.5},
		{ID: 302, Title: "Red Bicycle", Description: "Lorem ipsum", Price: "$125.00 USD", QuantityOnHand: stock(8), AverageCustomerRating: 4},
		{ID: 58, Title: "Music Album", Description: "Lorem ipsum", Price: "$5.00 USD", TrackListing: []string{"Overture", "Finale"}},
	}
}

// Tables names the three tables.
type Tables struct{ Catalog, Availability, Extended string }

// TablesWithPrefix returns prefix+"ProductCatalog",
// prefix+"ProductAvailability" and prefix+"ExtendedProductCatalog".
func TablesWithPrefix(prefix string) Tables {
	return Tables{prefix + "ProductCatalog", prefix + "ProductAvailability", prefix + "ExtendedProductCatalog"}
}

// Names lists the table names.
func (t Tables) Names() []string { return []string{t.Catalog, t.Availability, t.Extended} }

// Layout describes a product as three parts, one per table, keyed by Id
// (a number). Its CreateTableInputs are the tables' CreateTable requests.
func (t Tables) Layout() split.Layout {
	return split.Layout{
		PartitionKey:     "Id",
		PartitionKeyType: "N",
		Parts: []split.Part{
			{Name: Catalog, Table: t.Catalog, Attributes: []string{"Title", "Description"}},
			{Name: Availability, Table: t.Availability, Attributes: []string{"Price", "QuantityOnHand"}},
			{Name: Extended, Table: t.Extended, Attributes: []string{"AverageCustomerRating", "TrackListing"}},
		},
	}
}

// Service serves the catalog API. Safe for concurrent use.
type Service struct {
	products *split.Store[Product]
	log      *log.Logger
}

// New returns the service over tables, which must exist. It fails for
// table names the layout refuses (an error matching split.ErrInvalid). A
// nil logger means log.Default().
func New(c split.Client, tables Tables, logger *log.Logger) (*Service, error) {
	products, err := split.New[Product](c, tables.Layout())
	if err != nil {
		return nil, fmt.Errorf("catalogsvc: %w", err)
	}
	if logger == nil {
		logger = log.Default()
	}
	return &Service{products: products, log: logger}, nil
}

// Seed creates each of Samples that does not exist yet and returns how
// many it created. Without transactions it fails with an error matching
// split.ErrNoTransactions, having written nothing.
func (s *Service) Seed(ctx context.Context) (int, error) {
	n := 0
	for _, p := range Samples() {
		_, err := s.products.Create(ctx, p)
		switch {
		case errors.Is(err, split.ErrConflict): // there already
		case err != nil:
			return n, fmt.Errorf("catalogsvc: seed product %d: %w", p.ID, err)
		default:
			n++
		}
	}
	return n, nil
}

// Handler returns the HTTP API:
//
//	GET    /products/{id}               the product page: the catalog part
//	GET    /products/{id}/details       the detail page: catalog and extended parts, one BatchGetItem
//	GET    /products/{id}/availability  price and stock
//	POST   /products/{id}/checkout      take stock at the price shown (Checkout)
//	PUT    /products/{id}/price         set the price (NewPrice)
//	POST   /products                    create a product, every part at once (201; 501 without transactions)
//	DELETE /products/{id}               delete every part at once (501 without transactions)
func (s *Service) Handler() http.Handler {
	mux := http.NewServeMux()
	h := func(pattern string, f httpjson.Handler) { mux.Handle(pattern, httpjson.Wrap(s.log, f)) }
	h("GET /products/{id}", s.page(Catalog))
	h("GET /products/{id}/details", s.page(Catalog, Extended))
	h("GET /products/{id}/availability", s.page(Availability))
	h("POST /products/{id}/checkout", s.checkout)
	h("PUT /products/{id}/price", s.setPrice)
	h("POST /products", s.create)
	h("DELETE /products/{id}", s.delete)
	return mux
}

// page reads the named parts of the product in the path.
func (s *Service) page(parts ...string) httpjson.Handler {
	return func(r *http.Request) (int, any, error) {
		k, err := pathKey(r)
		if err != nil {
			return 0, nil, err
		}
		var used dynashard.Usage
		res, err := s.products.Get(dynashard.WithUsage(r.Context(), &used), k, parts)
		if err != nil {
			return 0, nil, notFound(k, err)
		}
		return http.StatusOK, respond(res.Item, &used), nil
	}
}

func (s *Service) checkout(r *http.Request) (int, any, error) {
	k, err := pathKey(r)
	if err != nil {
		return 0, nil, err
	}
	var in Checkout
	if err := httpjson.Decode(r, &in, maxBody); err != nil {
		return 0, nil, err
	}
	var p httpjson.Problems
	if in.Quantity < 1 || in.Quantity > MaxQuantity {
		p.Add("quantity", "want 1 to %d", MaxQuantity)
	}
	text(&p, "price", in.Price, MaxText)
	if err := p.Err(); err != nil {
		return 0, nil, err
	}
	var used dynashard.Usage
	ctx := dynashard.WithUsage(r.Context(), &used)
	stock, price := expression.Name("QuantityOnHand"), expression.Name("Price")
	got, err := s.products.Update(ctx, k, Availability,
		expression.Add(stock, expression.Value(-in.Quantity)),
		func(o *split.Options) {
			// The stock never goes negative, and the customer pays the
			// price shown, or nothing is written.
			o.Conditions = map[string]expression.ConditionBuilder{
				Availability: price.Equal(expression.Value(in.Price)).And(stock.GreaterThanEqual(expression.Value(in.Quantity))),
			}
		})
	if errors.Is(err, split.ErrConflict) {
		return s.refused(ctx, k, in, &used)
	}
	if err != nil {
		return 0, nil, notFound(k, err)
	}
	return http.StatusOK, respond(got, &used), nil
}

// refused answers a checkout whose condition failed, from the
// availability part as it is now: the price has changed (409), the stock
// is short (409), or the product is a digital item, which sells at the
// price shown with nothing to count down.
// ctx carries the checkout's Usage, used.
func (s *Service) refused(ctx context.Context, k split.Key, in Checkout, used *dynashard.Usage) (int, any, error) {
	res, err := s.products.Get(ctx, k, []string{Availability}, func(o *split.Options) { o.ConsistentRead = true })
	if err != nil {
		return 0, nil, notFound(k, err)
	}
	a := res.Item
	switch {
	case a.Price != in.Price:
		return 0, nil, &httpjson.Error{Status: http.StatusConflict, Message: fmt.Sprintf("the price is now %s", a.Price)}
	case a.QuantityOnHand != nil:
		return 0, nil, &httpjson.Error{Status: http.StatusConflict, Message: fmt.Sprintf("%d on hand", *a.QuantityOnHand)}
	}
	return http.StatusOK, respond(a, used), nil
}

func (s *Service) setPrice(r *http.Request) (int, any, error) {
	k, err := pathKey(r)
	if err != nil {
		return 0, nil, err
	}
	var in NewPrice
	if err := httpjson.Decode(r, &in, maxBody); err != nil {
		return 0, nil, err
	}
	var p httpjson.Problems
	text(&p, "price", in.Price, MaxText)
	if err := p.Err(); err != nil {
		return 0, nil, err
	}
	var used dynashard.Usage
	got, err := s.products.Update(dynashard.WithUsage(r.Context(), &used), k, Availability,
		expression.Set(expression.Name("Price"), expression.Value(in.Price)))
	if err != nil {
		return 0, nil, notFound(k, err)
	}
	return http.StatusOK, respond(got, &used), nil
}

func (s *Service) create(r *http.Request) (int, any, error) {
	var in Product
	if err := httpjson.Decode(r, &in, maxBody); err != nil {
		return 0, nil, err
	}
	if err := check(in); err != nil {
		return 0, nil, err
	}
	var used dynashard.Usage
	got, err := s.products.Create(dynashard.WithUsage(r.Context(), &used), in)
	switch {
	case errors.Is(err, split.ErrConflict):
		return 0, nil, &httpjson.Error{Status: http.StatusConflict, Message: fmt.Sprintf("product %d exists", in.ID)}
	case err != nil:
		return 0, nil, noTransactions(err)
	}
	return http.StatusCreated, respond(got, &used), nil
}

func (s *Service) delete(r *http.Request) (int, any, error) {
	k, err := pathKey(r)
	if err != nil {
		return 0, nil, err
	}
	var used dynashard.Usage
	if err := s.products.Delete(dynashard.WithUsage(r.Context(), &used), k); err != nil {
		return 0, nil, noTransactions(err)
	}
	id, _ := strconv.ParseInt(k.PK, 10, 64)
	return http.StatusOK, respond(Product{ID: id}, &used), nil
}

// check refuses a new product with a bad field.
func check(in Product) error {
	var p httpjson.Problems
	if in.ID < 1 {
		p.Add("id", "want a positive integer")
	}
	text(&p, "title", in.Title, MaxText)
	text(&p, "price", in.Price, MaxText)
	if len(in.Description) > MaxDescription || !utf8.ValidString(in.Description) {
		p.Add("description", "at most %d bytes of UTF-8", MaxDescription)
	}
	if q := in.QuantityOnHand; q != nil && (*q < 0 || *q > MaxStock) {
		p.Add("quantity_on_hand", "want 0 to %d, or none for a digital item", int64(MaxStock))
	}
	if r := in.AverageCustomerRating; r < 0 || r > 5 {
		p.Add("average_customer_rating", "want 0 to 5")
	}
	if len(in.TrackListing) > MaxTracks {
		p.Add("track_listing", "at most %d tracks", MaxTracks)
	}
	for i, t := range in.TrackListing {
		text(&p, fmt.Sprintf("track_listing[%d]", i), t, MaxText)
	}
	return p.Err()
}

func text(p *httpjson.Problems, field, v string, max int) {
	switch {
	case strings.TrimSpace(v) == "":
		p.Add(field, "required")
	case len(v) > max || !utf8.ValidString(v):
		p.Add(field, "at most %d bytes of UTF-8", max)
	}
}

// pathKey returns the key of the product whose id is in the path.
func pathKey(r *http.Request) (split.Key, error) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id < 1 {
		return split.Key{}, httpjson.BadRequest("id", "want a positive integer")
	}
	return split.Key{PK: strconv.FormatInt(id, 10)}, nil
}

// respond is p with the capacity units used reported, by table.
func respond(p Product, used *dynashard.Usage) Response {
	units := map[string]float64{}
	for table, c := range used.Tables() {
		units[table] = c.Total()
	}
	return Response{Product: p, ConsumedCapacity: units}
}

// notFound maps split.ErrNotFound (a product none of whose asked-for
// parts exists, or a missing part to update) to a 404.
func notFound(k split.Key, err error) error {
	if errors.Is(err, split.ErrNotFound) {
		return httpjson.NotFound("no product %s", k.PK)
	}
	return err
}

// noTransactions maps split.ErrNoTransactions to a 501: the server cannot
// create or delete a product as one unit, and split writes nothing rather
// than part of one.
func noTransactions(err error) error {
	if errors.Is(err, split.ErrNoTransactions) {
		return &httpjson.Error{Status: http.StatusNotImplemented,
			Message: "this DynamoDB has no transactions: a product is created and deleted only as one unit"}
	}
	return err
}
