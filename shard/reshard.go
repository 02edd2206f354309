package shard

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynashard/dynashard/internal/errs"
	"github.com/dynashard/dynashard/internal/observe"
)

// reshardClient is what Reshard needs of a client.
type reshardClient interface {
	recordClient
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
const MaxHistory = 8

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
	if err == nil && v.pending {
		if err := sleep(ctx, v.waitFor(l)); err != nil {
			return nil, err
		}
		v, err = l.activate(ctx, c, base, v)
	}
	if err != nil {
		return nil, err
	}
	if v.pending || v.writeN() != n {
		return v.shards, fmt.Errorf("%w: shard: Reshard base %q to %d: another process changed the history meanwhile: %v%s", ErrConflict, clip(base), n, v.shards, pendingNote(v))
	}
	return v.shards, nil
}

// pendingNote says that v's last count is pending, for messages.
func pendingNote(v view) string {
	if v.pending {
		return fmt.Sprintf(", %d pending", v.shards[len(v.shards)-1])
	}
	return ""
}

// reshard announces n as base's pending count and returns the view it
// wrote (or the record's, if it needs no change). The announcement sets
// the record's HistoryTTL to l's, and its fence to the longer of the old
// and new HistoryTTL's fences: a process that read the record before
// the change trusts it for the old HistoryTTL.
func (l Layout) reshard(ctx context.Context, c reshardClient, base string, n int) (view, error) {
	if err := l.checkReshard(ctx, c, n); err != nil {
		return view{}, err
	}
	if _, err := l.recordKey(base); err != nil {
		return view{}, fmt.Errorf("%w: Reshard: %w", ErrInvalid, err)
	}
	if err := l.probeTransactions(ctx, c, base, "Reshard"); err != nil {
		return view{}, err
	}
	db := databaseOf(ctx, c)
	for range 4 {
		at := time.Now()
		rec, ok, err := l.readRecord(ctx, c, base)
		if err != nil {
			return view{}, err
		}
		if !ok {
			if err = l.writeRecordN(ctx, c, base, n); err == nil {
				v := l.created(n, at)
				views.add(db, l, base, v)
				return v, nil
			}
			if isCondFailed(err) {
				continue
			}
			return view{}, err
		}
		cur, err := l.accept(db, base, rec)
		if err != nil {
			return view{}, err
		}
		h := rec.shards
		switch {
		case h[len(h)-1] == n:
			return cur, nil
		case rec.pending: // another Reshard's count first
			if err := sleep(ctx, cur.waitFor(l)-time.Since(views.seen(db, l, base, cur))); err != nil {
				return view{}, err
			}
			if _, err := l.activate(ctx, c, base, cur); err != nil {
				return view{}, err
			}
			continue
		case slices.Contains(h, n):
			return view{}, fmt.Errorf("%w: shard: Reshard base %q to %d: history %v already holds it; Rebalance first", ErrConflict, clip(base), n, h)
		case len(h) >= MaxHistory:
			return view{}, fmt.Errorf("%w: shard: Reshard base %q: history %v is full (%d counts); Rebalance first", ErrConflict, clip(base), h, MaxHistory)
		}
		ttl, old := l.historyTTL(), l.historyTTL()
		if rec.recorded {
			old = rec.ttl
		}
		next := view{shards: append(slices.Clone(h), n), pending: true, rev: rec.rev + 1, at: time.Now(),
			ttl: ttl, wait: max(fenceOf(ttl), fenceOf(old)), recorded: true}
		err = l.setHistory(ctx, c, base, rec.rev, next)
		if err == nil {
			next.got = time.Now() // the count was announced by now
			views.add(db, l, base, next)
			return next, nil
		}
		if !isCondFailed(err) {
			return view{}, err
		}
	}
	return view{}, fmt.Errorf("%w: shard: Reshard base %q: the record kept changing", ErrConflict, clip(base))
}

// activate makes v's pending count the writers' (if the record is still
// at v's revision) and returns the record's view after.
func (l Layout) activate(ctx context.Context, c reshardClient, base string, v view) (view, error) {
	next := v
	next.pending = false
	err := l.setHistory(ctx, c, base, v.rev, next)
	if err != nil && !isCondFailed(err) {
		return view{}, err
	}
	views.forget(databaseOf(ctx, c), l, base)
	return l.history(ctx, c, base, 0)
}

// activateDue activates v's pending count if this process saw it pending
// at least the fence ago (the longer of its own and the record's): every
// process that could act on the history before it is done by then.
func (l Layout) activateDue(ctx context.Context, c reshardClient, base string, v view) (view, error) {
	if !v.pending || time.Since(views.seen(databaseOf(ctx, c), l, base, v)) < v.waitFor(l) {
		return v, nil
	}
	return l.activate(ctx, c, base, v)
}

// probeTransactions fails with ErrNoTransactions if the server answers a
// TransactGetItems of base's record with an unknown operation; what
// names the call that needs them.
func (l Layout) probeTransactions(ctx context.Context, c reshardClient, base, what string) error {
	key, err := l.recordKey(base)
	if err != nil {
		return err
	}
	_, err = observe.Do(ctx, c.TransactGetItems, &dynamodb.TransactGetItemsInput{TransactItems: []types.TransactGetItem{
		{Get: &types.Get{TableName: aws.String(l.Table), Key: key, ProjectionExpression: aws.String("#r"),
			ExpressionAttributeNames: map[string]string{"#r": attrRev}}},
	}})
	if isUnknownOperation(err) {
		return fmt.Errorf("shard: %s table %s base %q: %w: %w", what, l.Table, clip(base), ErrNoTransactions, err)
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

// setHistory replaces the record's history with next's if its revision
// is still rev, and its HistoryTTL and fence with next's if next has
// them. It refuses, before any request, a revision at its bound.
func (l Layout) setHistory(ctx context.Context, c reshardClient, base string, rev int, next view) error {
	key, err := l.recordKey(base)
	if err != nil {
		return err
	}
	if rev+1 >= maxRev {
		return fmt.Errorf("%w: table %s base %q: revision %d cannot grow past %d", ErrMalformedRecord, l.Table, clip(base), rev, maxRev-1)
	}
	cond := "attribute_exists(#l) AND #r = :rev"
	if rev == 0 { // a record written before revisions existed
		cond = "attribute_exists(#l) AND attribute_not_exists(#r)"
	}
	update := "SET #s = :h, #r = :next, #c = :now, #p = :p"
	names := map[string]string{"#s": attrShards, "#r": attrRev, "#c": attrChanged, "#l": attrLayout, "#p": attrPending}
	values := map[string]types.AttributeValue{
		":h":    shardList(next.shards),
		":next": &types.AttributeValueMemberN{Value: strconv.Itoa(rev + 1)},
		":now":  &types.AttributeValueMemberS{Value: time.Now().UTC().Format(time.RFC3339)},
		":p":    &types.AttributeValueMemberBOOL{Value: next.pending},
	}
	if rev != 0 {
		values[":rev"] = &types.AttributeValueMemberN{Value: strconv.Itoa(rev)}
	}
	if next.recorded {
		update += ", #t = :t, #f = :f"
		names["#t"], names["#f"] = attrTTL, attrWait
		values[":t"], values[":f"] = millis(next.ttl), millis(next.wait)
	}
	in := &dynamodb.UpdateItemInput{
		TableName:                 aws.String(l.Table),
		Key:                       key,
		UpdateExpression:          aws.String(update),
		ConditionExpression:       aws.String(cond),
		ExpressionAttributeNames:  names,
		ExpressionAttributeValues: values,
	}
	// A Rebalance's move checks the record in a transaction, and DynamoDB
	// refuses a write of an item a transaction holds with a
	// TransactionConflictException, which the SDK does not retry: the
	// move is short, so try again a few times.
	for wait := 10 * time.Millisecond; ; wait *= 2 {
		_, err = observe.Do(ctx, c.UpdateItem, in)
		var tce *types.TransactionConflictException
		if !errors.As(err, &tce) || wait > 640*time.Millisecond {
			break
		}
		if err := sleep(ctx, wait); err != nil {
			return err
		}
	}
	if err != nil && !isCondFailed(err) {
		return fmt.Errorf("shard: update layout record of table %s base %q: %w", l.Table, clip(base), err)
	}
	return err
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
	h, err = t.l.shardsOf(ctx, t.c, base)
	call.SetInts(observe.AttrHistory, h)
	return h, err
}

// writeView returns the view a write of base acts under: the base's
// record is written if it has none, and a pending count whose fence has
// passed becomes the writers'.
func (t *Table[T]) writeView(ctx context.Context, base string) (view, error) {
	v, err := t.l.recorded(ctx, t.c, base, t.l.historyTTL())
	if err != nil || !v.pending {
		return v, err
	}
	return t.l.activateDue(ctx, t.c, base, v)
}

// writeTarget is writeView and the distinct physical keys it gives (base,
// id), the writers' first.
func (t *Table[T]) writeTarget(ctx context.Context, base, id string) (view, []string, error) {
	v, err := t.writeView(ctx, base)
	if err != nil {
		return view{}, nil, err
	}
	keys, err := t.writeKeys(v, base, id)
	return v, keys, err
}

// readView returns the view a read of base acts under; consistent reads
// the record instead of a cached view.
func (t *Table[T]) readView(ctx context.Context, base string, consistent bool) (view, error) {
	ttl := t.l.historyTTL()
	if consistent {
		ttl = 0
	}
	return t.l.history(ctx, t.c, base, ttl)
}

// writeKeys returns the distinct physical keys v gives (base, id), the
// writers' first.
func (t *Table[T]) writeKeys(v view, base, id string) ([]string, error) {
	if !calculated(t.l.Strategy) { // an item is wherever its Put lands
		s, err := withN(t.l.Strategy, v.writeN())
		if err != nil {
			return nil, err
		}
		pk, err := t.physical(base, id, s)
		return []string{pk}, err
	}
	return v.keysOf(t.l, base, id, func(s Strategy) (string, error) { return t.physical(base, id, s) })
}
