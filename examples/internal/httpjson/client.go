package httpjson

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync/atomic"
)

// Client calls a JSON service at Base ("http://127.0.0.1:8080"). Its zero
// value needs Base set; HTTP defaults to http.DefaultClient. Safe for
// concurrent use.
type Client struct {
	Base string
	HTTP *http.Client

	requests atomic.Int64
}

// Do sends method path with body (JSON-encoded unless nil) and decodes a
// 2xx response into out (unless nil). Any other status is returned as an
// *Error carrying the status and the service's error body.
func (c *Client) Do(ctx context.Context, method, path string, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return fmt.Errorf("httpjson: encode %s %s: %w", method, path, err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.Base+path, rd)
	if err != nil {
		return fmt.Errorf("httpjson: %w", err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	return c.send(req, out)
}

// Raw sends a request with body as it is (for malformed input).
func (c *Client) Raw(ctx context.Context, method, path, contentType string, body []byte, out any) error {
	req, err := http.NewRequestWithContext(ctx, method, c.Base+path, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("httpjson: %w", err)
	}
	req.Header.Set("Content-Type", contentType)
	return c.send(req, out)
}

func (c *Client) send(req *http.Request, out any) error {
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	c.requests.Add(1)
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("httpjson: %s %s: %w", req.Method, req.URL.Path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		e := &Error{Status: resp.StatusCode}
		if err := json.NewDecoder(resp.Body).Decode(e); err != nil {
			e.Message = fmt.Sprintf("%s (body not JSON: %v)", resp.Status, err)
		}
		return e
	}
	if out == nil {
		_, err = io.Copy(io.Discard, resp.Body)
	} else {
		err = json.NewDecoder(resp.Body).Decode(out)
	}
	if err != nil {
		return fmt.Errorf("httpjson: %s %s: read response: %w", req.Method, req.URL.Path, err)
	}
	return nil
}

// Requests is the number of requests sent so far.
func (c *Client) Requests() int64 { return c.requests.Load() }
