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

	"github.com/dynashard/dynashard/internal/ddbsize"
	"github.com/dynashard/dynashard/internal/errs"
)

// ReshardClient is the part of *dynamodb.Client that [Layout.Reshard]
// uses.
type ReshardClient interface {
	RecordClient
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
}

var _ ReshardClient = (*dynamodb.Client)(nil)

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
// ([Rebalance]) first.
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
	if ns == nil || ns.N() != n || CheckN(n) != nil {
		return nil, fmt.Errorf("%w: %v.WithN(%d) returned %v", ErrInvalidStrategy, s, n, ns)
	}
	return ns, nil
}

// span is the number of suffixes a read of a base with history h covers:
// suffixes are 1..N for every N, so their union is 1..max(h).
func span(h []int) int { return slices.Max(h) }

// Reshard makes n the shard count that writers of base use from now on,
// and returns the base's new history: n is appended to the history in the
// base's record, with a conditional update on the record's revision, so
// that concurrent Reshards and first writers agree (a Reshard that loses
// the race reads the record again and tries once more; if the history
// already ends with n, nothing is written). A base without a record gets
// one with the history [n]: this is how a base is planned before its first
// write. This process's writers and readers use the new history at once;
// other processes within their [Layout.HistoryTTL].
//
// Items already written stay where they are, and every entry point finds
// them: reads cover the suffixes of every N in the history, and a Get
// tries the newest N's suffix first, then the older ones'. With Hash and
// CodePointProduct, multiplying N by k leaves 1/k of a base's items on the
// suffix the new N gives them (suffix-1 is the id's hash mod N), so
// doubling makes the fewest extra Get requests: 1.5 on average for an item
// written before the change, 1 for one written after. [Rebalance] moves
// the rest and shrinks the history back to [n].
//
// It returns an error matching ErrInvalid, before any request, for an
// invalid or Unchecked layout, an n outside 1..MaxN, or a Strategy that is
// not Resizable; and one matching ErrConflict if n is already in the
// history but not its last (a count may come back only after a Rebalance),
// if the history has MaxHistory counts, or if the record kept changing.
func (l Layout) Reshard(ctx context.Context, c ReshardClient, base string, n int) ([]int, error) {
	if err := l.checkReshard(ctx, c, n); err != nil {
		return nil, err
	}
	if _, err := l.recordKey(base); err != nil {
		return nil, fmt.Errorf("%w: Reshard: %w", ErrInvalid, err)
	}
	for range 4 {
		rec, ok, err := l.readRecord(ctx, c, base)
		if err != nil {
			return nil, err
		}
		if !ok {
			if err = l.writeRecordN(ctx, c, base, n); err == nil {
				verified.add(c, l, base, []int{n})
				return []int{n}, nil
			}
			if isCondFailed(err) {
				continue
			}
			return nil, err
		}
		if _, err := l.accept(c, base, rec); err != nil {
			return nil, err
		}
		h := rec.shards
		switch {
		case h[len(h)-1] == n:
			return h, nil
		case slices.Contains(h, n):
			return nil, fmt.Errorf("%w: shard: Reshard base %q to %d: history %v already holds it; Rebalance first", ErrConflict, clip(base), n, h)
		case len(h) >= MaxHistory:
			return nil, fmt.Errorf("%w: shard: Reshard base %q: history %v is full (%d counts); Rebalance first", ErrConflict, clip(base), h, MaxHistory)
		}
		next := append(slices.Clone(h), n)
		err = l.setHistory(ctx, c, base, rec.rev, next)
		if err == nil {
			verified.add(c, l, base, next)
			return next, nil
		}
		if !isCondFailed(err) {
			return nil, err
		}
	}
	return nil, fmt.Errorf("%w: shard: Reshard base %q: the record kept changing", ErrConflict, clip(base))
}

func (l Layout) checkReshard(ctx context.Context, c ReshardClient, n int) error {
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

// setHistory replaces the record's history if its revision is still rev.
func (l Layout) setHistory(ctx context.Context, c ReshardClient, base string, rev int, h []int) error {
	key, err := l.recordKey(base)
	if err != nil {
		return err
	}
	cond := "attribute_exists(#l) AND #r = :rev"
	if rev == 0 { // a record written before revisions existed
		cond = "attribute_exists(#l) AND attribute_not_exists(#r)"
	}
	values := map[string]types.AttributeValue{
		":h":    shardList(h),
		":next": &types.AttributeValueMemberN{Value: strconv.Itoa(rev + 1)},
		":now":  &types.AttributeValueMemberS{Value: time.Now().UTC().Format(time.RFC3339)},
	}
	if rev != 0 {
		values[":rev"] = &types.AttributeValueMemberN{Value: strconv.Itoa(rev)}
	}
	_, err = c.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(l.Table),
		Key:                       key,
		UpdateExpression:          aws.String("SET #s = :h, #r = :next, #c = :now"),
		ConditionExpression:       aws.String(cond),
		ExpressionAttributeNames:  map[string]string{"#s": attrShards, "#r": attrRev, "#c": attrChanged, "#l": attrLayout},
		ExpressionAttributeValues: values,
	})
	if err != nil && !isCondFailed(err) {
		return fmt.Errorf("shard: update layout record of table %s base %q: %w", l.Table, clip(base), err)
	}
	return err
}

// Reshard is [Layout.Reshard] on the Table's layout and client.
func (t *Table[T]) Reshard(ctx context.Context, base string, n int) ([]int, error) {
	return t.l.Reshard(ctx, t.c, base, n)
}

// Shards is [Layout.Shards] on the Table's layout and client.
func (t *Table[T]) Shards(ctx context.Context, base string) ([]int, error) {
	return t.l.Shards(ctx, t.c, base)
}

// writeStrategy returns the strategy at base's newest N, writing the
// base's record first if it has none.
func (t *Table[T]) writeStrategy(ctx context.Context, base string) (Strategy, error) {
	h, err := t.l.recorded(ctx, t.c, base, t.l.historyTTL())
	if err != nil {
		return nil, err
	}
	return withN(t.l.Strategy, h[len(h)-1])
}

// candidates returns the physical keys that may hold (base, id), newest
// N's first, each once; consistent reads the record instead of a cached
// history.
func (t *Table[T]) candidates(ctx context.Context, base, id string, consistent bool) ([]string, error) {
	ttl := t.l.historyTTL()
	if consistent {
		ttl = 0
	}
	h, err := t.l.history(ctx, t.c, base, ttl)
	if err != nil {
		return nil, err
	}
	return t.keysOf(base, id, h)
}

func (t *Table[T]) keysOf(base, id string, h []int) ([]string, error) {
	keys := make([]string, 0, len(h))
	for i := len(h) - 1; i >= 0; i-- {
		s, err := withN(t.l.Strategy, h[i])
		if err != nil {
			return nil, err
		}
		pk, err := t.physical(base, id, s)
		if err != nil {
			return nil, err
		}
		if !slices.Contains(keys, pk) {
			keys = append(keys, pk)
		}
	}
	return keys, nil
}

// marshalFor is marshal at base's newest N: it validates item first (with
// the layout's own N, before any request), then reads or writes the
// base's record.
func (t *Table[T]) marshalFor(ctx context.Context, base string, item T, o Options) (map[string]types.AttributeValue, string, error) {
	av, id, err := t.marshal(base, item, o, t.l.Strategy)
	if err != nil {
		return nil, "", err
	}
	s, err := t.writeStrategy(ctx, base)
	if err != nil || s.N() == t.l.N() {
		return av, id, err
	}
	pk, err := t.physical(base, id, s)
	if err != nil {
		return nil, "", err
	}
	av[t.l.PartitionKey] = &types.AttributeValueMemberS{Value: pk}
	if _, err := ddbsize.CheckItem(av); err != nil { // the suffix may be longer
		return nil, "", t.itemErr(base, id, err)
	}
	return av, id, nil
}
