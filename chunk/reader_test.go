package chunk

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/dynashard/dynashard/internal/ddbtest"
	"github.com/dynashard/dynashard/internal/localddb"
)

// TestReplacedUnderReader replaces (or deletes) a payload while it is being
// read, between two windows of chunks, and checks what each reader makes
// of it: Get starts over with the new payload; a streaming Reader that has
// returned bytes fails with ErrConflict (or ErrNotFound), unless old
// versions are retained, and one that has not yet returned any moves on.
func TestReplacedUnderReader(t *testing.T) {
	eachParallel(t, func(t *testing.T, srv *ddbtest.Server) {
		e := newEnv(t, srv)
		ctx := context.Background()
		// 1000-byte chunks, one request per window: a window is 100 chunks.
		opts := func(retain bool) func(*Options) {
			return func(o *Options) { o.ChunkSize, o.MaxConcurrency, o.RetainOld = 1000, 1, retain }
		}
		oldData, newData := payload(250_000, 1, false), payload(120_000, 2, false)
		writer := e.store(t, opts(false))

		tests := []struct {
			name    string
			retain  bool
			del     bool
			stream  bool
			prefix  int // bytes the stream returns before the change
			want    []byte
			wantErr error
		}{
			{name: "get", want: newData},
			{name: "get deleted", del: true, wantErr: ErrNotFound},
			{name: "stream", stream: true, prefix: 10, wantErr: ErrConflict},
			{name: "stream deleted", stream: true, prefix: 10, del: true, wantErr: ErrNotFound},
			{name: "stream retained", stream: true, prefix: 10, retain: true, want: oldData},
			{name: "stream before any byte", stream: true, want: newData},
		}
		for i, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				key := sKey(string(rune('a' + i)))
				if _, err := writer.Put(ctx, key, oldData); err != nil {
					t.Fatal(err)
				}
				c, h := e.countingClient()
				st := newStore(t, c, e.parents, e.chunks, opts(tt.retain))
				other := newStore(t, e.c, e.parents, e.chunks, opts(tt.retain))
				change := func() {
					var err error
					if tt.del {
						err = other.Delete(ctx, key)
					} else {
						_, err = other.Put(ctx, key, newData)
					}
					if err != nil {
						t.Error(err)
					}
				}
				var got []byte
				var err error
				switch {
				case !tt.stream:
					// Change the payload right after the first window.
					h.hooks(nil, func(op string, n int, _ error) {
						if op == "BatchGetItem" && n == 1 {
							change()
						}
					})
					got, _, err = st.Get(ctx, key)
				case tt.prefix == 0:
					var r *Reader
					if r, err = st.Open(ctx, key); err != nil {
						t.Fatal(err)
					}
					change()
					got, err = io.ReadAll(r)
				default:
					var r *Reader
					if r, err = st.Open(ctx, key); err != nil {
						t.Fatal(err)
					}
					head := make([]byte, tt.prefix)
					if _, err := io.ReadFull(r, head); err != nil {
						t.Fatal(err)
					}
					change()
					var rest []byte
					rest, err = io.ReadAll(r)
					got = append(head, rest...)
				}
				if tt.wantErr != nil {
					if !errors.Is(err, tt.wantErr) {
						t.Fatalf("got %v, want %v", err, tt.wantErr)
					}
					return
				}
				if err != nil || !bytes.Equal(got, tt.want) {
					t.Fatalf("got %d bytes, %v; want the %d-byte payload", len(got), err, len(tt.want))
				}
			})
		}
	})
}

// TestReaderCancel cancels ctx after a Reader has returned its first bytes:
// the next Read fails with the ctx error and returns nothing more, whether
// the rest of the payload is already fetched (one window) or not. A Get
// whose ctx is cancelled after its first BatchGetItem fails the same way.
func TestReaderCancel(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, srv *ddbtest.Server) {
		e := newEnv(t, srv)
		c, oc := e.countingClient()
		// 1000-byte chunks, one request per window: a window is 100 chunks.
		st := newStore(t, c, e.parents, e.chunks, func(o *Options) { o.ChunkSize, o.MaxConcurrency = 1000, 1 })
		for _, size := range []int{50_000, 250_000} {
			key := sKey(fmt.Sprint("cancel", size))
			if _, err := st.Put(context.Background(), key, payload(size, 3, false)); err != nil {
				t.Fatal(err)
			}
			t.Run(fmt.Sprintf("reader/%d", size), func(t *testing.T) {
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				r, err := st.Open(ctx, key)
				if err != nil {
					t.Fatal(err)
				}
				defer r.Close()
				if _, err := io.ReadFull(r, make([]byte, 10)); err != nil {
					t.Fatal(err)
				}
				cancel()
				n, err := io.Copy(io.Discard, r)
				if n != 0 || !errors.Is(err, context.Canceled) {
					t.Errorf("after cancel: read %d bytes, %v; want 0 bytes and context.Canceled", n, err)
				}
			})
			t.Run(fmt.Sprintf("get/%d", size), func(t *testing.T) {
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				oc.hooks(nil, func(op string, _ int, _ error) {
					if op == "BatchGetItem" {
						cancel()
					}
				})
				defer oc.hooks(nil, nil)
				got, _, err := st.Get(ctx, key)
				if got != nil || !errors.Is(err, context.Canceled) {
					t.Errorf("got %d bytes, %v; want context.Canceled", len(got), err)
				}
			})
		}
	})
}

// TestReaderWindow streams a payload larger than a Reader's prefetch window
// and checks, at every BatchGetItem response, that the chunk bytes fetched
// but not yet read stay within the window, which holds two full requests
// (so more than one request is fetched ahead once), and that the read
// takes the fewest BatchGetItem requests possible. With -chunk.long it
// does so at the default options: a 40 MB payload, the documented 32 MiB
// window, requests of 40 chunks (16 MiB). By default it scales the same
// case down by five: 32 KiB chunks, so requests of 100 chunks (3.2 MiB),
// a window lowered to 7 MiB (two such requests) and an 8 MB payload.
func TestReaderWindow(t *testing.T) {
	size, chunkSize, perRequest, window, request := 40_000_000, 0, 40, int64(maxReadWindow), int64(16<<20)
	if !*long {
		size, chunkSize, perRequest, window, request = 8_000_000, 32<<10, 100, 7<<20, 100*32<<10
	}
	eachParallel(t, func(t *testing.T, srv *ddbtest.Server) {
		e := newEnv(t, srv)
		c, oc := e.countingClient()
		st := newStore(t, c, e.parents, e.chunks, func(o *Options) {
			if chunkSize > 0 {
				o.ChunkSize = chunkSize
			}
		})
		if window != maxReadWindow {
			st.readWindow = window
		}
		ctx := context.Background()
		key := sKey("window")
		data := payload(size, 4, false)
		info, err := st.Put(ctx, key, data)
		if err != nil {
			t.Fatal(err)
		}
		oc.reset()
		var mu sync.Mutex
		var read, worst int64
		oc.hooks(nil, func(op string, _ int, _ error) {
			fetched := oc.fetched()
			mu.Lock()
			defer mu.Unlock()
			worst = max(worst, fetched-read)
		})
		defer oc.hooks(nil, nil)
		r, err := st.Open(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		var got bytes.Buffer
		buf := make([]byte, 32<<10)
		for {
			n, err := r.Read(buf)
			got.Write(buf[:n])
			mu.Lock()
			read += int64(n)
			mu.Unlock()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		if !bytes.Equal(got.Bytes(), data) {
			t.Fatalf("read %d bytes, want the %d put", got.Len(), len(data))
		}
		if worst > window || worst <= request {
			t.Errorf("up to %d chunk bytes fetched ahead of the reader, want more than %d (a full request: the window holds two) and at most %d",
				worst, request, window)
		}
		// dynalite answers a BatchGetItem with pages of about 1 MB, so only
		// DynamoDB Local shows the requests the store sends.
		if got, want := oc.count("BatchGetItem"), (info.Chunks+perRequest-1)/perRequest; srv.Kind == localddb.DynamoDBLocal && got != want {
			t.Errorf("%d BatchGetItem requests for %d chunks, want %d", got, info.Chunks, want)
		}
	})
}

// TestReadRequestsFromParent: a read asks each BatchGetItem for as many
// chunks as one 16 MB response can hold at the chunk size the parent
// records, so 40 full chunks of DefaultChunkSize take one request, as the
// package documentation says. (It took two of 20 when the chunk size was
// estimated from the stored size and the chunk count.) A parent written
// before ChunkSize was recorded stays readable, in requests sized for the
// largest chunk its sizes allow. The second payload, whose estimate is
// exact, runs with -chunk.long: each is 15 MB.
func TestReadRequestsFromParent(t *testing.T) {
	cases := []struct {
		name          string
		size          int
		requests, old int
	}{
		{"40 full chunks", 40 * DefaultChunkSize, 1, 2},
		{"39 full chunks and 1 byte", 39*DefaultChunkSize + 1, 1, 1}, // the estimate is exact here
	}
	if !*long {
		cases = cases[:1]
	}
	eachParallel(t, func(t *testing.T, srv *ddbtest.Server) {
		e := newEnv(t, srv)
		c, oc := e.countingClient()
		st := newStore(t, c, e.parents, e.chunks)
		ctx := context.Background()
		// Each payload is read as Put wrote it, then as a parent written
		// before ChunkSize was recorded (the attribute removed).
		for i, tt := range cases {
			t.Run(tt.name, func(t *testing.T) {
				key := sKey(fmt.Sprint("requests", i))
				data := payload(tt.size, uint64(i), false)
				if _, err := st.Put(ctx, key, data); err != nil {
					t.Fatal(err)
				}
				for _, old := range []bool{false, true} {
					if old {
						if _, err := e.c.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: &e.parents, Key: key.item(),
							UpdateExpression: aws.String("REMOVE " + attrChunk)}); err != nil {
							t.Fatal(err)
						}
					}
					oc.reset()
					got, _, err := st.Get(ctx, key)
					if err != nil || !bytes.Equal(got, data) {
						t.Fatalf("get (parent without ChunkSize: %v): %d bytes, %v; want the %d put", old, len(got), err, len(data))
					}
					want := tt.requests
					if old {
						want = tt.old
					}
					// dynalite answers a BatchGetItem with pages of about 1
					// MB: only DynamoDB Local shows the requests the store
					// sends.
					if n := oc.count("BatchGetItem"); srv.Kind == localddb.DynamoDBLocal && n != want {
						t.Errorf("parent without ChunkSize: %v: %d BatchGetItem requests, want %d", old, n, want)
					}
				}
			})
		}
	})
}
