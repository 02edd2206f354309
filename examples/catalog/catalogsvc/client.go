package catalogsvc

import (
	"context"
	"fmt"
	"net/http"

	"github.com/dynashard/dynashard/examples/internal/httpjson"
)

// Client is a typed client of the API, for the tests.
type Client struct{ httpjson.Client }

func productPath(id int64) string { return fmt.Sprintf("/products/%d", id) }

func (c *Client) call(ctx context.Context, method, path string, body any) (Response, error) {
	var r Response
	err := c.Do(ctx, method, path, body, &r)
	return r, err
}

// Page reads the product page: the catalog part.
func (c *Client) Page(ctx context.Context, id int64) (Response, error) {
	return c.call(ctx, http.MethodGet, productPath(id), nil)
}

// Details reads the detail page: the catalog and extended parts.
func (c *Client) Details(ctx context.Context, id int64) (Response, error) {
	return c.call(ctx, http.MethodGet, productPath(id)+"/details", nil)
}

// Availability reads the price and the stock.
func (c *Client) Availability(ctx context.Context, id int64) (Response, error) {
	return c.call(ctx, http.MethodGet, productPath(id)+"/availability", nil)
}

// Checkout takes quantity items of the product at the price shown.
func (c *Client) Checkout(ctx context.Context, id int64, in Checkout) (Response, error) {
	return c.call(ctx, http.MethodPost, productPath(id)+"/checkout", in)
}

// SetPrice sets the product's price.
func (c *Client) SetPrice(ctx context.Context, id int64, price string) (Response, error) {
	return c.call(ctx, http.MethodPut, productPath(id)+"/price", NewPrice{Price: price})
}

// Create creates a product, every part at once.
func (c *Client) Create(ctx context.Context, p Product) (Response, error) {
	return c.call(ctx, http.MethodPost, "/products", p)
}

// Delete deletes every part of a product at once.
func (c *Client) Delete(ctx context.Context, id int64) (Response, error) {
	return c.call(ctx, http.MethodDelete, productPath(id), nil)
}
