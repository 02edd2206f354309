package chunk

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/dynashard/dynashard/dynashardtest/faultproxy"
	"github.com/dynashard/dynashard/internal/ddbtest"
)

// valuePayload is the payload a writer stores for value: the value, a
// newline, then bytes derived from the value, of a length (0 to about 6
// chunks of 512 bytes) derived from it too. A reader can therefore tell
// exactly which Put a payload came from and whether it is whole.
func valuePayload(value string) []byte {
	h := fnv.New64a()
	h.Write([]byte(value))
	seed := h.Sum64()
	n := int(seed % 3000)
	if seed%5 == 0 {
		n = int(seed % 60) // inline
	}
	return append([]byte(value+"\n"), payload(n, seed, seed%2 == 0)...)
}

func valueOf(data []byte) (string, bool) {
	i := bytes.IndexByte(data, '\n')
	if i < 0 {
		return "", false
	}
	v := string(data[:i])
	return v, bytes.Equal(data, valuePayload(v))
}

// historyOps is the work TestConcurrentHistory does per server at least:
// completed operations, which are also its clock's ticks (historyGrace).
// -chunk.long does ten times as many.
func historyOps() int64 {
	if *long {
		return 3200
	}
	return 320
}

// historyGrace is the stores' Grace in TestConcurrentHistory, in ticks of
// its clock: the test's stores read a clock that advances one second per
// operation completed, not with the wall clock. A Put then gives up after
// the other workers completed Grace/2 operations, and a Sweep deletes an
// orphan after Grace of them, however loaded the machine.
const historyGrace = 128

// faulty is the proxy configuration of the concurrency tests: every kind
// of fault the proxy has, at rates that leave most calls succeeding.
var faulty = faultproxy.Config{
	UnprocessedRate: 0.2,
	ThrottleRate:    0.03,
	ErrorRate:       0.02, ErrorAfterRate: 0.02,
	ResetBeforeRate: 0.02, ResetAfterRate: 0.02,
	TruncateRate: 0.01,
	Latency:      500 * time.Microsecond, Jitter: 2 * time.Millisecond,
	Seed: 1,
}

// TestConcurrentHistory runs 8 writers and 8 readers (and a sweeper) on a
// few keys through the fault proxy, records every operation's invocation
// and response, and checks each key's history for linearizability: every
// read returns a whole payload that some Put wrote, never one of a Put that
// failed with ErrConflict, never a stale one.
//
// It is bounded by work, not by time: the workers go on until historyOps
// operations completed and enough happened to check (20 Puts acknowledged,
// one refused with ErrConflict, 20 payloads read, a Sweep done), at most
// 400 operations each. The stores' clock counts
// operations (historyGrace), so a slow machine slows the clock too.
func TestConcurrentHistory(t *testing.T) {
	eachParallel(t, func(t *testing.T, srv *ddbtest.Server) {
		e := newEnv(t, srv)
		proxy, err := faultproxy.New(srv.Endpoint, faulty)
		if err != nil {
			t.Fatal(err)
		}
		defer proxy.Close()
		pc := robustClient(proxy.URL())
		// The clock: a second per completed operation.
		var ticks atomic.Int64
		base := time.Now()
		now := func() time.Time { return base.Add(time.Duration(ticks.Load()) * time.Second) }
		const grace = historyGrace * time.Second
		mk := func(c Compression) *Store {
			// Linearizable reads need consistent reads of the parent.
			st := newStore(t, pc, e.parents, e.chunks, func(o *Options) {
				o.ChunkSize, o.InlineLimit, o.Compression = 512, 64, c
				o.Grace, o.ReadAttempts, o.MaxConcurrency = grace, 10, 2
				o.ConsistentRead = true
			})
			st.flipDelay = 2 * time.Millisecond
			st.now = now
			return st
		}
		stores := []*Store{mk(None), mk(Gzip)}
		keys := []Key{sKey("h0"), sKey("h1#x#y"), sKey("h2#")}

		var clock atomic.Int64
		var mu sync.Mutex
		hist := make([][]regOp, len(keys))
		record := func(k int, o regOp) {
			mu.Lock()
			hist[k] = append(hist[k], o)
			mu.Unlock()
		}
		var putOK, putConflict, putUnknown, readOK, readNone, readFailed, sweeps, swept atomic.Int64

		// Workers stop between operations once enough happened, so that no
		// request is still in flight when the history is checked.
		ctx := context.Background()
		minOps := historyOps()
		enough := func() bool {
			return ticks.Load() >= minOps && putOK.Load() >= 20 && putConflict.Load() >= 1 &&
				readOK.Load() >= 20 && sweeps.Load() >= 1
		}
		var stop atomic.Bool
		opsPerWorker := max(400, int(minOps/4))
		var wg sync.WaitGroup
		for w := range 8 {
			wg.Go(func() {
				r := rand.New(rand.NewPCG(uint64(w), 1))
				for i := 0; i < opsPerWorker && !stop.Load(); i++ {
					stop.Store(enough())
					k := r.IntN(len(keys))
					v := fmt.Sprintf("w%d.%d", w, i)
					o := regOp{write: true, value: v, call: clock.Add(1)}
					_, err := stores[r.IntN(2)].Put(ctx, keys[k], valuePayload(v))
					o.ret = clock.Add(1)
					ticks.Add(1)
					switch {
					case err == nil:
						putOK.Add(1)
					case errors.Is(err, ErrConflict):
						o.failed = true
						putConflict.Add(1)
					default:
						// Unknown outcome: it may take effect at any time.
						o.ret = math.MaxInt64
						putUnknown.Add(1)
					}
					record(k, o)
				}
			})
		}
		for rd := range 8 {
			wg.Go(func() {
				r := rand.New(rand.NewPCG(uint64(rd), 2))
				for i := 0; i < opsPerWorker && !stop.Load(); i++ {
					stop.Store(enough())
					k := r.IntN(len(keys))
					o := regOp{call: clock.Add(1)}
					data, _, err := stores[r.IntN(2)].Get(ctx, keys[k])
					o.ret = clock.Add(1)
					ticks.Add(1)
					switch {
					case err == nil:
						v, whole := valueOf(data)
						if !whole {
							t.Errorf("key %v: read %d bytes that are no Put's payload (value %q)", keys[k], len(data), v)
							continue
						}
						o.value = v
						readOK.Add(1)
					case errors.Is(err, ErrNotFound):
						readNone.Add(1)
					case errors.Is(err, ErrCorrupt):
						t.Errorf("key %v: %v", keys[k], err)
						continue
					default:
						readFailed.Add(1) // a failed read says nothing
						continue
					}
					record(k, o)
				}
			})
		}
		// The sweeper sweeps after every 16 operations.
		sweepDone := make(chan struct{})
		var sweeper sync.WaitGroup
		sweeper.Go(func() {
			for last := int64(0); ; {
				select {
				case <-sweepDone:
					return
				case <-time.After(10 * time.Millisecond):
				}
				if ticks.Load() < last+16 {
					continue
				}
				last = ticks.Load()
				if st, err := stores[0].Sweep(ctx); err == nil {
					sweeps.Add(1)
					swept.Add(int64(st.Deleted))
				}
			}
		})
		wg.Wait()
		close(sweepDone)
		sweeper.Wait()

		t.Logf("%d operations; puts: %d ok, %d conflict, %d unknown; reads: %d payloads, %d not found, %d failed; %d sweeps deleted %d chunks; proxy: %+v",
			ticks.Load(), putOK.Load(), putConflict.Load(), putUnknown.Load(), readOK.Load(), readNone.Load(), readFailed.Load(), sweeps.Load(), swept.Load(), proxy.Stats().Ops)
		for k := range keys {
			if err := checkRegister(hist[k]); err != nil {
				t.Errorf("key %v: not linearizable: %v", keys[k], err)
			}
		}
		// A check that saw nothing proves nothing; every worker ran out of
		// operations before enough happened.
		if !enough() {
			t.Errorf("too little happened to check in %d operations (puts ok %d, conflicts %d, reads %d, sweeps %d)",
				ticks.Load(), putOK.Load(), putConflict.Load(), readOK.Load(), sweeps.Load())
		}

		// Quiet again: after a late sweep the chunk table holds exactly the
		// current versions' chunks, and every key reads whole.
		proxy.Set(faultproxy.Config{})
		late := newStore(t, pc, e.parents, e.chunks, func(o *Options) { o.Grace = grace; o.ConsistentRead = true })
		late.now = func() time.Time { return now().Add(grace + time.Minute) }
		if _, err := late.Sweep(context.Background()); err != nil {
			t.Fatal(err)
		}
		var want []string
		for _, k := range keys {
			data, info, err := late.Get(context.Background(), k)
			if errors.Is(err, ErrNotFound) {
				continue
			}
			if err != nil {
				t.Fatalf("final get %v: %v", k, err)
			}
			if _, whole := valueOf(data); !whole {
				t.Errorf("final get %v: not a whole payload", k)
			}
			want = append(want, versionKeys(t, k, info)...)
		}
		slices.Sort(want)
		if diff := cmp.Diff(want, e.chunkKeys(t)); diff != "" {
			t.Errorf("chunk table after the late sweep (-want +got):\n%s", diff)
		}
	})
}
