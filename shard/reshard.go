package shard

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynashard/dynashard/internal/errs"
	"github.com/dynashard/dynashard/internal/observe"
	"github.com/dynashard/dynashard/internal/record"
)

// reshardClient is what Reshard needs of a client.
type reshardClient interface {
	record.Writer
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	TransactGetItems(ctx context.Context, in *dynamodb.TransactGetItemsInput, optFns ...func(*dynamodb.Options)) (*dynamodb.TransactGetItemsOutput, error)
}

var _ reshardClient = (*dynamodb.Client)(nil)

// Resizable is a Strategy that can be made with another shard count,
// which a base's history of counts needs: its items are written with the
// strategy at the base's newest N and found with it at every N of the
// history. The built-in strategies are Resizable; a user-supplied Strategy
// that is not can only be used at its own N.
type Resizable interface {
	Strategy
	// WithN returns the same strategy with shard count n.
	WithN(n int) Strategy
}

func (s hashStrategy) WithN(n int) Strategy      { return hashStrategy(n) }
func (s randomStrategy) WithN(n int) Strategy    { return randomStrategy(n) }
func (s codePointStrategy) WithN(n int) Strategy { return codePointStrategy(n) }

// MaxHistory bounds a base's shard-count history: every count in it may
// cost a Get one more request, so a longer one should be rebalanced
// ([Table.Rebalance]) first.
const MaxHistory = record.MaxHistory

// withN returns s with shard count n.
func withN(s Strategy, n int) (Strategy, error) {
	if s.N() == n {
		return s, nil
	}
	r, ok := s.(Resizable)
	if !ok {
		return nil, fmt.Errorf("%w: %v cannot take N = %d: it does not implement shard.Resizable", ErrInvalidStrategy, s, n)
	}
	ns := r.WithN(n)
	if errs.IsNil(ns) || ns.N() != n || CheckN(n) != nil {
		return nil, fmt.Errorf("%w: %v.WithN(%d) returned %v", ErrInvalidStrategy, s, n, ns)
	}
	return ns, nil
}

// span is the number of suffixes a read of a base with history h covers:
// suffixes are 1..N for every N, so their union is 1..max(h).
func span(h []int) int { return slices.Max(h) }

// resize is Table.Reshard: announce n, wait for the fence, activate. It
// fails with ErrConflict, with the history, if n is not the writers'
// count after all: another process announced a count meanwhile.
func (l Layout) resize(ctx context.Context, c reshardClient, base string, n int) ([]int, error) {
	v, err := l.reshard(ctx, c, base, n)
	if err == nil && v.Pending {
		d := l.rec() // l is valid: reshard checked it
		if err := sleep(ctx, v.WaitFor(d.TTL)); err != nil {
			return nil, err
		}
		v, err = activate(ctx, c, d, base, v)
	}
	if err != nil {
		return nil, err
	}
	if v.Pending || v.WriteN() != n {
		return v.Shards, fmt.Errorf("%w: shard: Reshard base %q to %d: another process changed the history meanwhile: %v%s", ErrConflict, clip(base), n, v.Shards, pendingNote(v))
	}
	return v.Shards, nil
}

// pendingNote says that v's last count is pending, for messages.
func pendingNote(v record.View) string {
	if v.Pending {
		return fmt.Sprintf(", %d pending", v.Shards[len(v.Shards)-1])
	}
	return ""
}

// reshard announces n as base's pending count and returns the view it
// wrote (or the record's, if it needs no change). The announcement sets
// the record's HistoryTTL to l's, and its fence to the longer of the old
// and new HistoryTTL's fences: a process that read the record before
// the change trusts it for the old HistoryTTL.
func (l Layout) reshard(ctx context.Context, c reshardClient, base string, n int) (record.View, error) {
	if err := l.checkReshard(ctx, c, n); err != nil {
		return record.View{}, err
	}
	d := l.rec() // after the check: a typed-nil Strategy's N would panic
	if _, err := d.Key(base); err != nil {
		return record.View{}, fmt.Errorf("%w: Reshard: %w", ErrInvalid, err)
	}
	if err := probeTransactions(ctx, c, d, base, "Reshard"); err != nil {
		return record.View{}, err
	}
	db := record.Database(ctx, c)
	for range 4 {
		at := time.Now()
		rec, ok, err := d.Read(ctx, c, base)
		if err != nil {
			return record.View{}, err
		}
		if !ok {
			if err = d.Write(ctx, c, base, n); err == nil {
				v := d.Created(n, at)
				d.Add(db, base, v)
				return v, nil
			}
			if isCondFailed(err) {
				continue
			}
			return record.View{}, err
		}
		cur, err := d.Accept(db, base, rec)
		if err != nil {
			return record.View{}, err
		}
		h := rec.Shards
		switch {
		case h[len(h)-1] == n:
			return cur, nil
		case rec.Pending: // another Reshard's count first
			if err := sleep(ctx, cur.WaitFor(d.TTL)-time.Since(d.Seen(db, base, cur))); err != nil {
				return record.View{}, err
			}
			if _, err := activate(ctx, c, d, base, cur); err != nil {
				return record.View{}, err
			}
			continue
		case slices.Contains(h, n):
			return record.View{}, fmt.Errorf("%w: shard: Reshard base %q to %d: history %v already holds it; Rebalance first", ErrConflict, clip(base), n, h)
		case len(h) >= MaxHistory:
			return record.View{}, fmt.Errorf("%w: shard: Reshard base %q: history %v is full (%d counts); Rebalance first", ErrConflict, clip(base), h, MaxHistory)
		}
		ttl, old := d.TTL, d.TTL
		if rec.Recorded {
			old = rec.TTL
		}
		next := record.View{Shards: append(slices.Clone(h), n), Pending: true, Rev: rec.Rev + 1, At: time.Now(),
			TTL: ttl, Wait: max(record.Fence(ttl), record.Fence(old)), Recorded: true}
		err = d.SetHistory(ctx, c, base, rec.Rev, next)
		if err == nil {
			next.Got = time.Now() // the count was announced by now
			d.Add(db, base, next)
			return next, nil
		}
		if !isCondFailed(err) {
			return record.View{}, err
		}
	}
	return record.View{}, fmt.Errorf("%w: shard: Reshard base %q: the record kept changing", ErrConflict, clip(base))
}

// activate makes v's pending count the writers' (if the record is still
// at v's revision) and returns the record's view after.
func activate(ctx context.Context, c reshardClient, d record.Layout, base string, v record.View) (record.View, error) {
	next := v
	next.Pending = false
	err := d.SetHistory(ctx, c, base, v.Rev, next)
	if err != nil && !isCondFailed(err) {
		return record.View{}, err
	}
	d.Forget(record.Database(ctx, c), base)
	return d.History(ctx, c, base, 0)
}

// activateDue activates v's pending count if this process saw it pending
// at least the fence ago (the longer of its own and the record's): every
// process that could act on the history before it is done by then.
func activateDue(ctx context.Context, c reshardClient, d record.Layout, base string, v record.View) (record.View, error) {
	if !v.Pending || time.Since(d.Seen(record.Database(ctx, c), base, v)) < v.WaitFor(d.TTL) {
		return v, nil
	}
	return activate(ctx, c, d, base, v)
}

// probeTransactions fails with ErrNoTransactions if the server answers a
// TransactGetItems of base's record with an unknown operation; what
// names the call that needs them.
func probeTransactions(ctx context.Context, c reshardClient, d record.Layout, base, what string) error {
	get, err := d.RevisionGet(base)
	if err != nil {
		return err
	}
	_, err = observe.Do(ctx, c.TransactGetItems, &dynamodb.TransactGetItemsInput{TransactItems: []types.TransactGetItem{get}})
	if isUnknownOperation(err) {
		return fmt.Errorf("shard: %s table %s base %q: %w: %w", what, d.Table, clip(base), ErrNoTransactions, err)
	}
	return nil // any other error shows up in the record read that follows
}

func (l Layout) checkReshard(ctx context.Context, c reshardClient, n int) error {
	if ctx == nil || errs.IsNil(c) {
		return fmt.Errorf("%w: Reshard: nil ctx or client", ErrInvalid)
	}
	if err := l.Validate(); err != nil {
		return err
	}
	if l.Unchecked {
		return fmt.Errorf("%w: table %s: an Unchecked layout has no record to reshard", ErrInvalidLayout, l.Table)
	}
	if err := CheckN(n); err != nil {
		return err
	}
	_, err := withN(l.Strategy, n)
	return err
}

func isCondFailed(err error) bool {
	var ccf *types.ConditionalCheckFailedException
	return errors.As(err, &ccf)
}

// Reshard makes n the shard count that writers of base use, and returns
// the base's new history. It is done in two steps (see "Resharding" in
// the package doc): n is appended to the history in the base's record as
// pending, with a conditional update on the record's revision so that
// concurrent Reshards and first writers agree; from then on every process
// that reads the record reads n's suffixes too, and writes items whose
// keys differ between the counts with transactions. After the fence
// (twice the layout's HistoryTTL, at least HistoryTTL + 1 s), when no
// process can still act on the history without n, n becomes the count
// writers use. Reshard waits for that (honouring ctx); if it is
// interrupted, the next Reshard to n, or any writer of the base once the
// fence has passed, finishes it. A base without a record gets one with
// the history [n] at once: this is how a base is planned before its first
// write. If the history already ends with n, nothing is announced: a
// pending n is finished (after its fence), an active one left as it is.
//
// Items already written stay where they are, and every entry point finds
// them: reads cover the suffixes of every N in the history, and a Get
// reads every key the history gives the id. [Table.Rebalance] moves them to the
// newest count's keys and shrinks the history back to [n]. With Hash and
// CodePointProduct, multiplying N by k leaves 1/k of a base's items on the
// suffix the new N gives them (suffix-1 is the id's hash mod N), and an
// item whose keys coincide under every count is read and written as if
// the base had one count.
//
// It returns an error matching ErrInvalid, before any request, for an
// invalid or Unchecked layout, an n outside 1..MaxN, or a Strategy that is
// not Resizable; ErrNoTransactions, before changing anything, on a server
// without transactions; and one matching ErrConflict if n is already in
// the history but not its last (a count may come back only after a
// Rebalance), if the history has MaxHistory counts, or if the record kept
// changing. When another process announced a count while Reshard waited,
// so that n is not the writers' count at the end, Reshard returns the
// history it found with an error matching ErrConflict that names it.
//
// The announcement also records this Layout's HistoryTTL as the base's
// (see "Across processes" in the package doc).
//
// Every Table, scatter.Scatter and repo.Repo of this process on the same
// database, table, base and layout shape sees the new history at once
// (the history is cached per process and database, not per client);
// other processes see it within the base's HistoryTTL, which the fence
// covers.
func (t *Table[T]) Reshard(ctx context.Context, base string, n int) (h []int, err error) {
	ctx, call := t.begin(ctx, "shard.Reshard", base)
	defer func() { call.End(ctx, err) }()
	if err := t.made(); err != nil {
		return nil, err
	}
	call.SetInt(observe.AttrShardsTo, n)
	h, err = t.l.resize(ctx, t.c, base, n)
	call.SetInts(observe.AttrHistory, h)
	return h, err
}

// Shards returns the shard-count history of base, oldest first, after
// checking the Layout against the base's record: a read covers suffixes
// 1..max of the history, and the last count is the N writers use (once a
// Reshard's fence has passed: until then the one before it). A base
// without a record (nothing written through dynashard yet; and any base
// of an Unchecked layout, which reads nothing) has the history [N]. A
// record that differs in anything but N is a *LayoutError, and so is a
// Layout whose key attributes are not the table's; a record that
// dynashard did not write is an error matching ErrMalformedRecord. The
// result comes from a cache no older than [Layout.HistoryTTL], so a
// process pays one consistent GetItem (one read unit) per base at most
// that often (a base without a record, on every call); the caller may
// keep it but not change it.
func (t *Table[T]) Shards(ctx context.Context, base string) (h []int, err error) {
	ctx, call := t.begin(ctx, "shard.Shards", base)
	defer func() { call.End(ctx, err) }()
	if err := t.made(); err != nil {
		return nil, err
	}
	h, _, err = t.rec.Shards(ctx, t.c, base)
	call.SetInts(observe.AttrHistory, h)
	return h, err
}

// writeView returns the view a write of base acts under: the base's
// record is written if it has none, and a pending count whose fence has
// passed becomes the writers'.
func (t *Table[T]) writeView(ctx context.Context, base string) (record.View, error) {
	v, err := t.rec.Recorded(ctx, t.c, base, t.rec.TTL)
	if err != nil || !v.Pending {
		return v, err
	}
	return activateDue(ctx, t.c, t.rec, base, v)
}

// writeTarget is writeView and the distinct physical keys it gives (base,
// id), the writers' first.
func (t *Table[T]) writeTarget(ctx context.Context, base, id string) (record.View, []string, error) {
	v, err := t.writeView(ctx, base)
	if err != nil {
		return record.View{}, nil, err
	}
	keys, err := t.writeKeys(v, base, id)
	return v, keys, err
}

// readView returns the view a read of base acts under; consistent reads
// the record instead of a cached view.
func (t *Table[T]) readView(ctx context.Context, base string, consistent bool) (record.View, error) {
	ttl := t.rec.TTL
	if consistent {
		ttl = 0
	}
	return t.rec.History(ctx, t.c, base, ttl)
}

// writeKeys returns the distinct physical keys v gives (base, id), the
// writers' first.
func (t *Table[T]) writeKeys(v record.View, base, id string) ([]string, error) {
	if !calculated(t.l.Strategy) { // an item is wherever its Put lands
		s, err := withN(t.l.Strategy, v.WriteN())
		if err != nil {
			return nil, err
		}
		pk, err := t.physical(base, id, s)
		return []string{pk}, err
	}
	return keysOf(v, t.l, func(s Strategy) (string, error) { return t.physical(base, id, s) })
}

// keysOf returns the distinct physical keys that may hold an item under
// v, as physical makes them at each count: the writers' key first, then
// the others newest count first.
func keysOf(v record.View, l Layout, physical func(Strategy) (string, error)) ([]string, error) {
	order := make([]int, 0, len(v.Shards))
	order = append(order, v.WriteN())
	for i := len(v.Shards) - 1; i >= 0; i-- {
		order = append(order, v.Shards[i])
	}
	keys := make([]string, 0, len(order))
	for _, n := range order {
		s, err := withN(l.Strategy, n)
		if err != nil {
			return nil, err
		}
		pk, err := physical(s)
		if err != nil {
			return nil, err
		}
		if !slices.Contains(keys, pk) {
			keys = append(keys, pk)
		}
	}
	return keys, nil
}
