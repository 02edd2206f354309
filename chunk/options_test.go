package chunk

import (
	"bytes"
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/dynashard/dynashard/internal/ddbtest"
)

// TestConsistentRead: Get, Open and Stat read the parent eventually
// consistently by default, consistently with Options.ConsistentRead, set
// for the Store or for one call (which leaves the Store as it is); Delete
// reads it consistently whatever the setting. Per-call options reach the
// rest of the call too: a Delete with RetainOld leaves the chunks.
func TestConsistentRead(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, srv *ddbtest.Server) {
		e := newEnv(t, srv)
		c, oc := e.countingClient()
		ctx := context.Background()
		key := sKey("consistency")
		data := payload(3000, 9, false)
		st := newStore(t, c, e.parents, e.chunks, func(o *Options) { o.ChunkSize = 1000 })
		strict := newStore(t, c, e.parents, e.chunks, func(o *Options) { o.ChunkSize = 1000; o.ConsistentRead = true })
		info, err := st.Put(ctx, key, data)
		if err != nil {
			t.Fatal(err)
		}
		on := func(o *Options) { o.ConsistentRead = true }
		off := func(o *Options) { o.ConsistentRead = false }
		read := func(st *Store, optFns ...func(*Options)) func() error {
			return func() error {
				got, _, err := st.Get(ctx, key, optFns...)
				if err == nil && !bytes.Equal(got, data) {
					t.Errorf("get: %d bytes, want the payload", len(got))
				}
				return err
			}
		}
		open := func(st *Store, optFns ...func(*Options)) func() error {
			return func() error {
				r, err := st.Open(ctx, key, optFns...)
				if err == nil {
					r.Close()
				}
				return err
			}
		}
		stat := func(st *Store, optFns ...func(*Options)) func() error {
			return func() error { _, err := st.Stat(ctx, key, optFns...); return err }
		}
		tests := []struct {
			name string
			call func() error
			want bool
		}{
			{"Get default", read(st), false},
			{"Get per call", read(st, on), true},
			{"Get after a per-call option", read(st), false},
			{"Get store option", read(strict), true},
			{"Get store option, off per call", read(strict, off), false},
			{"Open default", open(st), false},
			{"Open per call", open(st, on), true},
			{"Stat default", stat(st), false},
			{"Stat per call", stat(st, on), true},
			{"Stat store option", stat(strict), true},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				oc.reset()
				if err := tt.call(); err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff([]bool{tt.want}, oc.consistentReads()); diff != "" {
					t.Errorf("GetItem ConsistentRead (-want +got):\n%s", diff)
				}
			})
		}

		oc.reset()
		if err := st.Delete(ctx, key, off, func(o *Options) { o.RetainOld = true }); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]bool{true}, oc.consistentReads()); diff != "" {
			t.Errorf("Delete's GetItem ConsistentRead (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(versionKeys(t, key, info), e.keysOf(t, key)); diff != "" {
			t.Errorf("chunks after a Delete with RetainOld (-want +got):\n%s", diff)
		}
	})
}
