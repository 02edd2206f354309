package locals3

import (
	"context"
	"io"
	"net/http"
	"testing"
)

// TestStartClose starts the pinned s3rver, sees it answer, and sees it gone
// after Close.
func TestStartClose(t *testing.T) {
	s, err := Start(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(s.Endpoint + "/")
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	s.Close()
	http.DefaultClient.CloseIdleConnections()
	if _, err := http.Get(s.Endpoint + "/"); err == nil {
		t.Errorf("%s still answers after Close", s.Endpoint)
	}
	s.Close() // twice is fine
}
