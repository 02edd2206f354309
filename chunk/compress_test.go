package chunk

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"testing"
	"testing/iotest"

	"github.com/dynashard/dynashard/internal/ddbtest"
)

// TestCompressionChoice runs Put with each Compression on payloads that the
// size and ratio rules store raw or compressed, at and around chunk
// boundaries, and reads every payload back through stores configured with
// None, Gzip and Zstd: readers decode what the parent records.
func TestCompressionChoice(t *testing.T) {
	eachParallel(t, func(t *testing.T, srv *ddbtest.Server) {
		e := newEnv(t, srv)
		const cs = 1000
		mk := func(c Compression) *Store {
			return e.store(t, func(o *Options) { o.ChunkSize, o.InlineLimit, o.Compression = cs, 100, c })
		}
		readers := map[Compression]*Store{None: mk(None), Gzip: mk(Gzip), Zstd: mk(Zstd)}
		tests := []struct {
			name string
			n    int
			text bool
			want bool // stored compressed
		}{
			{"text below MinCompressSize", DefaultMinCompressSize - 1, true, false},
			{"text at MinCompressSize", DefaultMinCompressSize, true, true},
			{"text at chunk size", cs, true, false}, // below the 1 KiB minimum
			{"text of 3 chunks", 3 * cs, true, true},
			{"text of 3 chunks + 1", 3*cs + 1, true, true},
			{"text large", 20*cs - 1, true, true},
			{"random at MinCompressSize", DefaultMinCompressSize, false, false},
			{"random of 3 chunks", 3 * cs, false, false},
			{"random large", 20*cs + 1, false, false},
		}
		for _, c := range []Compression{Gzip, Zstd} {
			w := readers[c]
			for _, tt := range tests {
				for _, mode := range []string{"bytes", "reader"} {
					name := fmt.Sprintf("%s/%s/%s", c, tt.name, mode)
					t.Run(name, func(t *testing.T) {
						ctx := context.Background()
						key := sKey(name)
						data := payload(tt.n, uint64(tt.n), tt.text)
						var info Info
						var err error
						if mode == "bytes" {
							info, err = w.Put(ctx, key, data)
						} else {
							info, err = w.PutReader(ctx, key, noLen{iotest.HalfReader(bytes.NewReader(data))})
						}
						if err != nil {
							t.Fatalf("put: %v", err)
						}
						want := None
						if tt.want {
							want = c
						}
						if info.Compression != want {
							t.Errorf("compression %q, want %q", info.Compression, want)
						}
						if want == None && info.StoredSize != info.Size {
							t.Errorf("stored %d bytes of a raw %d", info.StoredSize, info.Size)
						}
						if want != None && float64(info.StoredSize) > DefaultMaxCompressRatio*float64(info.Size) {
							t.Errorf("stored %d compressed bytes of %d", info.StoredSize, info.Size)
						}
						for rc, r := range readers {
							got, ginfo, err := r.Get(ctx, key)
							if err != nil || !bytes.Equal(got, data) || ginfo.Compression != want {
								t.Fatalf("store with %q: get %d bytes (%q), %v; want the %d put (%q)", rc, len(got), ginfo.Compression, err, len(data), want)
							}
							rd, err := r.Open(ctx, key)
							if err != nil {
								t.Fatalf("store with %q: open: %v", rc, err)
							}
							streamed, err := io.ReadAll(iotest.HalfReader(rd))
							if err != nil || !bytes.Equal(streamed, data) {
								t.Fatalf("store with %q: reader: %d bytes, %v; want the %d put", rc, len(streamed), err, len(data))
							}
							rd.Close()
						}
					})
				}
			}
		}
	})
}

// TestIncompressibleInProbe: a payload that ends inside the probe (longer
// than MinCompressSize, shorter than max(ChunkSize, MinCompressSize)) and
// does not compress is stored raw, whole, and replaces the previous value
// only then. Outside testing found such a Put stored no byte at all, after
// deleting the previous value's chunks. The previous value is 2 chunks
// (4 with -chunk.long).
func TestIncompressibleInProbe(t *testing.T) {
	oldSize := DefaultChunkSize + 1
	if *long {
		oldSize = 3 * DefaultChunkSize
	}
	eachParallel(t, func(t *testing.T, srv *ddbtest.Server) {
		e := newEnv(t, srv)
		ctx := context.Background()
		for _, c := range []Compression{Gzip, Zstd} {
			st := e.store(t, func(o *Options) { o.Compression = c })
			for _, n := range []int{DefaultMinCompressSize + 1, 3 << 10, 200 << 10, DefaultChunkSize - 1} {
				for _, mode := range []string{"bytes", "reader"} {
					name := fmt.Sprintf("%s/%d/%s", c, n, mode)
					t.Run(name, func(t *testing.T) {
						key := sKey(name)
						old := payload(oldSize, 1, false)
						if _, err := st.Put(ctx, key, old); err != nil {
							t.Fatal(err)
						}
						data := payload(n, 2, false)
						var info Info
						var err error
						if mode == "bytes" {
							info, err = st.Put(ctx, key, data)
						} else {
							info, err = st.PutReader(ctx, key, noLen{bytes.NewReader(data)})
						}
						if err != nil {
							t.Fatalf("put: %v", err)
						}
						if info.Compression != None || info.StoredSize != int64(n) || info.Size != int64(n) {
							t.Errorf("info: %q, %d stored of %d; want raw, %d of %d", info.Compression, info.StoredSize, info.Size, n, n)
						}
						got, ginfo, err := st.Get(ctx, key, func(o *Options) { o.ConsistentRead = true })
						if err != nil || !bytes.Equal(got, data) {
							t.Fatalf("get: %d bytes, %v; want the %d put", len(got), err, n)
						}
						if ginfo.StoredSize != int64(n) {
							t.Errorf("parent records %d stored bytes, want %d", ginfo.StoredSize, n)
						}
					})
				}
			}
		}
	})
}
