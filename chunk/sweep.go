package chunk

import (
	"context"
	"fmt"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/dynashard/dynashard/internal/observe"
	"github.com/dynashard/dynashard/internal/panics"
)

// SweepOptions are per-call settings of Sweep. The zero value scans the
// whole chunk table with one segment.
type SweepOptions struct {
	// Segments scans the chunk table as this many parallel Scan segments
	// (Scan's TotalSegments), at most 1,000,000 as DynamoDB allows. Zero
	// means 1.
	Segments int
}

// maxSegments is the most TotalSegments a Scan may have.
const maxSegments = 1_000_000

// SweepStats counts what a Sweep saw and did.
type SweepStats struct {
	Scanned int // chunk-table items examined
	Young   int // chunks of versions younger than Grace, left alone
	Current int // chunks of versions their parent holds
	Deleted int // orphaned chunks deleted
	Foreign int // items this package did not write, and chunks of a Key with a Name, left alone
	Parents int // consistent reads of parent items

	// With Options.Objects, the objects under Options.ObjectPrefix, counted
	// the same way: listed, younger than Grace, held by their parent,
	// deleted, and not written by this Store (another table's, or not this
	// package's).
	Objects, ObjectsYoung, ObjectsCurrent, ObjectsDeleted, ObjectsForeign int
}

// Sweep deletes orphaned chunks: chunks of versions that their parent does
// not hold and that are older than Options.Grace. They are left behind by
// Puts that were cancelled, crashed or lost a race before cleaning up, by
// Puts and Deletes whose clean-up failed, and by every replaced version
// when Options.RetainOld is set.
//
// Sweep scans the chunk table only, never the parent table: each chunk
// carries its parent's key, and its key carries its version, whose id holds
// its creation time. A chunk young enough is skipped without any read. For
// the others the parent is read consistently (once per parent and sweep)
// and the chunk deleted if the parent holds another version or none. It is
// safe to run while writers and readers work, from any number of processes:
// a version older than Grace that is not current can never become current,
// because Put refuses to commit a version older than Grace/2.
//
// The Scan reads every chunk item in full, so a sweep costs read capacity
// in proportion to the chunk table's size (half a unit per 4 KB; the
// payload bytes are not sent back). Run it rarely: orphans are the
// exception, not the rule.
//
// With Options.Objects, Sweep also lists the objects under
// Options.ObjectPrefix, beside the scan, and deletes those older than
// Grace (by their version and by their LastModified) whose parent, named
// by their metadata (one HEAD request each) and read consistently, does
// not hold their version; see "S3 offload" in the package documentation.
func (s *Store) Sweep(ctx context.Context, optFns ...func(*SweepOptions)) (st SweepStats, err error) {
	ctx, call := s.start(ctx, "chunk.Sweep")
	defer func() {
		if call.Traced() {
			call.SetInt(observe.AttrItems, st.Scanned+st.Objects)
			call.SetInt(attrDeleted, st.Deleted+st.ObjectsDeleted)
		}
		call.End(ctx, err)
	}()
	if call.Traced() && s != nil {
		call.SetString(observe.AttrTable, s.chunks)
	}
	s, err = s.begin(ctx, "Sweep", nil)
	if err != nil {
		return SweepStats{}, err
	}
	var o SweepOptions
	for _, f := range optFns {
		if f != nil {
			f(&o)
		}
	}
	switch {
	case o.Segments < 0 || o.Segments > maxSegments:
		return SweepStats{}, invalid("Sweep", "SweepOptions.Segments %d outside [0, %d]", o.Segments, maxSegments)
	case o.Segments == 0:
		o.Segments = 1
	}
	sw := &sweep{s: s, seen: map[string]parentCheck{}}
	var panicked panics.Group
	g, gctx := errgroup.WithContext(ctx)
	for seg := 0; seg < o.Segments; seg++ {
		g.Go(func() (err error) {
			defer panicked.Recover(&err)
			return chunkItems{}.sweepSegment(gctx, sw, seg, o.Segments)
		})
	}
	if s.opts.Objects != nil {
		g.Go(func() (err error) {
			defer panicked.Recover(&err)
			return objects{}.sweep(gctx, sw)
		})
	}
	err = g.Wait()
	panicked.Raise() // a panic of the Client or of Objects, on a goroutine of the sweep
	sw.mu.Lock()
	defer sw.mu.Unlock()
	return SweepStats{
		Scanned: sw.chunks.listed, Young: sw.chunks.young, Current: sw.chunks.current,
		Deleted: sw.chunks.deleted, Foreign: sw.chunks.foreign, Parents: sw.parents,
		Objects: sw.objects.listed, ObjectsYoung: sw.objects.young, ObjectsCurrent: sw.objects.current,
		ObjectsDeleted: sw.objects.deleted, ObjectsForeign: sw.objects.foreign,
	}, err
}

// sweep is one Sweep in progress, shared by its goroutines.
type sweep struct {
	s               *Store
	mu              sync.Mutex // guards below
	chunks, objects tally
	parents         int // consistent reads of parent items
	seen            map[string]parentCheck
}

// tally counts what a sweep found in one medium: listed, younger than
// Grace, held by their parent, deleted, and not written by this Store.
type tally struct {
	listed, young, current, deleted, foreign int
}

func (t *tally) add(u tally) {
	t.listed += u.listed
	t.young += u.young
	t.current += u.current
	t.deleted += u.deleted
	t.foreign += u.foreign
}

// candidate is stored bytes Sweep found (a chunk item, an object) whose
// version it knows, and unless young, its parent's key.
type candidate struct {
	id      string // chunk key or object key
	key     Key
	version string
	created time.Time
	young   bool // younger than Grace by another clock than the version's
}

// judge deletes the candidates of one page found in medium m whose parent
// does not hold their version and that are older than Grace, and adds to
// into what it saw, t being the page's counts so far.
func (sw *sweep) judge(ctx context.Context, m medium, page []candidate, t tally, into *tally) error {
	s := sw.s
	var orphans []string
	for _, c := range page {
		if c.young || s.clock().Sub(c.created) < s.opts.Grace {
			t.young++
			continue
		}
		pc, err := sw.parentVersion(ctx, c.key, c.created)
		if err != nil {
			return err
		}
		if pc.exists && pc.version == c.version {
			t.current++
			continue
		}
		orphans = append(orphans, c.id)
	}
	if len(orphans) > 0 {
		if err := m.remove(ctx, s, orphans); err != nil {
			return fmt.Errorf("chunk: sweep: deleting orphans: %w", err)
		}
	}
	t.deleted = len(orphans)
	sw.mu.Lock()
	defer sw.mu.Unlock()
	into.add(t)
	return nil
}

// parentCheck is a parent's version as read at a time.
type parentCheck struct {
	at      time.Time
	exists  bool
	version string
}

// maxParentCache bounds the parents remembered by one sweep.
const maxParentCache = 100_000

// parentVersion returns the parent's current version, read consistently
// after the version created at created became too old to be committed:
// only such a reading proves that the version is not and will not be
// current.
func (sw *sweep) parentVersion(ctx context.Context, key Key, created time.Time) (parentCheck, error) {
	s := sw.s
	id := key.cacheID()
	sw.mu.Lock()
	pc, ok := sw.seen[id]
	sw.mu.Unlock()
	if ok && pc.at.Sub(created) >= s.opts.Grace {
		return pc, nil
	}
	at := s.clock()
	cur, err := s.readCurrent(ctx, key)
	if err != nil {
		return parentCheck{}, fmt.Errorf("chunk: sweep: %w", err)
	}
	pc = parentCheck{at: at, exists: cur.exists, version: cur.version}
	sw.mu.Lock()
	if len(sw.seen) >= maxParentCache {
		clear(sw.seen)
	}
	sw.seen[id] = pc
	sw.parents++
	sw.mu.Unlock()
	return pc, nil
}

// cacheID identifies a parent key exactly (prefixes can collide: "a#b"+"c"
// and "a"+"b#c" render alike).
func (k Key) cacheID() string {
	return fmt.Sprintf("%q=%#v\x00%q=%#v", k.PartitionName, k.Partition, k.SortName, k.Sort)
}
