// Package httpjson holds the HTTP plumbing dynashard's example services
// share: JSON responses and errors, strict request decoding, serving with
// graceful shutdown, and a small client that the demo and the end-to-end
// tests drive the services with.
package httpjson

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"strings"
	"time"
)

// Error is the body of every error response:
//
//	{"error": "invalid request", "fields": [{"field": "items[0].qty", "message": "must be 1..1000"}]}
//
// Fields name the offending inputs (JSON paths or query parameters), so a
// client can point at them without parsing Error.
type Error struct {
	Status  int          `json:"-"`
	Message string       `json:"error"`
	Fields  []FieldError `json:"fields,omitempty"`
}

func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d %s", e.Status, e.Message)
	for _, f := range e.Fields {
		fmt.Fprintf(&b, "; %s: %s", f.Field, f.Message)
	}
	return b.String()
}

// Has reports whether e names field among its problems.
func (e *Error) Has(field string) bool {
	for _, f := range e.Fields {
		if f.Field == field {
			return true
		}
	}
	return false
}

// FieldError is one rejected input.
type FieldError struct {
	Field   string `json:"field"`
	Message string `json:"message"`
}

// Problems collects field errors while a request is validated. The zero
// value is empty and ready to use.
type Problems []FieldError

// Add records that field is wrong.
func (p *Problems) Add(field, format string, args ...any) {
	*p = append(*p, FieldError{Field: field, Message: fmt.Sprintf(format, args...)})
}

// Err returns the problems as a 400 *Error, or nil if there are none.
func (p Problems) Err() error {
	if len(p) == 0 {
		return nil
	}
	return &Error{Status: http.StatusBadRequest, Message: "invalid request", Fields: p}
}

// BadRequest is a 400 error about one field.
func BadRequest(field, format string, args ...any) error {
	var p Problems
	p.Add(field, format, args...)
	return p.Err()
}

// NotFound is a 404 error.
func NotFound(format string, args ...any) error {
	return &Error{Status: http.StatusNotFound, Message: fmt.Sprintf(format, args...)}
}

// Write sends v as JSON with status.
func Write(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v) // the client may have gone; nothing to do about it
}

// Handler is an http.Handler that returns its result: a value to send as
// JSON with the status, or an error. An *Error is sent as it is; any other
// error is logged and sent as a bare 500, so internals never leak to
// clients.
type Handler func(r *http.Request) (status int, v any, err error)

// Wrap turns h into an http.Handler that logs server errors to logger.
func Wrap(logger *log.Logger, h Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		status, v, err := h(r)
		if err == nil {
			Write(w, status, v)
			return
		}
		var e *Error
		if !errors.As(err, &e) {
			if r.Context().Err() != nil {
				return // the client went away; nobody is listening
			}
			logger.Printf("%s %s: %v", r.Method, r.URL.Path, err)
			e = &Error{Status: http.StatusInternalServerError, Message: "internal error"}
		}
		Write(w, e.Status, e)
	})
}

// Decode reads r's body as one JSON value into v, rejecting unknown
// fields, trailing data and bodies over limit bytes with a 400 (413 for
// size) that names the problem.
func Decode(r *http.Request, v any, limit int64) error {
	if ct := r.Header.Get("Content-Type"); ct != "" && !strings.HasPrefix(ct, "application/json") {
		return &Error{Status: http.StatusUnsupportedMediaType, Message: "Content-Type must be application/json"}
	}
	dec := json.NewDecoder(http.MaxBytesReader(nil, r.Body, limit))
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if err == nil {
		if dec.More() {
			return BadRequest("body", "trailing data after the JSON value")
		}
		return nil
	}
	var (
		tooBig  *http.MaxBytesError
		typeErr *json.UnmarshalTypeError
		syntax  *json.SyntaxError
	)
	switch {
	case errors.As(err, &tooBig):
		return &Error{Status: http.StatusRequestEntityTooLarge, Message: fmt.Sprintf("body over %d bytes", limit)}
	case errors.As(err, &typeErr):
		return BadRequest(typeErr.Field, "want a JSON %s, got %s", typeErr.Type, typeErr.Value)
	case errors.As(err, &syntax):
		return BadRequest("body", "malformed JSON at byte %d", syntax.Offset)
	case errors.Is(err, io.EOF):
		return BadRequest("body", "empty body, want a JSON object")
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		// encoding/json has no typed error for this one.
		return BadRequest(strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`), "unknown field")
	default:
		return BadRequest("body", "%v", err)
	}
}

// Serve serves h on l until ctx is done, then shuts down gracefully:
// it stops accepting connections and waits up to grace for requests in
// flight to finish.
func Serve(ctx context.Context, l net.Listener, h http.Handler, grace time.Duration) error {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(l) }()
	select {
	case err := <-errc:
		return fmt.Errorf("httpjson: serve %s: %w", l.Addr(), err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	err := srv.Shutdown(sctx)
	if serr := <-errc; !errors.Is(serr, http.ErrServerClosed) && err == nil {
		err = serr
	}
	if err != nil {
		return fmt.Errorf("httpjson: shutdown %s: %w", l.Addr(), err)
	}
	return nil
}

// CursorKey decodes a hex key for signing list cursors, at least 16
// bytes. An empty string gives a random key, so cursors live as long as
// the process: instances behind one load balancer must share a key.
func CursorKey(hexKey string) ([]byte, error) {
	if hexKey == "" {
		k := make([]byte, 32)
		rand.Read(k) // never fails (crypto/rand)
		return k, nil
	}
	k, err := hex.DecodeString(hexKey)
	if err != nil || len(k) < 16 {
		return nil, errors.New("httpjson: cursor key: want at least 16 bytes in hex")
	}
	return k, nil
}
