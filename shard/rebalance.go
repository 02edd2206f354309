package shard

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynashard/dynashard/internal/errs"
)

// mover is the part of a client that moving an item needs.
type mover interface {
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error)
}

// move copies item from physical key from to physical key to, unless to
// already holds an item with its key (which is then newer, or the copy of
// an earlier, interrupted move: either way it wins), and then deletes it
// at from. It reports whether it wrote the copy. Put first, delete second:
// a crash in between leaves two copies, which reads tell apart (they keep
// the one at the newest key) and a re-run finishes.
func (l Layout) move(ctx context.Context, c mover, item map[string]types.AttributeValue, from, to string) (bool, error) {
	put := make(map[string]types.AttributeValue, len(item))
	for k, v := range item {
		put[k] = v
	}
	put[l.PartitionKey] = &types.AttributeValueMemberS{Value: to}
	_, err := c.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: aws.String(l.Table), Item: put,
		ConditionExpression:      aws.String("attribute_not_exists(#pk)"),
		ExpressionAttributeNames: map[string]string{"#pk": l.PartitionKey},
	})
	wrote := err == nil
	if err != nil && !isCondFailed(err) {
		return false, fmt.Errorf("shard: move: PutItem table %s key %q: %w", l.Table, to, err)
	}
	key := map[string]types.AttributeValue{l.PartitionKey: &types.AttributeValueMemberS{Value: from}}
	if l.SortKey != "" {
		key[l.SortKey] = item[l.SortKey]
	}
	if _, err := c.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(l.Table), Key: key}); err != nil {
		return wrote, fmt.Errorf("shard: move: DeleteItem table %s key %q: %w", l.Table, from, err)
	}
	return wrote, nil
}

// RebalanceClient is the part of *dynamodb.Client that [Rebalance] uses.
type RebalanceClient interface {
	ReshardClient
	DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error)
	Query(ctx context.Context, in *dynamodb.QueryInput, optFns ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
}

var _ RebalanceClient = (*dynamodb.Client)(nil)

// RebalanceOptions configures [Rebalance]. The zero value is the default.
type RebalanceOptions struct {
	// After skips suffixes 1..After: to resume an interrupted Rebalance
	// of a large base, pass the Suffix of its last RebalanceProgress. Zero
	// sweeps every suffix; a re-run that sweeps them all again is always
	// correct, only slower.
	After int
	// Wait is how long Rebalance waits, after reading the base's history
	// and before sweeping, for every process to stop writing under an
	// older count: a process trusts its cached history for the layout's
	// HistoryTTL, so zero means twice that (0 if the layout caches
	// nothing). Negative means no wait; use it only when no process wrote
	// the base since its last Reshard.
	Wait time.Duration
	// OnProgress, if set, is called after each suffix is swept, with the
	// running totals.
	OnProgress func(RebalanceProgress)
}

// RebalanceProgress counts what a [Rebalance] has done.
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

// Rebalance moves every item of base to the suffix the newest count of
// the base's history gives it, and then retires the older counts, so that
// reads query one suffix set again (1..N) and a Get costs one request.
// Each item is moved with put-then-delete: a conditional PutItem at the
// new key that never overwrites an item already there (which is newer: a
// writer put it after the Reshard, or an earlier, interrupted Rebalance
// did), then a DeleteItem at the old key. A crash between the two leaves
// two copies of one item, which reads return once (see package scatter)
// and a re-run finishes; a re-run is always safe, and RebalanceOptions.
// After resumes a large base where the last one stopped. Under Random,
// only items in suffixes above the newest count move (to a random suffix
// of it): growing a Random base needs no move at all.
//
// Before the sweep Rebalance waits RebalanceOptions.Wait, so that no
// process still writes under an older count; the history is retired with
// a conditional update on the record's revision, which fails with
// ErrConflict if the history changed meanwhile (a Reshard: run Rebalance
// again). A Delete of an item racing with its move can be undone by the
// move (the item reappears at its new key): delete again after
// Rebalance. A base without a record, or with a history of one count, has
// nothing to do.
//
// It returns an error matching ErrInvalid before any request for an
// invalid or Unchecked layout, a layout without a sort key, a calculated
// one whose sort key is not a string (the id), or a Strategy that is not
// Resizable.
func Rebalance(ctx context.Context, c RebalanceClient, l Layout, base string, optFns ...func(*RebalanceOptions)) (RebalanceProgress, error) {
	var o RebalanceOptions
	for _, f := range optFns {
		f(&o)
	}
	if err := l.checkRebalance(ctx, c); err != nil {
		return RebalanceProgress{}, err
	}
	if _, err := l.recordKey(base); err != nil {
		return RebalanceProgress{}, fmt.Errorf("%w: Rebalance: %w", ErrInvalid, err)
	}
	rec, ok, err := l.readRecord(ctx, c, base)
	if err != nil || !ok {
		return RebalanceProgress{}, err
	}
	if _, err := l.accept(c, base, rec); err != nil {
		return RebalanceProgress{}, err
	}
	h := rec.shards
	if len(h) == 1 {
		return RebalanceProgress{Suffix: h[0], Suffixes: h[0]}, nil
	}
	if err := sleep(ctx, o.wait(l)); err != nil {
		return RebalanceProgress{}, err
	}
	sw := sweeper{l: l, c: c, base: base, newest: h[len(h)-1], o: o}
	if sw.s, err = withN(l.Strategy, sw.newest); err != nil {
		return RebalanceProgress{}, err
	}
	sw.p.Suffixes = span(h)
	for suffix := max(o.After, 0) + 1; suffix <= sw.p.Suffixes; suffix++ {
		if err := sw.sweep(ctx, suffix); err != nil {
			return sw.p, err
		}
		sw.p.Suffix = suffix
		if o.OnProgress != nil {
			o.OnProgress(sw.p)
		}
	}
	if err := l.retire(ctx, c, base, rec); err != nil {
		return sw.p, err
	}
	sw.p.Retired = h
	return sw.p, nil
}

func (o RebalanceOptions) wait(l Layout) time.Duration {
	if o.Wait != 0 {
		return max(o.Wait, 0)
	}
	return 2 * l.historyTTL()
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

func (l Layout) checkRebalance(ctx context.Context, c RebalanceClient) error {
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

// retire replaces the history of rec with its newest count.
func (l Layout) retire(ctx context.Context, c ReshardClient, base string, rec record) error {
	newest := []int{rec.shards[len(rec.shards)-1]}
	err := l.setHistory(ctx, c, base, rec.rev, newest)
	if isCondFailed(err) {
		return fmt.Errorf("%w: shard: Rebalance base %q: the history changed during the sweep; run Rebalance again: %w", ErrConflict, clip(base), err)
	}
	if err == nil {
		verified.add(c, l, base, newest)
	}
	return err
}

// sweeper moves the misplaced items of one base.
type sweeper struct {
	l      Layout
	c      RebalanceClient
	base   string
	newest int
	s      Strategy // at newest
	o      RebalanceOptions
	p      RebalanceProgress
}

// sweep moves the misplaced items of one suffix, page by page.
func (sw *sweeper) sweep(ctx context.Context, suffix int) error {
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
		out, err := sw.c.Query(ctx, in)
		if err != nil {
			return fmt.Errorf("shard: Rebalance: Query table %s key %q: %w", l.Table, from, err)
		}
		for _, item := range out.Items {
			sw.p.Scanned++
			to, ok := sw.home(item, suffix)
			if !ok {
				continue
			}
			wrote, err := l.move(ctx, sw.c, item, from, l.Codec.Key(sw.base, to))
			if err != nil {
				return err
			}
			if wrote {
				sw.p.Moved++
			} else {
				sw.p.Dropped++
			}
		}
		if out.LastEvaluatedKey == nil {
			return nil
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
