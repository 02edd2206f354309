package chunk

import (
	"bytes"
	"context"
	"errors"
	"io"
	"testing"

	"github.com/dynashard/dynashard/internal/ddbtest"
)

// TestReplacedUnderReader replaces (or deletes) a payload while it is being
// read, between two windows of chunks, and checks what each reader makes
// of it: Get starts over with the new payload; a streaming Reader that has
// returned bytes fails with ErrConflict (or ErrNotFound), unless old
// versions are retained, and one that has not yet returned any moves on.
func TestReplacedUnderReader(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, srv *ddbtest.Server) {
		e := newEnv(t, srv)
		ctx := context.Background()
		// 1000-byte chunks, one request per window: a window is 100 chunks.
		opts := func(retain bool) func(*Options) {
			return func(o *Options) { o.ChunkSize, o.MaxConcurrency, o.RetainOld = 1000, 1, retain }
		}
		oldData, newData := payload(250_000, 1, false), payload(120_000, 2, false)
		writer := e.store(opts(false))

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
				h := newHookClient(e.c)
				st := New(h, e.parents, e.chunks, opts(tt.retain))
				change := func() {
					var err error
					if tt.del {
						err = New(e.c, e.parents, e.chunks, opts(tt.retain)).Delete(ctx, key)
					} else {
						_, err = New(e.c, e.parents, e.chunks, opts(tt.retain)).Put(ctx, key, newData)
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
					h.after = func(op string, n int, _ error) {
						if op == "BatchGetItem" && n == 1 {
							change()
						}
					}
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
