package chunk

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/dynashard/dynashard/dynashardtest/faultproxy"
	"github.com/dynashard/dynashard/internal/ddbtest"
)

// keysOf returns the chunk keys of one parent key.
func (e *env) keysOf(t testing.TB, key Key) []string {
	t.Helper()
	prefix, err := key.prefix()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, k := range e.chunkKeys(t) {
		if p, _, _, err := parseChunkKey(k); err == nil && p == prefix {
			out = append(out, k)
		}
	}
	return out
}

// later returns a clock Grace plus a minute ahead of the real one.
func later(st *Store) func() time.Time {
	return func() time.Time { return time.Now().Add(st.opts.Grace + time.Minute) }
}

// TestWriterStopped cancels a Put at every step between its first chunk
// request and its parent update. Each time the old payload stays readable,
// the new chunks are invisible orphans, Sweep leaves them alone while they
// are younger than Grace and removes exactly them afterwards.
func TestWriterStopped(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, srv *ddbtest.Server) {
		e := newEnv(t, srv)
		c, h := e.countingClient()
		opts := func(o *Options) { o.ChunkSize = 1000; o.InlineLimit = 100; o.MaxConcurrency = 1 }
		st := newStore(t, c, e.parents, e.chunks, opts)
		ctx := context.Background()
		newData := payload(60_000, 2, false) // 60 chunks: 3 BatchWriteItem requests of 25, 25, 10
		const batches = 3

		type step struct {
			name string
			op   string // the call to stop at
			n    int
			post bool // after the call returned (it was applied)
		}
		var steps []step
		for i := 1; i <= batches; i++ {
			steps = append(steps, step{fmt.Sprintf("before batch %d", i), "BatchWriteItem", i, false},
				step{fmt.Sprintf("after batch %d", i), "BatchWriteItem", i, true})
		}
		steps = append(steps, step{"before flip", "UpdateItem", 1, false})

		for i, sp := range steps {
			t.Run(sp.name, func(t *testing.T) {
				key := sKey(fmt.Sprint("stop", i))
				oldData := payload(3000, uint64(i), false)
				old, err := st.Put(ctx, key, oldData)
				if err != nil {
					t.Fatal(err)
				}
				pctx, cancel := context.WithCancel(ctx)
				defer cancel()
				h.reset()
				var updated atomic.Bool
				h.hooks(func(op string, n int) {
					if op == sp.op && n == sp.n && !sp.post {
						cancel()
					}
				}, func(op string, n int, err error) {
					if op == sp.op && n == sp.n && sp.post {
						cancel()
					}
					if op == "UpdateItem" && !errors.Is(err, context.Canceled) {
						updated.Store(true)
					}
				})
				_, err = st.Put(pctx, key, newData)
				h.hooks(nil, nil)
				if !errors.Is(err, context.Canceled) || errors.Is(err, ErrConflict) {
					t.Fatalf("put: got %v, want context.Canceled", err)
				}
				if updated.Load() {
					t.Errorf("the parent update was sent")
				}
				got, info, err := st.Get(ctx, key)
				if err != nil || !bytes.Equal(got, oldData) || info.Version != old.Version {
					t.Fatalf("get: %v (version %s), want the old payload", err, info.Version)
				}
				before := e.keysOf(t, key)
				orphans := len(before) - old.Chunks
				if wantMin := (sp.n - 1) * 25; sp.post {
					if orphans < min(60, sp.n*25) {
						t.Errorf("%d orphans, want at least the %d chunks written", orphans, min(60, sp.n*25))
					}
				} else if orphans < wantMin {
					t.Errorf("%d orphans, want at least %d", orphans, wantMin)
				}
				stats, err := st.Sweep(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if stats.Deleted != 0 || stats.Young < orphans {
					t.Errorf("sweep within Grace: %+v; want nothing deleted, %d young", stats, orphans)
				}
				if diff := cmp.Diff(before, e.keysOf(t, key)); diff != "" {
					t.Errorf("sweep within Grace changed chunks (-before +after):\n%s", diff)
				}
				late := newStore(t, c, e.parents, e.chunks, opts)
				late.now = later(late)
				stats, err = late.Sweep(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if stats.Deleted != orphans {
					t.Errorf("sweep after Grace deleted %d, want the %d orphans", stats.Deleted, orphans)
				}
				if diff := cmp.Diff(versionKeys(t, key, old), e.keysOf(t, key)); diff != "" {
					t.Errorf("after sweep (-want +got):\n%s", diff)
				}
				got, _, err = st.Get(ctx, key)
				if err != nil || !bytes.Equal(got, oldData) {
					t.Fatalf("get after sweep: %v", err)
				}
			})
		}
	})
}

// stalled returns a Store whose Puts wait before their parent update
// until release is closed, after signalling on reached.
func stalled(t testing.TB, e *env, opts func(*Options)) (st *Store, reached chan struct{}, release chan struct{}) {
	st = e.store(t, opts)
	reached, release = make(chan struct{}), make(chan struct{})
	st.beforeFlip = func(ctx context.Context) error {
		close(reached)
		<-release
		return nil
	}
	return st, reached, release
}

// TestStaleFlip: a writer that read version v1 and stalls cannot flip after
// another writer moved the key on; it gets ErrConflict and its chunks go.
func TestStaleFlip(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, srv *ddbtest.Server) {
		e := newEnv(t, srv)
		opts := func(o *Options) { o.ChunkSize = 1000; o.InlineLimit = 100 }
		ctx := context.Background()
		for _, initial := range []bool{true, false} {
			t.Run(fmt.Sprint("initial=", initial), func(t *testing.T) {
				key := sKey(fmt.Sprint("stale", initial))
				fresh := e.store(t, opts)
				if initial {
					if _, err := fresh.Put(ctx, key, payload(5000, 1, false)); err != nil {
						t.Fatal(err)
					}
				}
				slow, reached, release := stalled(t, e, opts)
				done := make(chan error, 1)
				go func() {
					_, err := slow.Put(ctx, key, payload(7000, 2, false))
					done <- err
				}()
				<-reached
				winner := payload(4000, 3, false)
				info, err := fresh.Put(ctx, key, winner)
				if err != nil {
					t.Fatal(err)
				}
				close(release)
				if err := <-done; !errors.Is(err, ErrConflict) {
					t.Fatalf("stale writer: got %v, want ErrConflict", err)
				}
				got, _, err := fresh.Get(ctx, key)
				if err != nil || !bytes.Equal(got, winner) {
					t.Fatalf("get: %v, want the winner's payload", err)
				}
				if diff := cmp.Diff(versionKeys(t, key, info), e.keysOf(t, key)); diff != "" {
					t.Errorf("chunks (-want +got):\n%s", diff)
				}
			})
		}
	})
}

// TestFlipTooLate: a writer that stalls past Grace/2 must not flip at all,
// since Sweep may already be deleting its chunks.
func TestFlipTooLate(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, srv *ddbtest.Server) {
		e := newEnv(t, srv)
		ctx := context.Background()
		st := e.store(t, func(o *Options) { o.ChunkSize = 1000 })
		key := sKey("late")
		oldData := payload(3000, 1, false)
		old, err := st.Put(ctx, key, oldData)
		if err != nil {
			t.Fatal(err)
		}
		st.beforeFlip = func(context.Context) error {
			st.now = func() time.Time { return time.Now().Add(st.opts.Grace/2 + time.Second) }
			return nil
		}
		if _, err := st.Put(ctx, key, payload(9000, 2, false)); err == nil {
			t.Fatal("put after Grace/2: got nil error")
		}
		st.beforeFlip, st.now = nil, nil
		got, _, err := st.Get(ctx, key)
		if err != nil || !bytes.Equal(got, oldData) {
			t.Fatalf("get: %v, want the old payload", err)
		}
		if diff := cmp.Diff(versionKeys(t, key, old), e.keysOf(t, key)); diff != "" {
			t.Errorf("chunks (-want +got):\n%s", diff)
		}
	})
}

// TestDeleteNoResurrection: a Put that started from a version that Delete
// then removed must fail, not bring the key back.
func TestDeleteNoResurrection(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, srv *ddbtest.Server) {
		e := newEnv(t, srv)
		opts := func(o *Options) { o.ChunkSize = 1000 }
		ctx := context.Background()
		st := e.store(t, opts)
		key := sKey("del")
		if _, err := st.Put(ctx, key, payload(5000, 1, false)); err != nil {
			t.Fatal(err)
		}
		slow, reached, release := stalled(t, e, opts)
		done := make(chan error, 1)
		go func() {
			_, err := slow.Put(ctx, key, payload(6000, 2, false))
			done <- err
		}()
		<-reached
		if err := st.Delete(ctx, key); err != nil {
			t.Fatal(err)
		}
		close(release)
		if err := <-done; !errors.Is(err, ErrConflict) {
			t.Fatalf("put from the deleted version: got %v, want ErrConflict", err)
		}
		if _, _, err := st.Get(ctx, key); !errors.Is(err, ErrNotFound) {
			t.Errorf("get: got %v, want ErrNotFound", err)
		}
		if keys := e.keysOf(t, key); len(keys) != 0 {
			t.Errorf("%d chunks left, want none", len(keys))
		}
	})
}

// TestAmbiguousFlip loses the response to the parent update in every way
// the proxy can, and checks that Put reports what really happened.
func TestAmbiguousFlip(t *testing.T) {
	eachParallel(t, func(t *testing.T, srv *ddbtest.Server) {
		e := newEnv(t, srv)
		proxy, pc := newProxy(t, srv)
		ctx := context.Background()
		tests := []struct {
			name    string
			cfg     faultproxy.Config
			applied bool // the update reaches the server
		}{
			{"reset after", faultproxy.Config{ResetAfterRate: 1}, true},
			{"500 after", faultproxy.Config{ErrorAfterRate: 1}, true},
			{"truncated", faultproxy.Config{TruncateRate: 1}, true},
			{"reset before", faultproxy.Config{ResetBeforeRate: 1}, false},
			{"500 before", faultproxy.Config{ErrorRate: 1}, false},
			{"throttled", faultproxy.Config{ThrottleRate: 1}, false},
		}
		for i, tt := range tests {
			for _, initial := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/initial=%v", tt.name, initial), func(t *testing.T) {
					st := newStore(t, pc, e.parents, e.chunks, func(o *Options) { o.ChunkSize = 1000 })
					st.flipDelay = 100 * time.Microsecond
					key := sKey(fmt.Sprint("amb", i, initial))
					var old Info
					oldData := payload(2500, 1, false)
					if initial {
						var err error
						if old, err = st.Put(ctx, key, oldData); err != nil {
							t.Fatal(err)
						}
					}
					cfg := tt.cfg
					cfg.Ops = []string{"UpdateItem"}
					proxy.Set(cfg)
					data := payload(3500, 2, false)
					info, err := st.Put(ctx, key, data)
					proxy.Set(faultproxy.Config{})
					if tt.applied {
						if err != nil {
							t.Fatalf("put: %v, want success (the update was applied)", err)
						}
						got, _, err := st.Get(ctx, key)
						if err != nil || !bytes.Equal(got, data) {
							t.Fatalf("get: %v, want the new payload", err)
						}
						if diff := cmp.Diff(versionKeys(t, key, info), e.keysOf(t, key)); diff != "" {
							t.Errorf("chunks (-want +got):\n%s", diff)
						}
						return
					}
					if err == nil || errors.Is(err, ErrConflict) {
						t.Fatalf("put: got %v, want an error other than ErrConflict", err)
					}
					if initial {
						got, _, err := st.Get(ctx, key)
						if err != nil || !bytes.Equal(got, oldData) {
							t.Fatalf("get: %v, want the old payload", err)
						}
					} else if _, _, err := st.Get(ctx, key); !errors.Is(err, ErrNotFound) {
						t.Fatalf("get: got %v, want ErrNotFound", err)
					}
					// Whatever chunks are left are the new version's orphans,
					// and go with a late sweep.
					late := newStore(t, pc, e.parents, e.chunks, func(o *Options) { o.ChunkSize = 1000 })
					late.now = later(late)
					if _, err := late.Sweep(ctx); err != nil {
						t.Fatal(err)
					}
					if diff := cmp.Diff(versionKeys(t, key, old), e.keysOf(t, key)); diff != "" {
						t.Errorf("chunks after sweep (-want +got):\n%s", diff)
					}
				})
			}
		}
	})
}
