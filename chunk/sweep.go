package chunk

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"golang.org/x/sync/errgroup"

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
func (s *Store) Sweep(ctx context.Context, optFns ...func(*SweepOptions)) (SweepStats, error) {
	s, err := s.begin(ctx, "Sweep", nil)
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
	sw := &sweep{s: s, parents: map[string]parentCheck{}}
	var panicked panics.Group
	g, gctx := errgroup.WithContext(ctx)
	for seg := 0; seg < o.Segments; seg++ {
		g.Go(func() (err error) {
			defer panicked.Recover(&err)
			return sw.segment(gctx, seg, o.Segments)
		})
	}
	if s.opts.Objects != nil {
		g.Go(func() (err error) {
			defer panicked.Recover(&err)
			return sw.sweepObjects(gctx)
		})
	}
	err = g.Wait()
	panicked.Raise() // a panic of the Client or of Objects, on a goroutine of the sweep
	sw.mu.Lock()
	defer sw.mu.Unlock()
	return sw.stats, err
}

type sweep struct {
	s       *Store
	mu      sync.Mutex // guards below
	stats   SweepStats
	parents map[string]parentCheck
}

// parentCheck is a parent's version as read at a time.
type parentCheck struct {
	at      time.Time
	exists  bool
	version string
}

// maxParentCache bounds the parents remembered by one sweep.
const maxParentCache = 100_000

func (sw *sweep) segment(ctx context.Context, seg, total int) error {
	s := sw.s
	in := &dynamodb.ScanInput{
		TableName:                &s.chunks,
		ProjectionExpression:     aws.String("#k, #p"),
		ExpressionAttributeNames: map[string]string{"#k": s.opts.ChunkKeyAttribute, "#p": attrParent},
	}
	if total > 1 {
		in.Segment, in.TotalSegments = aws.Int32(int32(seg)), aws.Int32(int32(total))
	}
	for {
		out, err := s.c.Scan(ctx, in)
		if err != nil {
			return fmt.Errorf("chunk: sweep: scan %s: %w", s.chunks, err)
		}
		if err := sw.page(ctx, out.Items); err != nil {
			return err
		}
		if len(out.LastEvaluatedKey) == 0 {
			return nil
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
}

// page handles one page of scanned chunk keys.
func (sw *sweep) page(ctx context.Context, items []map[string]types.AttributeValue) error {
	s := sw.s
	var orphans []string
	var young, current, foreign int
	for _, item := range items {
		k, ok := asS(item[s.opts.ChunkKeyAttribute])
		pk, ok2 := item[attrParent].(*types.AttributeValueMemberM)
		if !ok || !ok2 {
			foreign++
			continue
		}
		prefix, version, _, err := parseChunkKey(k.Value)
		if err != nil {
			foreign++
			continue
		}
		key, ok := keyFromParent(pk.Value, prefix)
		if !ok {
			foreign++
			continue
		}
		created, _ := versionTime(version)
		if s.clock().Sub(created) < s.opts.Grace {
			young++
			continue
		}
		pc, err := sw.parent(ctx, key, created)
		if err != nil {
			return err
		}
		if pc.exists && pc.version == version {
			current++
			continue
		}
		orphans = append(orphans, k.Value)
	}
	if len(orphans) > 0 {
		if err := s.deleteKeys(ctx, orphans); err != nil {
			return fmt.Errorf("chunk: sweep: deleting orphans: %w", err)
		}
	}
	sw.mu.Lock()
	defer sw.mu.Unlock()
	sw.stats.Scanned += len(items)
	sw.stats.Young += young
	sw.stats.Current += current
	sw.stats.Foreign += foreign
	sw.stats.Deleted += len(orphans)
	return nil
}

// parent returns the parent's current version, read consistently after
// the version created at created became too old to be committed: only such
// a reading proves that the version is not and will not be current.
func (sw *sweep) parent(ctx context.Context, key Key, created time.Time) (parentCheck, error) {
	s := sw.s
	id := key.cacheID()
	sw.mu.Lock()
	pc, ok := sw.parents[id]
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
	if len(sw.parents) >= maxParentCache {
		clear(sw.parents)
	}
	sw.parents[id] = pc
	sw.stats.Parents++
	sw.mu.Unlock()
	return pc, nil
}

// cacheID identifies a parent key exactly (prefixes can collide: "a#b"+"c"
// and "a"+"b#c" render alike).
func (k Key) cacheID() string {
	return fmt.Sprintf("%q=%#v\x00%q=%#v", k.PartitionName, k.Partition, k.SortName, k.Sort)
}

// keyFromParent rebuilds a Key from a chunk's Parent attribute, checking
// that it renders to the chunk key's prefix. A map has no order, so with two
// attributes both orders are tried; if both render the prefix, either
// names the same item.
func keyFromParent(m map[string]types.AttributeValue, prefix string) (Key, bool) {
	var names []string
	for n := range m {
		names = append(names, n)
	}
	var candidates []Key
	switch len(names) {
	case 1:
		candidates = []Key{{PartitionName: names[0], Partition: m[names[0]]}}
	case 2:
		a, b := names[0], names[1]
		candidates = []Key{
			{PartitionName: a, Partition: m[a], SortName: b, Sort: m[b]},
			{PartitionName: b, Partition: m[b], SortName: a, Sort: m[a]},
		}
	}
	for _, k := range candidates {
		if p, err := k.prefix(); err == nil && p == prefix {
			return k, true
		}
	}
	return Key{}, false
}

// deleteKeys deletes chunk items by key.
func (s *Store) deleteKeys(ctx context.Context, keys []string) error {
	return s.deleteSeq(ctx, func(yield func(string) bool) {
		for _, k := range keys {
			if !yield(k) {
				return
			}
		}
	})
}
