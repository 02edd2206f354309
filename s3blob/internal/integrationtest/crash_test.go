package integrationtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/dynashard/dynashard"
	"github.com/dynashard/dynashard/chunk"
	"github.com/dynashard/dynashard/internal/ddbtest"
	"github.com/dynashard/dynashard/s3blob"
	"github.com/dynashard/dynashard/s3blob/internal/integrationtest/s3fault"
)

// TestCrashPoints stops a Put of an object at both crash points, by
// cancelling its ctx: after the upload and before the parent flip (the old
// payload stays current, the new object is an orphan), and after the flip
// and before the replaced object is deleted (the new payload is current,
// the old object is an orphan). Either way Sweep leaves the orphan alone
// within Grace and removes exactly it afterwards, and the current payload
// reads back whole.
func TestCrashPoints(t *testing.T) {
	eachParallel(t, func(t *testing.T, srv *ddbtest.Server) {
		e := newEnv(t, srv)
		ctx := context.Background()
		var stopBefore, stopAfter atomic.Pointer[context.CancelFunc]
		ddb := srv.Client(ddbHooks(func(_ context.Context, op string) {
			if op == "UpdateItem" {
				if c := stopBefore.Swap(nil); c != nil {
					(*c)()
				}
			}
		}, func(op string, err error) {
			if op == "UpdateItem" && err == nil {
				if c := stopAfter.Swap(nil); c != nil {
					(*c)()
				}
			}
		}))
		blob := e.blob(t, e.s3, func(o *s3blob.Options) { o.PartSize = s3blob.MinPartSize })
		st := e.store(t, ddb, blob, func(o *chunk.Options) { o.ObjectThreshold = threshold })
		for i, after := range []bool{false, true} {
			name := map[bool]string{false: "after upload, before flip", true: "after flip, before delete"}[after]
			t.Run(name, func(t *testing.T) {
				key := sKey(fmt.Sprint("crash", i))
				oldData, newData := payload(threshold+1, 10), payload(s3blob.MinPartSize+7, 11)
				old, err := st.Put(ctx, key, oldData)
				if err != nil {
					t.Fatal(err)
				}
				pctx, cancel := context.WithCancel(ctx)
				defer cancel()
				if after {
					stopAfter.Store(&cancel)
				} else {
					stopBefore.Store(&cancel)
				}
				info, err := st.Put(pctx, key, newData)
				want, orphanOf := oldData, "new"
				if after {
					if err != nil {
						t.Fatalf("put stopped after its flip: %v, want success", err)
					}
					want, orphanOf = newData, "old"
				} else if !errors.Is(err, context.Canceled) {
					t.Fatalf("put stopped before its flip: %v, want context.Canceled", err)
				}
				got, ginfo, err := st.Get(ctx, key, func(o *chunk.Options) { o.ConsistentRead = true })
				if err != nil || !bytes.Equal(got, want) {
					t.Fatalf("get: %v; want the %s payload", err, map[bool]string{false: "old", true: "new"}[after])
				}
				objs := e.objectsOf(t, fmt.Sprint("crash", i))
				if len(objs) != 2 || !slices.Contains(objs, ginfo.Object) {
					t.Fatalf("bucket holds %q, want the current object %s and one orphan", objs, ginfo.Object)
				}
				orphan := objs[0]
				if orphan == ginfo.Object {
					orphan = objs[1]
				}
				if after && orphan != old.Object || !after && info.Object != "" {
					t.Errorf("the orphan %s is not the %s object", orphan, orphanOf)
				}
				stats, err := st.Sweep(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if stats.ObjectsDeleted != 0 || stats.ObjectsYoung != stats.Objects {
					t.Errorf("sweep within Grace: %+v, want every object young, none deleted", stats)
				}
				sweeper := e.store(t, e.ddb, blob)
				setClock(sweeper, later(chunk.DefaultGrace+time.Minute))
				stats, err = sweeper.Sweep(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if left := e.objectsOf(t, fmt.Sprint("crash", i)); !slices.Equal(left, []string{ginfo.Object}) {
					t.Errorf("after sweep the bucket holds %q, want only %s (stats %+v)", left, ginfo.Object, stats)
				}
				got, _, err = st.Get(ctx, key, func(o *chunk.Options) { o.ConsistentRead = true })
				if err != nil || !bytes.Equal(got, want) {
					t.Fatalf("get after sweep: %v", err)
				}
			})
		}
	})
}

// TestSweepExact leaves orphans of different ages beside current objects,
// an object of another table and one this package did not write: Sweep
// deletes exactly the orphans older than Grace.
func TestSweepExact(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, srv *ddbtest.Server) {
		e := newEnv(t, srv)
		ctx := context.Background()
		blob := e.blob(t, e.s3)
		var stop atomic.Pointer[context.CancelFunc]
		ddb := srv.Client(ddbHooks(func(_ context.Context, op string) {
			if op != "UpdateItem" {
				return
			}
			if c := stop.Swap(nil); c != nil {
				(*c)()
			}
		}, nil))
		st := e.store(t, ddb, blob, func(o *chunk.Options) { o.ObjectThreshold = 1 })
		// An orphan "from the future" is young for a sweeper one Grace
		// ahead: its version was made by a clock that far ahead too.
		future := e.store(t, ddb, blob, func(o *chunk.Options) { o.ObjectThreshold = 1 })
		setClock(future, later(chunk.DefaultGrace))
		orphan := func(st *chunk.Store, key chunk.Key) {
			t.Helper()
			pctx, cancel := context.WithCancel(ctx)
			defer cancel()
			stop.Store(&cancel)
			if _, err := st.Put(pctx, key, payload(100, 3)); !errors.Is(err, context.Canceled) {
				t.Fatalf("put: %v", err)
			}
		}
		var current []string
		for i := range 3 {
			info, err := st.Put(ctx, sKey(fmt.Sprint("k", i)), payload(1000, uint64(i)))
			if err != nil {
				t.Fatal(err)
			}
			current = append(current, info.Object)
		}
		before := e.objects(t)
		orphan(st, sKey("k0"))
		orphan(st, sKey("gone")) // a parent that never existed
		oldOrphans, _ := diff(e.objects(t), before)
		before = e.objects(t)
		orphan(future, sKey("k1"))
		youngOrphans, _ := diff(e.objects(t), before)
		// Foreign objects: another table's orphan under this prefix, and a
		// key that names no version.
		otherTable, err := chunk.New(ddb, srv.Table(t, "pk:S"), e.chunks, func(o *chunk.Options) {
			o.Objects, o.ObjectThreshold, o.ObjectPrefix = blob, 1, "dynashard/"+e.parents+"/"
		})
		if err != nil {
			t.Fatal(err)
		}
		orphan(otherTable, sKey("k2"))
		for _, k := range []string{"dynashard/" + e.parents + "/notes.txt"} {
			if _, err := e.s3.PutObject(ctx, &s3.PutObjectInput{Bucket: &e.bucket, Key: aws.String(k), Body: bytes.NewReader([]byte("x"))}); err != nil {
				t.Fatal(err)
			}
		}
		if len(oldOrphans) != 2 || len(youngOrphans) != 1 {
			t.Fatalf("setup: %d old and %d young orphans, want 2 and 1", len(oldOrphans), len(youngOrphans))
		}
		all := e.objects(t)
		sweeper := e.store(t, e.ddb, blob)
		setClock(sweeper, later(chunk.DefaultGrace+time.Minute))
		stats, err := sweeper.Sweep(ctx)
		if err != nil {
			t.Fatal(err)
		}
		left := e.objects(t)
		gone, added := diff(all, left)
		if !slices.Equal(gone, oldOrphans) || len(added) != 0 {
			t.Errorf("sweep deleted %q, want exactly %q", gone, oldOrphans)
		}
		if stats.ObjectsDeleted != 2 || stats.ObjectsYoung != 1 || stats.ObjectsCurrent != 3 || stats.ObjectsForeign != 2 || stats.Objects != len(all) {
			t.Errorf("stats %+v", stats)
		}
		for i, k := range current {
			if !slices.Contains(left, k) {
				t.Errorf("current object %s of k%d deleted", k, i)
			}
		}
	})
}

// diff returns what a has and b lacks, and what b has and a lacks, sorted.
func diff(a, b []string) (onlyA, onlyB []string) {
	for _, k := range a {
		if !slices.Contains(b, k) {
			onlyA = append(onlyA, k)
		}
	}
	for _, k := range b {
		if !slices.Contains(a, k) {
			onlyB = append(onlyB, k)
		}
	}
	slices.Sort(onlyA)
	slices.Sort(onlyB)
	return onlyA, onlyB
}

// TestS3Faults makes S3 fail through the fault proxy: a PUT, an
// UploadPart or a multipart completion failing for good, a connection
// reset mid-upload (for good, and once, which the SDK retries), and the
// DeleteObjects after the flip failing. A failed upload stores nothing,
// flips nothing and leaves the old payload readable; a failed delete
// leaves an orphan that Sweep removes once it is older than Grace; an
// acknowledged Put is always readable.
func TestS3Faults(t *testing.T) {
	eachParallel(t, func(t *testing.T, srv *ddbtest.Server) {
		e := newEnv(t, srv)
		ctx := context.Background()
		blob := e.blob(t, e.s3p, func(o *s3blob.Options) { o.PartSize = s3blob.MinPartSize; o.Concurrency = 2 })
		st := e.store(t, e.ddb, blob, func(o *chunk.Options) { o.ObjectThreshold = threshold })
		sweeper := e.store(t, e.ddb, e.blob(t, e.s3))
		setClock(sweeper, later(chunk.DefaultGrace+time.Minute))
		type fault struct {
			op    s3fault.Op
			f     s3fault.Fault
			n     int
			size  int
			fails bool
		}
		multi := 2*s3blob.MinPartSize + 1
		for i, c := range []fault{
			{s3fault.PutObject, s3fault.Fail, -1, threshold, true},
			{s3fault.PutObject, s3fault.Reset, -1, threshold + 1, true},
			{s3fault.PutObject, s3fault.Reset, 1, threshold + 2, false},
			{s3fault.UploadPart, s3fault.Fail, -1, multi, true},
			{s3fault.UploadPart, s3fault.Reset, -1, multi, true},
			{s3fault.UploadPart, s3fault.Reset, 1, multi, false},
			{s3fault.CompleteUpload, s3fault.Fail, -1, multi, true},
			{s3fault.DeleteObjects, s3fault.Fail, -1, threshold, false},
		} {
			name := fmt.Sprintf("%s %v x%d", c.op, map[s3fault.Fault]string{s3fault.Fail: "500", s3fault.Reset: "reset"}[c.f], c.n)
			t.Run(name, func(t *testing.T) {
				key := sKey(fmt.Sprint("fault", i))
				oldData, newData := payload(threshold+3, uint64(20+i)), payload(c.size, uint64(40+i))
				old, err := st.Put(ctx, key, oldData)
				if err != nil {
					t.Fatal(err)
				}
				e.proxy.Inject(c.op, c.f, c.n)
				info, err := st.Put(ctx, key, newData)
				e.proxy.Clear()
				if _, hits := e.proxy.Count(c.op); hits == 0 {
					t.Fatalf("no %s request failed", c.op)
				}
				want := newData
				if c.fails {
					if err == nil || errors.Is(err, dynashard.ErrConflict) {
						t.Fatalf("put: %v, want a failure", err)
					}
					want = oldData
				} else if err != nil {
					t.Fatalf("put: %v", err)
				}
				got, ginfo, err := st.Get(ctx, key, func(o *chunk.Options) { o.ConsistentRead = true })
				if err != nil || !bytes.Equal(got, want) {
					t.Fatalf("get: %v, want the %s payload", err, map[bool]string{true: "old", false: "new"}[c.fails])
				}
				objs := e.objectsOf(t, fmt.Sprint("fault", i))
				switch {
				case c.fails && !slices.Equal(objs, []string{old.Object}):
					t.Errorf("bucket holds %q after a failed upload, want only the old object", objs)
				case c.op == s3fault.DeleteObjects && !slices.Equal(objs, sorted(old.Object, info.Object)):
					t.Errorf("bucket holds %q after a failed delete, want the old and new objects", objs)
				case !c.fails && c.op != s3fault.DeleteObjects && !slices.Equal(objs, []string{info.Object}):
					t.Errorf("bucket holds %q, want only the new object", objs)
				}
				if _, err := sweeper.Sweep(ctx); err != nil {
					t.Fatal(err)
				}
				if objs := e.objectsOf(t, fmt.Sprint("fault", i)); !slices.Equal(objs, []string{ginfo.Object}) {
					t.Errorf("after sweep the bucket holds %q, want only %s", objs, ginfo.Object)
				}
			})
		}
	})
}

func sorted(s ...string) []string {
	slices.Sort(s)
	return s
}

// TestConcurrentWriters holds two Puts of the same key at their parent
// flip until both have uploaded: exactly one wins, the other fails with
// ErrConflict and removes its object, and the winner's object is the only
// one left.
func TestConcurrentWriters(t *testing.T) {
	ddbtest.Each(t, func(t *testing.T, srv *ddbtest.Server) {
		e := newEnv(t, srv)
		ctx := context.Background()
		var arrived sync.WaitGroup
		var gate atomic.Bool
		arrived.Add(2)
		ddb := srv.Client(ddbHooks(func(_ context.Context, op string) {
			if op == "UpdateItem" && gate.Load() {
				arrived.Done()
				arrived.Wait()
			}
		}, nil))
		st := e.store(t, ddb, e.blob(t, e.s3), func(o *chunk.Options) { o.ObjectThreshold = threshold })
		key := sKey("race")
		first, err := st.Put(ctx, key, payload(threshold, 1))
		if err != nil {
			t.Fatal(err)
		}
		gate.Store(true)
		data := [][]byte{payload(threshold+10, 2), payload(s3blob.MinPartSize+10, 3)}
		infos, errs := make([]chunk.Info, 2), make([]error, 2)
		var wg sync.WaitGroup
		for i := range 2 {
			wg.Go(func() { infos[i], errs[i] = st.Put(ctx, key, data[i]) })
		}
		wg.Wait()
		gate.Store(false)
		winner := -1
		for i, err := range errs {
			switch {
			case err == nil && winner < 0:
				winner = i
			case err == nil:
				t.Fatalf("both writers won")
			case !errors.Is(err, dynashard.ErrConflict):
				t.Fatalf("writer %d: %v, want ErrConflict", i, err)
			}
		}
		if winner < 0 {
			t.Fatalf("no writer won: %v", errs)
		}
		got, _, err := st.Get(ctx, key, func(o *chunk.Options) { o.ConsistentRead = true })
		if err != nil || !bytes.Equal(got, data[winner]) {
			t.Fatalf("get: %v, want the winner's payload", err)
		}
		if objs := e.objectsOf(t, "race"); !slices.Equal(objs, []string{infos[winner].Object}) {
			t.Errorf("bucket holds %q, want only the winner's %s (first %s)", objs, infos[winner].Object, first.Object)
		}
	})
}

// TestNoTornRead runs a writer replacing a payload (objects spanning
// several ranged GETs, and chunks) while readers read it with Get and a
// streaming Reader: every read returns exactly one payload a Put stored, or
// fails with ErrConflict; never a mix. Every acknowledged Put is read back
// by a consistent Get right after it. The writer stores each size once
// after the first (five Puts), twice with -s3blob.long.
func TestNoTornRead(t *testing.T) {
	puts := 5
	if *long {
		puts = 8
	}
	eachParallel(t, func(t *testing.T, srv *ddbtest.Server) {
		e := newEnv(t, srv)
		ctx := context.Background()
		st := e.store(t, e.ddb, e.blob(t, e.s3, func(o *s3blob.Options) { o.PartSize = s3blob.MinPartSize }),
			func(o *chunk.Options) { o.ObjectThreshold = threshold; o.ChunkSize = 32 << 10 })
		key := sKey("torn")
		sizes := []int{9 << 20, threshold + 1, threshold - 1, 17 << 20}
		var mu sync.Mutex
		stored := map[[32]byte]bool{}
		put := func(i int) {
			data := payload(sizes[i%len(sizes)], uint64(100+i))
			// Readers may see it as soon as the parent flips, before Put
			// returns.
			mu.Lock()
			stored[sha256Sum(data)] = true
			mu.Unlock()
			if _, err := st.Put(ctx, key, data); err != nil {
				t.Errorf("put %d: %v", i, err)
				return
			}
			got, _, err := st.Get(ctx, key, func(o *chunk.Options) { o.ConsistentRead = true })
			if err != nil && !errors.Is(err, dynashard.ErrConflict) || err == nil && !bytes.Equal(got, data) && !isStored(&mu, stored, got) {
				t.Errorf("acknowledged put %d not read back: %v", i, err)
			}
		}
		put(0)
		done := make(chan struct{})
		var wg sync.WaitGroup
		var reads, conflicts atomic.Int64
		for r := range 2 {
			wg.Go(func() {
				for {
					select {
					case <-done:
						return
					default:
					}
					var got []byte
					var err error
					if r == 0 {
						got, _, err = st.Get(ctx, key)
					} else {
						got, err = readSlowly(ctx, st, key)
					}
					reads.Add(1)
					switch {
					case errors.Is(err, dynashard.ErrConflict):
						conflicts.Add(1)
					case err != nil:
						t.Errorf("read: %v", err)
						return
					case !isStored(&mu, stored, got):
						t.Errorf("read %d bytes that no Put stored", len(got))
						return
					}
				}
			})
		}
		for i := 1; i < puts; i++ {
			put(i)
		}
		close(done)
		wg.Wait()
		t.Logf("%d reads, %d conflicts", reads.Load(), conflicts.Load())
	})
}

func isStored(mu *sync.Mutex, stored map[[32]byte]bool, b []byte) bool {
	sum := sha256Sum(b)
	mu.Lock()
	defer mu.Unlock()
	return stored[sum]
}

// readSlowly streams the payload in small reads, so writers can replace it
// while a Reader is between ranged GETs.
func readSlowly(ctx context.Context, st *chunk.Store, key chunk.Key) ([]byte, error) {
	r, err := st.Open(ctx, key)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	var out bytes.Buffer
	buf := make([]byte, 1<<20)
	for {
		n, err := r.Read(buf)
		out.Write(buf[:n])
		if err != nil {
			if errors.Is(err, io.EOF) {
				return out.Bytes(), nil
			}
			return nil, err
		}
		time.Sleep(time.Millisecond)
	}
}
