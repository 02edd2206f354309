package shard

import (
	"context"
	"errors"
	"fmt"
	"maps"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynashard/dynashard/internal/attempts"
	"github.com/dynashard/dynashard/internal/backoff"
	"github.com/dynashard/dynashard/internal/batch"
	"github.com/dynashard/dynashard/internal/ddbsize"
	"github.com/dynashard/dynashard/internal/observe"
	"github.com/dynashard/dynashard/internal/record"
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
	// marshal checked the item at this key: at it, no second check.
	checked := av[t.l.PartitionKey]
	for _, pk := range append(keys[1:], keys[0]) { // the writers' key last: it stays
		if pk == keyString(checked) {
			av[t.l.PartitionKey] = checked
			continue
		}
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
// with a transaction of its own instead (txWrite), before the others. It
// tells the batch engine what became of each item (batch.PartialError):
// written, not written (throttled), or abandoned at the fence, its
// outcome unknown. Each request's attempts and leftovers are reported to
// the Table's Grower, if any.
type loadClient[T any] struct {
	t   *Table[T]
	ctx context.Context // the Load's, for a Reshard the Grower decides
}

// loadSend is what one request of Load's batch engine became: the items
// not written, and those abandoned (with why). Every other item of the
// request was written.
type loadSend[T any] struct {
	b                    loadClient[T]
	unprocessed, unknown []types.WriteRequest // as the engine made them
	why                  error                // why unknown's items were abandoned
	txSent               bool
}

// plainPut is an item keyed for a BatchWriteItem under view v.
type plainPut struct {
	wr     types.WriteRequest // as the engine made it
	put    map[string]types.AttributeValue
	pk, id string
	v      record.View
}

func (b loadClient[T]) BatchWriteItem(ctx context.Context, in *dynamodb.BatchWriteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.BatchWriteItemOutput, error) {
	t := b.t
	for table := range in.RequestItems {
		if table != t.l.Table { // Load sends only its table's items
			return nil, fmt.Errorf("shard: load: a request for table %q, not %s", table, t.l.Table)
		}
	}
	s := &loadSend[T]{b: b}
	plain, err := s.settle(ctx, in.RequestItems[t.l.Table])
	if err == nil && s.txSent && len(plain) > 0 {
		// The transactions took time: key the others again, so that
		// their deadline counts from a view no older than HistoryTTL.
		plain, err = s.settle(ctx, wrsOf(plain))
	}
	if err == nil && len(plain) > 0 {
		err = s.batch(ctx, in, plain, optFns)
	}
	return s.result(err)
}

// settle writes the items of wrs whose keys differ between counts with
// transactions, and returns the others keyed for a BatchWriteItem. On an
// error that ends the request, every item not yet sent is unprocessed.
func (s *loadSend[T]) settle(ctx context.Context, wrs []types.WriteRequest) ([]plainPut, error) {
	var plain []plainPut
	for i, wr := range wrs {
		put, base, id, v, keys, err := s.b.t.rekey(ctx, wr)
		unsent := wrs[i:]
		switch {
		case err != nil:
		case len(keys) == 1:
			plain = append(plain, plainPut{wr: wr, put: put, pk: keys[0], id: id, v: v})
			continue
		default:
			err, unsent = s.tx(ctx, wr, base, id, v, keys, put), wrs[i+1:]
		}
		if err != nil {
			s.unprocessed = append(append(s.unprocessed, wrsOf(plain)...), unsent...)
			return nil, err
		}
	}
	return plain, nil
}

// tx writes one item with a transaction (see Table.write) and records
// its outcome. It returns an error only if the request must end.
func (s *loadSend[T]) tx(ctx context.Context, wr types.WriteRequest, base, id string, v record.View, keys []string, put map[string]types.AttributeValue) error {
	s.txSent = true
	var a attempts.Counter
	_, err := s.b.t.write(ctx, v, base, id, keys, txOp{put: put}, nil, a.Option)
	switch {
	case err == nil:
	case errors.Is(err, ErrTooLate), backoff.IsThrottle(err) && a.MaybeApplied():
		s.abandon(err, wr)
	case backoff.IsThrottle(err):
		s.unprocessed = append(s.unprocessed, wr)
	default:
		s.failed(&a, wr)
		return err
	}
	return nil
}

// batch writes plain with one BatchWriteItem, which must be done by the
// earliest deadline of their views.
func (s *loadSend[T]) batch(ctx context.Context, in *dynamodb.BatchWriteItemInput, plain []plainPut, optFns []func(*dynamodb.Options)) error {
	t := s.b.t
	items := make([]types.WriteRequest, len(plain))
	origin := make(map[[2]string]types.WriteRequest, len(plain)) // by (pk, id) sent
	dv := plain[0].v
	for i, p := range plain {
		items[i] = types.WriteRequest{PutRequest: &types.PutRequest{Item: p.put}}
		origin[[2]string{p.pk, p.id}] = p.wr
		if p.v.Deadline(t.rec.TTL).Before(dv.Deadline(t.rec.TTL)) {
			dv = p.v
		}
	}
	send := *in
	send.RequestItems = map[string][]types.WriteRequest{t.l.Table: items}
	fctx, cancel := context.WithDeadline(ctx, dv.Deadline(t.rec.TTL))
	var a attempts.Counter
	res, err := observe.Do(fctx, t.c.BatchWriteItem, &send, append(optFns, a.Option)...)
	cancel()
	s.b.report(&a, err, items, res)
	switch {
	case err == nil:
		for _, wr := range res.UnprocessedItems[t.l.Table] {
			item := wr.PutRequest.Item
			s.unprocessed = append(s.unprocessed, origin[[2]string{keyString(item[t.l.PartitionKey]), keyString(item[t.l.SortKey])}])
		}
		return nil
	case ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded):
		s.abandon(t.late(ctx, dv, err), wrsOf(plain)...) // sent again under a fresh view
		return nil
	case backoff.IsThrottle(err): // the load goes on
		s.unprocessed = append(s.unprocessed, wrsOf(plain)...)
		return err
	}
	s.failed(&a, wrsOf(plain)...)
	return err
}

// abandon records items given up on at the fence.
func (s *loadSend[T]) abandon(why error, wrs ...types.WriteRequest) {
	s.unknown = append(s.unknown, wrs...)
	s.why = why
}

// failed records the items of a request that failed: their outcome is
// unknown if an attempt may have been applied.
func (s *loadSend[T]) failed(a *attempts.Counter, wrs ...types.WriteRequest) {
	if a.MaybeApplied() {
		s.unknown = append(s.unknown, wrs...)
	} else {
		s.unprocessed = append(s.unprocessed, wrs...)
	}
}

// result is the answer to the batch engine: plain UnprocessedItems, or a
// batch.PartialError when items were abandoned or err ends the request.
func (s *loadSend[T]) result(err error) (*dynamodb.BatchWriteItemOutput, error) {
	table := s.b.t.l.Table
	if err == nil && len(s.unknown) == 0 {
		out := &dynamodb.BatchWriteItemOutput{UnprocessedItems: map[string][]types.WriteRequest{}}
		if len(s.unprocessed) > 0 {
			out.UnprocessedItems[table] = s.unprocessed
		}
		return out, nil
	}
	pe := &batch.PartialError{Abandoned: s.why, Err: err}
	if len(s.unprocessed) > 0 {
		pe.Unprocessed = map[string][]types.WriteRequest{table: s.unprocessed}
	}
	if len(s.unknown) > 0 {
		pe.Unknown = map[string][]types.WriteRequest{table: s.unknown}
	}
	return nil, pe
}

func wrsOf(plain []plainPut) []types.WriteRequest {
	wrs := make([]types.WriteRequest, len(plain))
	for i, p := range plain {
		wrs[i] = p.wr
	}
	return wrs
}

// rekey returns the item of a Load write at the writers' key of a fresh
// view of its base, and the keys that view gives it.
func (t *Table[T]) rekey(ctx context.Context, wr types.WriteRequest) (map[string]types.AttributeValue, string, string, record.View, []string, error) {
	put := maps.Clone(wr.PutRequest.Item)
	base, _, err := t.l.Codec.Parse(keyString(put[t.l.PartitionKey]))
	if err != nil { // Load made the key: never
		return nil, "", "", record.View{}, nil, err
	}
	id := keyString(put[t.l.SortKey])
	v, keys, err := t.writeTarget(ctx, base, id)
	if err != nil {
		return nil, "", "", record.View{}, nil, err
	}
	put[t.l.PartitionKey] = &types.AttributeValueMemberS{Value: keys[0]}
	return put, base, id, v, keys, nil
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
