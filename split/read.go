package split

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynashard/dynashard/internal/avmap"
	"github.com/dynashard/dynashard/internal/backoff"
	"github.com/dynashard/dynashard/internal/batch"
	"github.com/dynashard/dynashard/internal/observe"
)

// Result is one logical item as read: Item holds the logical key and the
// attributes of the parts found (every other field of T is its zero
// value), Found and Missing name the parts asked for, in the order asked,
// that exist and that do not.
type Result[T any] struct {
	Key     Key
	Item    T
	Found   []string
	Missing []string
}

// Get reads the named parts of the item with key k, nil meaning every
// part, with one BatchGetItem across their tables (more only if DynamoDB
// returns keys unprocessed, which are retried with backoff). It fails
// with ErrNotFound when none of the parts exists; otherwise a missing
// part is listed in Result.Missing. Each part is read as its table holds
// it at the time of the read: with eventually consistent reads (the
// default) a part written a moment ago may be old or missing. A read that
// gets nothing through for 10 s (throttled every time, say) gives up with
// a *PartError naming the first part item not read. The SDK's last
// throttling error stays reachable with errors.As.
func (s *Store[T]) Get(ctx context.Context, k Key, parts []string, optFns ...func(*Options)) (r Result[T], err error) {
	ctx, call := s.start(ctx, "split.Get")
	defer func() { call.End(ctx, err) }()
	rs, err := s.getMany(ctx, call, []Key{k}, parts, optFns)
	if err != nil {
		return Result[T]{Key: k}, err
	}
	r = rs[0]
	if len(r.Found) == 0 {
		return r, fmt.Errorf("%w: split: item %v (parts %q)", ErrNotFound, k, r.Missing)
	}
	return r, nil
}

// GetMany reads the named parts (nil: every part) of the items with keys
// ks, one Result per key in the order of ks (a key given twice is read
// once and reported twice), with one BatchGetItem per 100 part items,
// sent in parallel. A key none of whose parts exists has an empty Found;
// it is no error. The value of a part with a Large attribute is then read
// through its chunk store (nothing more for a value inline in the item;
// its chunks' BatchGetItems, or its object, otherwise), one item after
// another. On a failure it returns the error and no results: a
// *PartError naming the first part item not read when the BatchGetItems
// gave up, as for Get.
func (s *Store[T]) GetMany(ctx context.Context, ks []Key, parts []string, optFns ...func(*Options)) (rs []Result[T], err error) {
	ctx, call := s.start(ctx, "split.GetMany")
	defer func() { call.End(ctx, err) }()
	return s.getMany(ctx, call, ks, parts, optFns)
}

// getMany is GetMany within the logical call c.
func (s *Store[T]) getMany(ctx context.Context, c observe.Call, ks []Key, parts []string, optFns []func(*Options)) ([]Result[T], error) {
	o, err := s.call(ctx, optFns)
	if err != nil {
		return nil, err
	}
	ps, err := s.named(parts, true)
	if err != nil {
		return nil, err
	}
	if c.Traced() {
		var k *Key
		if len(ks) == 1 {
			k = &ks[0]
		}
		describe(c, k, ps)
		c.SetInt(observe.AttrItems, len(ks))
	}
	type slot struct {
		key   int // index of the first equal key in ks
		part  int // index in ps
		found map[string]types.AttributeValue
	}
	slots := map[string]*slot{}
	first := make([]int, len(ks)) // index of the first key equal to ks[i]
	var keys []batch.Key
	ks = slices.Clone(ks) // each in the form DynamoDB returns it
	for i, k := range ks {
		if k, err = s.l.checkKey(k); err != nil {
			return nil, err
		}
		ks[i] = k
		first[i] = i
		for j, p := range ps {
			km, err := p.key(s.l, k)
			if err != nil {
				return nil, err
			}
			fp := p.fingerprint(km)
			if sl, dup := slots[fp]; dup {
				first[i] = sl.key
				continue
			}
			slots[fp] = &slot{key: i, part: j}
			keys = append(keys, batch.Key{Table: p.table, Key: km})
		}
	}
	byTable := make(map[string]*part, len(ps))
	for _, p := range ps {
		byTable[p.table] = p
	}
	items, err := s.batchGet(ctx, keys, ps, o)
	if err != nil {
		var ue *batch.UnprocessedError
		if !errors.As(err, &ue) || len(ue.Keys) == 0 {
			return nil, err
		}
		// Name the first part item not read.
		bk := ue.Keys[0]
		p := byTable[bk.Table]
		if p == nil || slots[p.fingerprint(bk.Key)] == nil {
			return nil, err // not reached: every key is a slot's
		}
		sl := slots[p.fingerprint(bk.Key)]
		return nil, &PartError{Part: p.Name, Table: p.table, Key: ks[sl.key],
			Err: fmt.Errorf("%d of %d part items not read, this one first: %w", len(ue.Keys), len(keys), err)}
	}
	for _, it := range items {
		p := byTable[it.Table]
		if p == nil {
			continue
		}
		if sl := slots[p.fingerprint(it.Item)]; sl != nil {
			sl.found = it.Item
		}
	}
	for _, sl := range slots {
		if p := ps[sl.part]; p.Large != nil && sl.found != nil {
			if sl.found, err = s.resolveLarge(ctx, p, ks[sl.key], sl.found, o); err != nil {
				return nil, err
			}
		}
	}
	found := make([][]map[string]types.AttributeValue, len(ks))
	for _, sl := range slots {
		if found[sl.key] == nil {
			found[sl.key] = make([]map[string]types.AttributeValue, len(ps))
		}
		found[sl.key][sl.part] = sl.found
	}
	out := make([]Result[T], len(ks))
	for i, k := range ks {
		r, err := s.result(k, ps, found[first[i]], o)
		if err != nil {
			return nil, err
		}
		out[i] = r
	}
	return out, nil
}

// batchGet reads keys with internal/batch's Get (split into requests of
// 100 keys, unprocessed keys retried with backoff). When it gives up on
// throttling (batch.ErrStalled: batch.DefaultStallTimeout without
// progress), the error wraps the last throttling error too, so that the
// SDK's error stays reachable with errors.As.
func (s *Store[T]) batchGet(ctx context.Context, keys []batch.Key, ps []*part, o Options) ([]batch.Item, error) {
	keyAttrs := make(map[string][]string, len(ps))
	for _, p := range ps {
		keyAttrs[p.table] = p.keys
	}
	c := &throttleNote{c: s.c}
	items, _, err := batch.Get(ctx, c, keys, func(bo *batch.Options) {
		bo.ConsistentRead = o.ConsistentRead
		bo.KeyAttributes = keyAttrs
	})
	if err != nil {
		var ie *batch.InputError
		if errors.As(err, &ie) {
			return nil, fmt.Errorf("%w: split: %w", ErrInvalid, err)
		}
		if last := c.lastErr(); last != nil && !errors.Is(err, last) {
			return nil, fmt.Errorf("split: BatchGetItem: %w (the last throttling error: %w)", err, last)
		}
		return nil, fmt.Errorf("split: BatchGetItem: %w", err)
	}
	return items, nil
}

// throttleNote is the client of one call's BatchGetItems: it keeps the
// last throttling error, which internal/batch retries and does not report
// when it gives up for want of progress.
type throttleNote struct {
	c    batch.GetAPI
	mu   sync.Mutex
	last error
}

func (n *throttleNote) BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error) {
	out, err := n.c.BatchGetItem(ctx, in, optFns...)
	if backoff.IsThrottle(err) {
		n.mu.Lock()
		n.last = err
		n.mu.Unlock()
	}
	return out, err
}

func (n *throttleNote) lastErr() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.last
}

// result assembles the Result of key k from the items found for each part
// of ps (nil: missing).
func (s *Store[T]) result(k Key, ps []*part, found []map[string]types.AttributeValue, o Options) (Result[T], error) {
	r := Result[T]{Key: k}
	av := s.logicalKey(k)
	for j, p := range ps {
		if found == nil || found[j] == nil {
			r.Missing = append(r.Missing, p.Name)
			continue
		}
		r.Found = append(r.Found, p.Name)
		p.copyAttrs(av, found[j])
	}
	if err := s.decode(av, &r.Item, o); err != nil {
		return r, err
	}
	return r, nil
}

// logicalKey returns the logical key attributes of k.
func (s *Store[T]) logicalKey(k Key) map[string]types.AttributeValue {
	av := map[string]types.AttributeValue{s.l.PartitionKey: value(k.PK, s.l.PartitionKeyType)}
	if s.l.SortKey != "" {
		av[s.l.SortKey] = value(k.SK, s.l.SortKeyType)
	}
	return av
}

// copyAttrs copies the part's attributes (and version) from src to dst.
func (p *part) copyAttrs(dst, src map[string]types.AttributeValue) {
	for _, a := range p.Attributes {
		if v, ok := src[a]; ok {
			dst[a] = v
		}
	}
	if v, ok := src[p.Version]; ok && p.Version != "" {
		dst[p.Version] = v
	}
}

func (s *Store[T]) decode(av map[string]types.AttributeValue, v *T, o Options) error {
	dec := o.Decoder
	if dec == nil {
		dec = func(*attributevalue.DecoderOptions) {}
	}
	if err := avmap.Unmarshal(av, v, dec); err != nil {
		return fmt.Errorf("split: unmarshal into %T: %w", *v, err)
	}
	return nil
}
