package shard

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"time"

	"github.com/dynashard/dynashard/internal/batch"
	"github.com/dynashard/dynashard/internal/ddbsize"
	"github.com/dynashard/dynashard/internal/observe"
)

// LoadOptions configures [Table.Load]. The zero value is the default.
type LoadOptions struct {
	// MaxConcurrency bounds the BatchWriteItem requests in flight. Zero
	// means the batch engine's default.
	MaxConcurrency int
	// BufferItems bounds how many items Load holds before sending them:
	// half to interleave keys, half waiting in the batch engine for their
	// key's pace (see package batch's doc). Input sorted by key reaches
	// only the keys whose items fit the buffer, so the buffer decides how
	// many keys are written at once. Load starts sending once its half
	// of the buffer is full or the input ends, so input that arrives
	// slowly (a stream) waits for that many items before its first
	// write: set a smaller buffer for such input. Zero means 100,000.
	BufferItems int
	// BufferBytes bounds the buffered items' total size (DynamoDB's item
	// size), split the same way. Zero means 64 MiB, which comes first for
	// items over about 670 bytes.
	BufferBytes int
	// RetryBudget caps the requests that re-send unprocessed items or
	// repeat a throttled request, across the whole load. Zero means no cap
	// (the load still gives up after StallTimeout without progress, or when
	// ctx ends); negative allows no retry.
	RetryBudget int
	// StallTimeout is how long the load goes on while no item is written
	// (every request unprocessed, throttled or abandoned at the fence,
	// whatever MaxConcurrency) before it gives up: with ErrStalled, or
	// with ErrTooLate if requests were only abandoned. Items abandoned at
	// the fence are sent again at least once, however short StallTimeout
	// is. Zero means 10 s.
	StallTimeout time.Duration
	// OnProgress, if set, is called after every BatchWriteItem response
	// with the running totals. Calls are serialized; it must return
	// quickly, as the loader waits for it. If it panics, Load stops as
	// for a panic of items (see Table.Load).
	OnProgress func(LoadProgress)
}

// LoadProgress is a running total of a [Table.Load]. What the load
// consumed is in the call's dynashard.Usage (see [Table.Load]).
type LoadProgress struct {
	Written  int // items DynamoDB acknowledged
	Requests int // BatchWriteItem calls made, retries included
	Retries  int // calls that re-sent unprocessed items or repeated a throttled call
	// Abandoned counts items whose request was abandoned at the fence
	// (see ErrTooLate), each time; they were sent again under a fresh
	// view, which Retries does not count.
	Abandoned int
}

// LoadStats is the outcome of a [Table.Load].
type LoadStats struct {
	LoadProgress
	// Read is the number of (base, item) pairs Load took from its input.
	// Pairs after them were not read: Load stopped early (an error or
	// cancelled ctx) before reaching them.
	Read int
}

// FailedItem is an item [Table.Load] could not write.
type FailedItem[T any] struct {
	Base string
	Item T
	Err  error // why: an *ItemError (never sent), or the error that ended the load
	// MaybeWritten reports an item whose last request ended without a
	// clear answer: abandoned at the fence, cut off by ctx, or failed
	// after an attempt that may have been applied. It may be stored.
	// An item without it was not written by this load.
	MaybeWritten bool
}

// LoadError reports the items a [Table.Load] could not write. Failed holds
// exactly those items among the ones Load read: each was either rejected
// before sending (an *ItemError) or not acknowledged by DynamoDB when the
// load gave up (see FailedItem.MaybeWritten). Err is the error that
// stopped the load, if any (context, retry budget, stall, requests late
// for the fence, a non-retryable SDK error); it is nil when only invalid
// items failed. Unwrap returns Err and every failed item's error.
type LoadError[T any] struct {
	Failed []FailedItem[T]
	Err    error
}

func (e *LoadError[T]) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("shard: load: %d items not written: %v", len(e.Failed), e.Err)
	}
	return fmt.Sprintf("shard: load: %d items not written (first: %v)", len(e.Failed), e.Failed[0].Err)
}

func (e *LoadError[T]) Unwrap() []error {
	errs := make([]error, 0, len(e.Failed)+1)
	if e.Err != nil {
		errs = append(errs, e.Err)
	}
	for _, f := range e.Failed {
		errs = append(errs, f.Err)
	}
	return errs
}

// Errors that end a load early, matched with errors.Is on the error Load
// returns (they are the batch engine's own sentinels).
var (
	// ErrRetryBudget: LoadOptions.RetryBudget was spent.
	ErrRetryBudget = batch.ErrRetryBudget
	// ErrStalled: no item was written for LoadOptions.StallTimeout, and
	// requests came back unprocessed or throttled. Requests abandoned at
	// the fence are no stall: if they are all that happened, the error
	// matches ErrTooLate instead.
	ErrStalled = batch.ErrStalled
)

type loadEntry struct {
	pk    string
	write batch.Write
	size  int
}

// Load writes every (base, item) pair of items through BatchWriteItem, the
// guide's "distribute write activity during data upload": it applies the
// strategy to each item and reorders the stream so that consecutive items,
// and so consecutive requests, come from different physical partition keys
// round-robin, instead of one key's items at a time. It buffers at most
// BufferItems items (BufferBytes bytes), so input of any length loads in
// bounded memory; within one physical key the input order is kept.
//
// Before the first item of each base is sent, the base's layout record is
// checked or written ([Table.Shards]: one GetItem per base and client per
// Layout.HistoryTTL, plus a PutItem for a base never written); items of a
// base whose record disagrees fail with a *LayoutError and are not sent.
// Each item is written at its base's newest shard count as of then.
//
// Requests run in parallel (MaxConcurrency) through the batch engine, which
// paces each physical key a little above the rate DynamoDB admits it (a
// throttled key's items wait, within the buffer, while other keys' items go
// out) and retries UnprocessedItems and throttling with capped, jittered
// backoff within RetryBudget. Invalid items are skipped and reported; they do not
// stop the load. Load stops on ctx or the first error it cannot retry.
//
// Each request chooses its items' keys from a view of the base's history
// and must be done by that view's fence. A request still in flight then
// is abandoned (ErrTooLate), and its items are sent again at once under
// a fresh view. That is neither a retry nor a stall (LoadProgress counts
// it as Abandoned). If nothing is written for StallTimeout because every
// request is late (each item at least twice), Load gives up with an
// error that matches ErrTooLate and names the fence: raise
// Layout.HistoryTTL for a server that slow.
//
// It returns the totals and, if any item was not written, a *LoadError[T]
// listing exactly those items. Every item read is either written (counted
// in Written: DynamoDB acknowledged it) or listed, never both. A listed
// item may still be stored only if it is MaybeWritten: its last request
// ended without a clear answer (abandoned at the fence, cut off by ctx,
// or failed after an attempt that may have been applied). A listed item
// without MaybeWritten was not written by this load. An item reported
// after being sent is rebuilt from the attributes sent (its partition key
// attribute holds the physical key). Writes are puts, so retrying a
// reported item is safe.
// Duplicate (base, id) pairs in the input are written in input order; the
// last one wins, and reading the input goes on while a duplicate waits.
//
// What the load consumed, its layout-record reads and writes and any
// transactions included, is added to the dynashard.Usage of ctx, if any
// (dynashard.WithUsage), with the throttled attempts and the entries
// DynamoDB returned unprocessed.
//
// A nil ctx or items is an error (ErrInvalid) before anything is
// read. If items, LoadOptions.OnProgress or the client panics, Load stops
// reading, waits for its requests in flight and panics with the same
// value in the caller's goroutine.
func (t *Table[T]) Load(ctx context.Context, items iter.Seq2[string, T], optFns ...func(*LoadOptions)) (stats LoadStats, err error) {
	ctx, call := t.begin(ctx, "shard.Load", "")
	defer func() {
		if call.Traced() {
			call.SetInt(observe.AttrItems, stats.Written)
		}
		call.End(ctx, err)
	}()
	if err := t.made(); err != nil {
		return LoadStats{}, err
	}
	if ctx == nil || items == nil {
		return LoadStats{}, fmt.Errorf("%w: Load: nil ctx or items", ErrInvalid)
	}
	var o LoadOptions
	for _, f := range optFns {
		if f != nil {
			f(&o)
		}
	}
	if o.BufferItems <= 0 {
		o.BufferItems = 100_000
	}
	if o.BufferBytes <= 0 {
		o.BufferBytes = 64 << 20
	}
	var failed []FailedItem[T]
	entries := t.loadEntries(ctx, items, &stats, &failed)
	var dropped []batch.Write
	// Half of the buffer interleaves keys; the other half lets the batch
	// engine hold items whose key waits for its pace while it goes on
	// reading, so that a throttled key does not hold up the others.
	waitItems, waitBytes := max(1, o.BufferItems/2), max(1, o.BufferBytes/2)
	ordered := interleave(entries, func(e loadEntry) string { return e.pk }, func(e loadEntry) int { return e.size },
		max(1, o.BufferItems-waitItems), max(1, o.BufferBytes-waitBytes), func(e loadEntry) { dropped = append(dropped, e.write) })
	writes := func(yield func(batch.Write) bool) {
		for e := range ordered {
			if !yield(e.write) {
				return
			}
		}
	}
	bs, err := batch.WriteSeq(ctx, loadClient[T]{t: t, ctx: ctx}, writes, func(bo *batch.Options) {
		bo.MaxConcurrency = o.MaxConcurrency
		bo.RetryBudget = o.RetryBudget
		bo.StallTimeout = o.StallTimeout
		bo.MaxWaiting, bo.MaxWaitingBytes = waitItems, int64(waitBytes)
		bo.KeyAttributes = map[string][]string{t.l.Table: {t.l.PartitionKey, t.l.SortKey}}
		bo.ClientObserves = true // loadClient sends through observe.Do
		if o.OnProgress != nil {
			bo.OnProgress = func(s batch.Stats) { o.OnProgress(progressOf(s)) }
		}
	})
	stats.LoadProgress = progressOf(bs)
	t.obs.Paced(ctx, bs.KeyRates)
	call.SetInt(attrPacedKeys, len(bs.KeyRates))
	if err != nil {
		var ue *batch.UnprocessedError
		if errors.As(err, &ue) {
			for i, w := range ue.Writes {
				f := t.failedWrite(w, ue.Err)
				f.MaybeWritten = ue.MaybeDone != nil && ue.MaybeDone[i]
				failed = append(failed, f)
			}
			err = ue.Err
		}
	}
	for _, w := range dropped {
		failed = append(failed, t.failedWrite(w, err))
	}
	if err == nil && len(failed) == 0 {
		return stats, nil
	}
	return stats, &LoadError[T]{Failed: failed, Err: err}
}

// loadEntries marshals the pairs of items into writes, counting each pair
// read in stats and reporting each one rejected in failed. The key each
// write carries orders the load (interleave); the key it is written at is
// chosen again when it is sent (loadClient), so a long load follows a
// Reshard made while it runs.
func (t *Table[T]) loadEntries(ctx context.Context, items iter.Seq2[string, T], stats *LoadStats, failed *[]FailedItem[T]) iter.Seq[loadEntry] {
	return func(yield func(loadEntry) bool) {
		for base, item := range items {
			stats.Read++
			av, err := t.loadItem(ctx, base, item)
			if err != nil {
				*failed = append(*failed, FailedItem[T]{Base: base, Item: item, Err: err})
				if ctx.Err() != nil {
					return // the load is over: read no more
				}
				continue
			}
			size, _ := ddbsize.ItemSize(av) // checked by marshal
			e := loadEntry{pk: keyString(av[t.l.PartitionKey]), write: batch.Write{Table: t.l.Table, Put: av}, size: size}
			if !yield(e) {
				return
			}
		}
	}
}

// failedWrite rebuilds the item of a write that was not done.
func (t *Table[T]) failedWrite(w batch.Write, cause error) FailedItem[T] {
	pk := keyString(w.Put[t.l.PartitionKey])
	base, _, perr := t.l.Codec.Parse(pk)
	if perr != nil {
		base = pk
	}
	item, uerr := t.unmarshal(w.Put, t.opts)
	if cause == nil {
		cause = errors.New("shard: load: not written")
	}
	if uerr != nil {
		cause = errors.Join(cause, uerr)
	}
	return FailedItem[T]{Base: base, Item: item, Err: cause}
}

func progressOf(s batch.Stats) LoadProgress {
	return LoadProgress{Written: s.Done, Requests: s.Requests, Retries: s.Retries, Abandoned: s.Abandoned}
}
