package shard

import (
	"context"
	"errors"
	"maps"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynashard/dynashard/internal/attempts"
	"github.com/dynashard/dynashard/internal/backoff"
	"github.com/dynashard/dynashard/internal/ddbsize"
	"github.com/dynashard/dynashard/internal/observe"
)

// loadItem marshals item for Load, checked at every key its base's
// history gives it, and keyed at the writers' key as of now.
func (t *Table[T]) loadItem(ctx context.Context, base string, item T) (map[string]types.AttributeValue, error) {
	av, id, err := t.marshal(base, item, t.opts, t.l.Strategy)
	if err != nil {
		return nil, err
	}
	_, keys, err := t.writeTarget(ctx, base, id)
	if err != nil {
		return nil, err
	}
	for _, pk := range append(keys[1:], keys[0]) { // the writers' key last: it stays
		av[t.l.PartitionKey] = &types.AttributeValueMemberS{Value: pk}
		if _, err := ddbsize.CheckItem(av); err != nil {
			return nil, t.itemErr(base, id, err)
		}
	}
	return av, nil
}

// loadClient is what Load sends its BatchWriteItem requests through. The
// key of each item was chosen when Load read it, which may be long before
// it is sent (the buffer, the pace of its key, retries): each request
// chooses it again from a view of the base no older than HistoryTTL and
// must be done by that view's deadline, as a single write must. An item
// whose keys differ between the counts of its base's history is written
// with a transaction of its own instead (txWrite). Each request's
// attempts and leftovers are reported to the Table's Grower, if any.
type loadClient[T any] struct {
	t   *Table[T]
	ctx context.Context // the Load's, for a Reshard the Grower decides
}

func (b loadClient[T]) BatchWriteItem(ctx context.Context, in *dynamodb.BatchWriteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.BatchWriteItemOutput, error) {
	t := b.t
	send := *in
	send.RequestItems = maps.Clone(in.RequestItems)
	var (
		keep     []types.WriteRequest
		origin   = map[[2]string]types.WriteRequest{} // by (pk, id) sent: the request as the engine made it
		left     []types.WriteRequest
		deadline time.Time
	)
	for _, wr := range in.RequestItems[t.l.Table] {
		put, base, id, v, keys, err := t.rekey(ctx, wr)
		if err != nil {
			return nil, err
		}
		if len(keys) > 1 {
			if err := b.txPut(ctx, base, id, v, keys, put); err != nil {
				if !backoff.IsThrottle(err) && !errors.Is(err, ErrTooLate) {
					return nil, err
				}
				left = append(left, wr)
			}
			continue
		}
		if d := v.deadline(t.l); deadline.IsZero() || d.Before(deadline) {
			deadline = d
		}
		origin[[2]string{keys[0], id}] = wr
		keep = append(keep, types.WriteRequest{PutRequest: &types.PutRequest{Item: put}})
	}
	out := &dynamodb.BatchWriteItemOutput{UnprocessedItems: map[string][]types.WriteRequest{}}
	if len(keep) > 0 {
		send.RequestItems[t.l.Table] = keep
		fctx, cancel := context.WithDeadline(ctx, deadline)
		var a attempts.Counter
		res, err := observe.Do(fctx, t.c.BatchWriteItem, &send, append(optFns, a.Option)...)
		cancel()
		b.report(&a, err, keep, res)
		switch {
		case err != nil && ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded):
			left = append(left, in.RequestItems[t.l.Table]...) // too late: send again under a fresh view
		case err != nil:
			return nil, err
		default:
			out = res
			for _, wr := range res.UnprocessedItems[t.l.Table] {
				item := wr.PutRequest.Item
				left = append(left, origin[[2]string{keyString(item[t.l.PartitionKey]), keyString(item[t.l.SortKey])}])
			}
		}
	} else {
		delete(send.RequestItems, t.l.Table)
	}
	if out.UnprocessedItems == nil {
		out.UnprocessedItems = map[string][]types.WriteRequest{}
	}
	if len(left) > 0 {
		out.UnprocessedItems[t.l.Table] = left
	} else {
		delete(out.UnprocessedItems, t.l.Table)
	}
	return out, nil
}

// rekey returns the item of a Load write at the writers' key of a fresh
// view of its base, and the keys that view gives it.
func (t *Table[T]) rekey(ctx context.Context, wr types.WriteRequest) (map[string]types.AttributeValue, string, string, view, []string, error) {
	put := maps.Clone(wr.PutRequest.Item)
	base, _, err := t.l.Codec.Parse(keyString(put[t.l.PartitionKey]))
	if err != nil { // Load made the key: never
		return nil, "", "", view{}, nil, err
	}
	id := keyString(put[t.l.SortKey])
	v, keys, err := t.writeTarget(ctx, base, id)
	if err != nil {
		return nil, "", "", view{}, nil, err
	}
	put[t.l.PartitionKey] = &types.AttributeValueMemberS{Value: keys[0]}
	return put, base, id, v, keys, nil
}

// txPut writes one Load item with a transaction (see Table.write).
func (b loadClient[T]) txPut(ctx context.Context, base, id string, v view, keys []string, put map[string]types.AttributeValue) error {
	_, err := b.t.write(ctx, v, base, id, keys, txOp{put: put}, nil)
	return err
}

// report tells the Grower, if any, what a request's items per base saw.
func (b loadClient[T]) report(a *attempts.Counter, err error, sent []types.WriteRequest, out *dynamodb.BatchWriteItemOutput) {
	t := b.t
	if t.opts.Grower == nil {
		return
	}
	sent0, throttled := a.Counts()
	n := max(sent0, 1)
	if sent0 == 0 && backoff.IsThrottle(err) {
		throttled = 1
	}
	items := t.perBase(map[string][]types.WriteRequest{t.l.Table: sent})
	var left map[string]int
	if out != nil {
		left = t.perBase(out.UnprocessedItems)
	}
	for base, k := range items {
		t.report(b.ctx, base, k*n, k*throttled+left[base])
	}
}
