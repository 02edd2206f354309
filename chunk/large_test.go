package chunk

import (
	"bytes"
	"context"
	"io"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/dynashard/dynashard/internal/ddbtest"
	"github.com/dynashard/dynashard/internal/localddb"
)

// TestRoundTrip64MiB stores and reads a 64 MiB payload (171 chunks) on both
// servers with -chunk.long (make test-long), from bytes and back from a
// Reader, and checks the requests the package documentation promises: 1
// GetItem, 7 BatchWriteItem and 1 UpdateItem to write; 1 GetItem and 5
// BatchGetItem (full requests of 40 chunks, the fewest possible) to read.
// By default the payload is 10 MB (26 chunks: 2 BatchWriteItem, the first
// full, and 1 BatchGetItem; TestReaderWindow reads several); the 64 MiB
// took 40-50 s per server under -race on a busy 2-core machine.
func TestRoundTrip64MiB(t *testing.T) {
	size, chunks, writes, reads := 10_000_000, 26, 2, 1
	if *long {
		size, chunks, writes, reads = 64<<20, 171, 7, 5
	}
	eachParallel(t, func(t *testing.T, srv *ddbtest.Server) {
		e := newEnv(t, srv)
		c, oc := e.countingClient()
		st := newStore(t, c, e.parents, e.chunks)
		ctx := context.Background()
		data := payload(size, 64, false)
		key := sKey("large")
		info, err := st.Put(ctx, key, data)
		if err != nil {
			t.Fatal(err)
		}
		checkInfo(t, info, data, None, DefaultChunkSize)
		wrote := map[string]int{"GetItem": oc.count("GetItem"), "BatchWriteItem": oc.count("BatchWriteItem"), "UpdateItem": oc.count("UpdateItem")}
		oc.reset()
		r, err := st.Open(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(r)
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("read: %d bytes, %v", len(got), err)
		}
		read := map[string]int{"GetItem": oc.count("GetItem"), "BatchGetItem": oc.count("BatchGetItem")}
		t.Logf("%d chunks; write: %v; read: %v", info.Chunks, wrote, read)
		if info.Chunks != chunks {
			t.Errorf("%d chunks, want %d", info.Chunks, chunks)
		}
		if diff := cmp.Diff(map[string]int{"GetItem": 1, "BatchWriteItem": writes, "UpdateItem": 1}, wrote); diff != "" {
			t.Errorf("write requests (-want +got):\n%s", diff)
		}
		// dynalite answers a BatchGetItem with pages of about 1 MB, so only
		// DynamoDB Local shows the requests the store sends.
		if diff := cmp.Diff(map[string]int{"GetItem": 1, "BatchGetItem": reads}, read); srv.Kind == localddb.DynamoDBLocal && diff != "" {
			t.Errorf("read requests (-want +got):\n%s", diff)
		}
	})
}
