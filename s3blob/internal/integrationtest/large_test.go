package integrationtest

import (
	"context"
	"crypto/sha256"
	"io"
	"testing"
	"time"

	"github.com/dynashard/dynashard/chunk"
	"github.com/dynashard/dynashard/internal/ddbtest"
)

// TestLarge streams a 100 MiB payload (with -s3blob.long; 24 MiB, three
// parts, by default) in with PutReader (a reader without Len, so nothing
// knows its size ahead) and out with a Reader, hashing it on both sides:
// neither side holds the payload whole. Its DynamoDB side is one parent
// item, so it runs on the default server only.
func TestLarge(t *testing.T) {
	size, name := int64(24<<20), "24 MiB"
	if *long {
		size, name = 100<<20, "100 MiB"
	}
	srv, err := ddbtest.Default()
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, srv)
	ctx := context.Background()
	st := e.store(t, e.ddb, e.blob(t, e.s3), func(o *chunk.Options) { o.MaxSize = 1 << 30 })
	key := sKey("large")
	src := &genReader{seed: 7, n: size}
	h := sha256.New()
	start := time.Now()
	info, err := st.PutReader(ctx, key, io.TeeReader(src, h))
	wrote := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	want := [32]byte(h.Sum(nil))
	if info.Size != size || info.SHA256 != want || info.Object == "" {
		t.Fatalf("info %+v: want %d bytes offloaded, SHA-256 %x", info, size, want)
	}
	r, err := st.Open(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	h.Reset()
	start = time.Now()
	n, err := io.Copy(h, r)
	// For the record only (-v); the machine's load decides these.
	t.Logf("%s: PutReader %v, Reader %v", name, wrote, time.Since(start))
	if err != nil || n != size || [32]byte(h.Sum(nil)) != want {
		t.Fatalf("read back %d bytes (%v), SHA-256 %x; want %d bytes, %x", n, err, h.Sum(nil), size, want)
	}
	if err := st.Delete(ctx, key); err != nil {
		t.Fatal(err)
	}
	if objs := e.objects(t); len(objs) != 0 {
		t.Errorf("bucket holds %q after Delete", objs)
	}
}
