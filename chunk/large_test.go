package chunk

import (
	"bytes"
	"context"
	"io"
	"testing"

	"github.com/dynashard/dynashard/internal/ddbtest"
)

// TestRoundTrip64MiB stores and reads a 64 MiB payload (171 chunks) on both
// servers (dynalite is no slower than DynamoDB Local at this size: 3-13 s
// each on a loaded 2-core machine), from bytes and back from a Reader.
func TestRoundTrip64MiB(t *testing.T) {
	if testing.Short() {
		t.Skip("64 MiB round trip skipped in -short mode")
	}
	ddbtest.Each(t, func(t *testing.T, srv *ddbtest.Server) {
		e := newEnv(t, srv)
		st := e.store()
		ctx := context.Background()
		data := payload(64<<20, 64, false)
		key := sKey("large")
		info, err := st.Put(ctx, key, data)
		if err != nil {
			t.Fatal(err)
		}
		checkInfo(t, info, data, None, DefaultChunkSize)
		r, err := st.Open(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(r)
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("read: %d bytes, %v", len(got), err)
		}
	})
}
