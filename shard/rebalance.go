package shard

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynashard/dynashard/internal/errs"
	"github.com/dynashard/dynashard/internal/observe"
	"github.com/dynashard/dynashard/internal/record"
)

// move moves item from physical key from to physical key to in one
// transaction: a Put at to, if no item is there, and a Delete at from, if
// the item there is still the one read (its token, which every
// transactional write changes, is unchanged), on the condition that
// base's record is still at the revision the move was planned from. It
// reports whether the item moved; raced means something wrote it since
// it was read (the caller sweeps the key again), stale that the record
// changed (the caller plans again). If to holds the item already, which
// the single-copy invariant excludes but a table written by an earlier
// version may hold, that copy is the one reads returned first, and from
// is deleted, on the same conditions.
func (l Layout) move(ctx context.Context, c rebalanceClient, d record.Layout, base string, rev int, item map[string]types.AttributeValue, from, to string) (moveOutcome, error) {
	check, err := d.RevisionCheck(base, rev)
	if err != nil {
		return raced, err
	}
	put := maps.Clone(item)
	put[l.PartitionKey] = &types.AttributeValueMemberS{Value: to}
	delete(put, attrToken)
	key := map[string]types.AttributeValue{l.PartitionKey: &types.AttributeValueMemberS{Value: from}, l.SortKey: item[l.SortKey]}
	same := "attribute_exists(#pk) AND attribute_not_exists(#w)"
	names := map[string]string{"#pk": l.PartitionKey, "#w": attrToken}
	var values map[string]types.AttributeValue
	if tok, ok := item[attrToken]; ok {
		same, values = "#w = :w", map[string]types.AttributeValue{":w": tok}
		names = map[string]string{"#w": attrToken}
	}
	table := aws.String(l.Table)
	del := types.TransactWriteItem{Delete: &types.Delete{TableName: table, Key: key, ConditionExpression: aws.String(same),
		ExpressionAttributeNames: names, ExpressionAttributeValues: values}}
	reasons, err := l.transact(ctx, c, from, to,
		types.TransactWriteItem{Put: &types.Put{TableName: table, Item: put, ConditionExpression: aws.String("attribute_not_exists(#pk)"),
			ExpressionAttributeNames: map[string]string{"#pk": l.PartitionKey}}},
		del, check)
	switch {
	case err != nil:
		return raced, err
	case reasons == nil:
		return moved, nil
	case failed(reasons[2]):
		return stale, nil
	case !failed(reasons[0]) || failed(reasons[1]):
		return raced, nil
	}
	// to holds the item: drop the copy at from.
	reasons, err = l.transact(ctx, c, from, to, del, check)
	switch {
	case err != nil:
		return raced, err
	case reasons == nil:
		return dropped, nil
	case failed(reasons[1]):
		return stale, nil
	}
	return raced, nil
}

// transact sends items as one TransactWriteItems. A cancelled
// transaction is its reasons, one per item, and no error.
func (l Layout) transact(ctx context.Context, c rebalanceClient, from, to string, items ...types.TransactWriteItem) ([]types.CancellationReason, error) {
	_, err := observe.Do(ctx, c.TransactWriteItems, &dynamodb.TransactWriteItemsInput{TransactItems: items})
	if err == nil {
		return nil, nil
	}
	var tce *types.TransactionCanceledException
	if errors.As(err, &tce) && len(tce.CancellationReasons) == len(items) {
		return tce.CancellationReasons, nil
	}
	if isUnknownOperation(err) {
		err = fmt.Errorf("%w: %w", ErrNoTransactions, err)
	}
	return nil, fmt.Errorf("shard: move: TransactWriteItems table %s key %q to %q: %w", l.Table, from, to, err)
}

func failed(r types.CancellationReason) bool {
	return aws.ToString(r.Code) == "ConditionalCheckFailed"
}

// moveOutcome is what a move did.
type moveOutcome int

const (
	moved   moveOutcome = iota // the item is at its new key, and only there
	dropped                    // the new key held the item: the old copy is deleted
	raced                      // a write came between the read and the move: read again
	stale                      // the record changed since the move was planned: plan again
)

// rebalanceClient is what Rebalance needs of a client.
type rebalanceClient interface {
	reshardClient
	DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error)
	TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, optFns ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error)
	Query(ctx context.Context, in *dynamodb.QueryInput, optFns ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
}

var _ rebalanceClient = (*dynamodb.Client)(nil)

// RebalanceOptions configures [Table.Rebalance]. The zero value is the default.
type RebalanceOptions struct {
	// After skips suffixes 1..After: to resume an interrupted Rebalance
	// of a large base, pass the Suffix of its last RebalanceProgress. Zero
	// sweeps every suffix; a re-run that sweeps them all again is always
	// correct, only slower.
	After int
	// Wait is how long Rebalance waits, after reading the base's history
	// and before sweeping, for every process to stop writing under an
	// older count: zero means the layout's fence (HistoryTTL plus
	// max(HistoryTTL, 1 s); see "Resharding" in the package doc).
	// Negative means no wait; use it only when no other process wrote the
	// base since its last Reshard.
	Wait time.Duration
	// OnProgress, if set, is called after each suffix is swept, with the
	// running totals.
	OnProgress func(RebalanceProgress)
}

// RebalanceProgress counts what a [Table.Rebalance] has done.
type RebalanceProgress struct {
	// Suffix is the last suffix swept entirely, of Suffixes (1..Suffixes
	// are swept in order).
	Suffix, Suffixes int
	Scanned          int // items read
	Moved            int // items copied to the key of the newest count, then deleted at the old one
	Dropped          int // older copies deleted because the newest key held the item already
	// Retired is the history that Rebalance replaced with its newest
	// count, once the sweep is done; nil until then.
	Retired []int
}

// rebalance is Table.Rebalance for any client and layout. It plans from
// the record, sweeps, and retires the older counts; when the record
// changes under it (a move or the retire finds another revision), it
// reads the record again and plans again, from the first suffix.
func rebalance(ctx context.Context, c rebalanceClient, l Layout, base string, optFns ...func(*RebalanceOptions)) (RebalanceProgress, error) {
	var o RebalanceOptions
	for _, f := range optFns {
		if f != nil {
			f(&o)
		}
	}
	if err := l.checkRebalance(ctx, c); err != nil {
		return RebalanceProgress{}, err
	}
	d := l.rec()
	if _, err := d.Key(base); err != nil {
		return RebalanceProgress{}, fmt.Errorf("%w: Rebalance: %w", ErrInvalid, err)
	}
	sw := sweeper{l: l, d: d, c: c, base: base, o: o}
	for range planAttempts {
		done, err := sw.plan(ctx)
		if err != nil || done {
			return sw.p, err
		}
		if err := sleep(ctx, o.fence(d, sw.v)); err != nil {
			return sw.p, err
		}
		again, err := sw.run(ctx)
		if err != nil || !again {
			return sw.p, err
		}
		sw.o.After = 0 // a new plan sweeps every suffix
	}
	return sw.p, fmt.Errorf("%w: shard: Rebalance base %q: the history kept changing; run Rebalance again", ErrConflict, clip(base))
}

// planAttempts bounds how often a Rebalance plans again after the record
// changed under it.
const planAttempts = 4

// plan reads the record and sets the sweep's target; done reports that
// there is nothing to do.
func (sw *sweeper) plan(ctx context.Context) (done bool, _ error) {
	l, d, base := sw.l, sw.d, sw.base
	rec, ok, err := d.Read(ctx, sw.c, base)
	if err != nil || !ok {
		return true, err
	}
	v, err := d.Accept(record.Database(ctx, sw.c), base, rec)
	if err != nil {
		return true, err
	}
	h := rec.Shards
	switch {
	case len(h) == 1:
		sw.p.Suffix, sw.p.Suffixes = h[0], h[0]
		return true, nil
	case rec.Pending:
		return true, fmt.Errorf("%w: shard: Rebalance base %q: count %d is pending in history %v; finish it first (Reshard to %[3]d)", ErrConflict, clip(base), h[len(h)-1], h)
	}
	sw.v, sw.newest = v, h[len(h)-1]
	if sw.s, err = withN(l.Strategy, sw.newest); err != nil {
		return true, err
	}
	sw.p.Suffix, sw.p.Suffixes = 0, span(h)
	return false, nil
}

// run sweeps every suffix of the plan and retires the older counts;
// again reports that the record changed and the sweep must be planned
// again.
func (sw *sweeper) run(ctx context.Context) (again bool, _ error) {
	for suffix := max(sw.o.After, 0) + 1; suffix <= sw.p.Suffixes; suffix++ {
		if err := sw.sweep(ctx, suffix); err != nil {
			return errors.Is(err, errStale), ignoreStale(err)
		}
		sw.p.Suffix = suffix
		if sw.o.OnProgress != nil {
			sw.o.OnProgress(sw.p)
		}
	}
	err := retire(ctx, sw.c, sw.d, sw.base, sw.v)
	if isCondFailed(err) {
		return true, nil
	}
	if err == nil {
		sw.p.Retired = sw.v.Shards
	}
	return false, err
}

// errStale is a sweep's error when a move found the record changed.
var errStale = errors.New("shard: the layout record changed during the sweep")

func ignoreStale(err error) error {
	if errors.Is(err, errStale) {
		return nil
	}
	return err
}

func (o RebalanceOptions) fence(d record.Layout, v record.View) time.Duration {
	if o.Wait != 0 {
		return max(o.Wait, 0)
	}
	return v.WaitFor(d.TTL)
}

func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

func (l Layout) checkRebalance(ctx context.Context, c rebalanceClient) error {
	if ctx == nil || errs.IsNil(c) {
		return fmt.Errorf("%w: Rebalance: nil ctx or client", ErrInvalid)
	}
	if err := l.Validate(); err != nil {
		return err
	}
	switch {
	case l.Unchecked:
		return fmt.Errorf("%w: table %s: an Unchecked layout has no history to rebalance", ErrInvalidLayout, l.Table)
	case l.SortKey == "":
		return fmt.Errorf("%w: table %s: Rebalance needs a sort key to tell items apart", ErrInvalidLayout, l.Table)
	case calculated(l.Strategy) && l.sortType() != types.ScalarAttributeTypeS:
		return fmt.Errorf("%w: table %s: a calculated strategy's items are found by id, a sort key of type S", ErrInvalidLayout, l.Table)
	}
	if _, ok := l.Strategy.(Resizable); !ok {
		return fmt.Errorf("%w: %v does not implement shard.Resizable", ErrInvalidStrategy, l.Strategy)
	}
	return nil
}

// retire replaces the history of v with its newest count, on the
// condition that the record is still at v's revision.
func retire(ctx context.Context, c reshardClient, d record.Layout, base string, v record.View) error {
	next := v
	next.Shards, next.Pending = []int{v.Shards[len(v.Shards)-1]}, false
	err := d.SetHistory(ctx, c, base, v.Rev, next)
	if err == nil {
		d.Forget(record.Database(ctx, c), base)
	}
	return err
}

// sweeper moves the misplaced items of one base.
type sweeper struct {
	l      Layout
	d      record.Layout // l's description
	c      rebalanceClient
	base   string
	v      record.View // the record the sweep was planned from
	newest int
	s      Strategy // at newest
	o      RebalanceOptions
	p      RebalanceProgress
}

// sweep moves the misplaced items of one suffix, page by page, and sweeps
// it again while a write of an item came between its read and its move.
func (sw *sweeper) sweep(ctx context.Context, suffix int) error {
	for range txAttempts {
		again, err := sw.pass(ctx, suffix)
		if err != nil || !again {
			return err
		}
	}
	return fmt.Errorf("%w: shard: Rebalance base %q suffix %d: its items kept changing; run Rebalance again", ErrConflict, clip(sw.base), suffix)
}

// pass is one sweep of a suffix; again reports an item that raced.
func (sw *sweeper) pass(ctx context.Context, suffix int) (again bool, _ error) {
	l := sw.l
	from := l.Codec.Key(sw.base, suffix)
	in := &dynamodb.QueryInput{
		TableName:                 aws.String(l.Table),
		KeyConditionExpression:    aws.String("#pk = :pk"),
		ExpressionAttributeNames:  map[string]string{"#pk": l.PartitionKey},
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": &types.AttributeValueMemberS{Value: from}},
		ConsistentRead:            aws.Bool(true),
	}
	for {
		out, err := observe.Do(ctx, sw.c.Query, in)
		if err != nil {
			return false, fmt.Errorf("shard: Rebalance: Query table %s key %q: %w", l.Table, from, err)
		}
		for _, item := range out.Items {
			sw.p.Scanned++
			to, ok := sw.home(item, suffix)
			if !ok {
				continue
			}
			did, err := l.move(ctx, sw.c, sw.d, sw.base, sw.v.Rev, item, from, l.Codec.Key(sw.base, to))
			if err != nil {
				return false, err
			}
			switch did {
			case stale:
				return false, errStale
			case moved:
				sw.p.Moved++
			case dropped:
				sw.p.Dropped++
			case raced:
				again = true
			}
		}
		if out.LastEvaluatedKey == nil {
			return again, nil
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
}

// home returns the suffix item belongs in, and false if it is there.
func (sw *sweeper) home(item map[string]types.AttributeValue, suffix int) (int, bool) {
	if !calculated(sw.s) {
		if suffix <= sw.newest {
			return suffix, false
		}
		return sw.s.Pick(""), true
	}
	id, ok := item[sw.l.SortKey].(*types.AttributeValueMemberS)
	if !ok {
		return suffix, false
	}
	to := sw.s.Pick(id.Value)
	return to, to != suffix
}

// Rebalance moves every item of base to the suffix the newest count of
// the base's history gives it, and then retires the older counts, so that
// reads query one suffix set again (1..N) and a Get costs one request.
// Each item is moved with one transaction: a Put at the new key if
// nothing is there, and a Delete at the old key if the item is still the
// one read (see "Resharding" in the package doc); an item written between
// its read and its move is read again. Concurrent writes, Deletes and
// conditional writes of the same items are linearizable with the moves.
// A Rebalance stopped at any point leaves every item in exactly one
// place; a re-run is always safe and finishes the job, and
// RebalanceOptions.After resumes a large base where the last one stopped.
// Under Random, only items in suffixes above the newest count move (to a
// random suffix of it): growing a Random base needs no move at all.
//
// Before the sweep Rebalance waits RebalanceOptions.Wait, so that no
// process still writes under an older count; the history is retired with
// a conditional update on the record's revision, which fails with
// ErrConflict if the history changed meanwhile (a Reshard: run Rebalance
// again). A base without a record, or with a history of one count, has
// nothing to do; one whose newest count is still pending (a Reshard under
// way, or a Grower's grow that no write has finished yet) is ErrConflict:
// Table.Reshard to that count finishes it. Moves need transactions: on a server without them
// Rebalance fails with ErrNoTransactions.
//
// It returns an error matching ErrInvalid before any request for an
// invalid or Unchecked layout, a layout without a sort key, a calculated
// one whose sort key is not a string (the id), or a Strategy that is not
// Resizable.
func (t *Table[T]) Rebalance(ctx context.Context, base string, optFns ...func(*RebalanceOptions)) (p RebalanceProgress, err error) {
	ctx, call := t.begin(ctx, "shard.Rebalance", base)
	defer func() { call.End(ctx, err) }()
	if err := t.made(); err != nil {
		return RebalanceProgress{}, err
	}
	p, err = rebalance(ctx, t.c, t.l, base, optFns...)
	t.obs.Moved(ctx, t.l.Table, p.Moved)
	if call.Traced() {
		call.SetInt(observe.AttrItems, p.Scanned)
		call.SetInt(attrMoved, p.Moved)
		call.SetInts(observe.AttrHistory, p.Retired)
	}
	return p, err
}
