package stream

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"golang.org/x/sync/errgroup"

	"github.com/dynashard/dynashard/internal/panics"
)

// relistEvery is how often a Poll that keeps finding records lists the
// shards anyway. A new shard usually shows when its parent ends, which
// lists them at once.
const relistEvery = time.Minute

// run is one Poll's state: the last listing and each shard's reader.
type run struct {
	p        *Poller
	fn       func(context.Context, Batch) error
	list     listing
	listedAt time.Time
	readers  map[string]*reader
}

// progress is what a pass did.
type progress struct {
	records  bool // some batch was handed to fn
	finished bool // some shard was found finished
}

// refresh lists the shards and reports whether any is new. It drops from
// the checkpoint the finished shards DynamoDB no longer lists, and fails
// with ErrTrimmed for an unfinished one (SkipTrimmed drops it too).
func (r *run) refresh(ctx context.Context) (grew bool, err error) {
	l, err := r.p.describe(ctx)
	if err != nil {
		return false, err
	}
	cp := r.p.Checkpoint()
	gone, lost := unlisted(l.shards, cp)
	if len(lost) > 0 && !r.p.opts.SkipTrimmed {
		id := lost[0]
		return false, fmt.Errorf("stream: shard %s of %s is no longer listed, so the records after sequence number %s (the checkpoint's) are gone; PollerOptions.SkipTrimmed goes on without them: %w",
			id, r.p.arn, cp.position(id).After, ErrTrimmed)
	}
	if drop := append(gone, lost...); len(drop) > 0 {
		r.p.setCheckpoint(cp.without(drop))
	}
	known := make(map[string]bool, len(r.list.shards))
	for _, sh := range r.list.shards {
		known[aws.ToString(sh.ShardId)] = true
	}
	listed := make(map[string]bool, len(l.shards))
	for _, sh := range l.shards {
		id := aws.ToString(sh.ShardId)
		listed[id] = true
		grew = grew || !known[id]
	}
	for id := range r.readers {
		if !listed[id] {
			delete(r.readers, id)
		}
	}
	r.list, r.listedAt = l, time.Now()
	return grew, nil
}

// pass reads every ready shard once, concurrently, then hands what came to
// fn in shard ID order. No goroutine of it runs while fn does.
func (r *run) pass(ctx context.Context) (progress, error) {
	cp := r.p.Checkpoint()
	ids := ready(r.list.shards, cp)
	got := make([]fetched, len(ids))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(r.p.opts.MaxConcurrency)
	var panicked panics.Group
	for i, id := range ids {
		rd := r.readers[id]
		if rd == nil {
			rd = &reader{id: id}
			r.readers[id] = rd
		}
		after := cp.position(id).After
		g.Go(func() (err error) {
			defer panicked.Recover(&err)
			got[i], err = r.p.fetch(gctx, rd, after)
			return err
		})
	}
	err := g.Wait()
	panicked.Raise()
	if err != nil {
		return progress{}, err
	}
	var pr progress
	for i, id := range ids {
		delivered, err := r.deliver(ctx, id, got[i])
		if err != nil {
			return pr, err
		}
		pr.records = pr.records || delivered
		if got[i].end {
			pr.finished = true
			delete(r.readers, id)
		}
	}
	return pr, nil
}

// deliver hands shard id's records to fn, skipping any at or before the
// checkpoint, and advances the checkpoint once fn returned nil. A shard
// that ended is marked finished with its last batch, or alone.
func (r *run) deliver(ctx context.Context, id string, f fetched) (delivered bool, err error) {
	cp := r.p.Checkpoint()
	pos := cp.position(id)
	next := ShardPosition{After: pos.After, Finished: f.end}
	var recs []Record
	for _, rec := range f.records {
		seq := ""
		if rec.Dynamodb != nil {
			seq = aws.ToString(rec.Dynamodb.SequenceNumber)
		}
		if seq != "" && next.After != "" && !seqAfter(seq, next.After) {
			continue // processed before: the server repeated it
		}
		if seq != "" {
			next.After = seq
		}
		recs = append(recs, Record{Record: rec, ShardID: id})
	}
	if next == pos {
		return false, nil
	}
	ncp := cp.with(r.p.arn, id, next)
	if len(recs) > 0 {
		if err := ctx.Err(); err != nil {
			return false, err
		}
		if err := r.fn(ctx, Batch{ShardID: id, Records: recs, Checkpoint: ncp}); err != nil {
			return false, fmt.Errorf("stream: batch of %d records of shard %s of %s, after sequence number %q: %w", len(recs), id, r.p.arn, pos.After, err)
		}
	}
	r.p.setCheckpoint(ncp)
	return len(recs) > 0, nil
}
