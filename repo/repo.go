package repo

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"iter"
	"math"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"golang.org/x/sync/errgroup"

	"github.com/dynashard/dynashard/chunk"
	"github.com/dynashard/dynashard/internal/ddbsize"
	"github.com/dynashard/dynashard/scatter"
	"github.com/dynashard/dynashard/shard"
)

// Errors callers branch on.
var (
	// ErrNotFound: no item has the (base, id).
	ErrNotFound = shard.ErrNotFound
	// ErrConflict: with optimistic locking, the stored version is not the
	// one the value carries: someone else wrote the item first, or it
	// already exists (version 0) or no longer does.
	ErrConflict = errors.New("repo: version conflict")
	// ErrBadCursor: a List cursor that this repository did not issue for
	// this base, or that was altered.
	ErrBadCursor = scatter.ErrBadCursor
	// ErrInvalid: input rejected before any request (a nil ctx, an empty
	// base or id, an item too large or lacking its id, a bad value, a
	// version that cannot be advanced) or an unusable configuration at New.
	// The error names it.
	ErrInvalid = errors.New("repo: invalid input")
)

// invalidError marks a lower layer's validation error as ErrInvalid while
// keeping that error reachable.
type invalidError struct{ err error }

func (e invalidError) Error() string        { return e.err.Error() }
func (e invalidError) Unwrap() error        { return e.err }
func (e invalidError) Is(target error) bool { return target == ErrInvalid }

func classify(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, shard.ErrInvalidItem) || errors.Is(err, scatter.ErrInvalidQuery) ||
		errors.Is(err, chunk.ErrInvalidKey) || errors.Is(err, chunk.ErrTooLarge) ||
		errors.Is(err, chunk.ErrReserved) {
		return invalidError{err}
	}
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) || errors.Is(err, chunk.ErrConflict) {
		return fmt.Errorf("%w: %w", ErrConflict, err)
	}
	return err
}

// Client is the part of *dynamodb.Client a Repo uses.
type Client interface {
	shard.Client
	scatter.Client
}

// Options configures a Repo. The zero value of each field is its default.
type Options struct {
	// Strategy spreads a base over physical keys. It must be calculated
	// (derive the suffix from the id) so Get can find an item with one
	// request. Default shard.Hash(DefaultShards).
	Strategy shard.Strategy
	// Codec joins base and suffix. Default shard.Codec{} ("base.7").
	Codec shard.Codec

	// Version names a numeric attribute used for optimistic locking. When
	// set, Put writes only if the stored version equals the value's (0 or
	// absent: only if the item does not exist yet) and stores version+1;
	// otherwise it fails with ErrConflict. A value whose version is
	// math.MaxInt64 cannot be advanced: Put refuses it with ErrInvalid
	// before any request (retrying, as after ErrConflict, would not help).
	// Default "": last write wins.
	Version string

	// ConsistentRead makes Get (when it does not go through the cache),
	// List, All and Count read strongly consistently, as the ConsistentRead
	// fields of packages scatter and shard do: they then see every write
	// that succeeded before they began, at twice the read cost. The cache
	// is always filled by strongly consistent reads, whatever this says.
	// Default false: eventually consistent reads, which may miss a write of
	// the last second or so.
	ConsistentRead bool

	// CacheEntries, when positive, turns on a read-through cache for Get,
	// one per Repo, holding at most that many items and CacheBytes bytes
	// (default 64 MiB) for CacheTTL (default 1 minute). It is filled by
	// strongly consistent reads; writes through this Repo invalidate their
	// item, writes by anyone else (another Repo, another process) are seen
	// after the TTL. Each Get returns its own copy of the value.
	CacheEntries int
	CacheBytes   int64
	CacheTTL     time.Duration

	// Large stores one attribute through a chunk store so values of any
	// size fit: see LargeField. Default nil: items must fit DynamoDB's
	// 400 KB item limit.
	Large *LargeField

	// MaxConcurrency bounds the parallel Queries of List, All and Count
	// (default min(N, scatter.DefaultMaxConcurrency)) and the large values
	// one List reads at once (default 8).
	MaxConcurrency int
	// CursorKey signs List cursors with HMAC-SHA256; set it when cursors
	// travel through clients you do not trust. It must be at least 16
	// bytes (32 random bytes recommended); New refuses a shorter one with
	// ErrInvalid. Default (nil or empty): unsigned.
	CursorKey []byte

	// Encoder and Decoder adjust attributevalue's conversion of T (e.g.
	// TagKey "json").
	Encoder func(*attributevalue.EncoderOptions)
	Decoder func(*attributevalue.DecoderOptions)
}

// DefaultShards is the shard count of the default strategy.
const DefaultShards = 16

// minCursorKey is the shortest Options.CursorKey New accepts.
const minCursorKey = 16

// Repo is a typed repository of T over one sharded table whose partition
// key attribute pk holds physical keys (base.N) and whose sort key sk (type
// S) holds the item's id. Create it with New. Safe for concurrent use.
type Repo[T any] struct {
	c     Client
	table *shard.Table[T]
	sc    *scatter.Scatter
	name  string
	pk    string
	sk    string
	opts  Options
	cache *cache[map[string]types.AttributeValue] // stored items, decoded per Get
}

// New returns a Repo over table. It fails with ErrInvalid for an unusable
// configuration: a nil client, empty names, a Random strategy, a Large
// field without a store, or a CursorKey shorter than 16 bytes.
func New[T any](c Client, table, pk, sk string, optFns ...func(*Options)) (*Repo[T], error) {
	var o Options
	for _, f := range optFns {
		f(&o)
	}
	if o.Strategy == nil {
		o.Strategy = shard.Hash(DefaultShards)
	}
	if o.CacheBytes <= 0 {
		o.CacheBytes = 64 << 20
	}
	if o.CacheTTL <= 0 {
		o.CacheTTL = time.Minute
	}
	if n := len(o.CursorKey); n > 0 && n < minCursorKey {
		return nil, invalidError{fmt.Errorf("repo: table %s: CursorKey of %d bytes, want at least %d (32 random bytes recommended)", table, n, minCursorKey)}
	}
	if o.Version != "" && (o.Version == pk || o.Version == sk) {
		return nil, invalidError{fmt.Errorf("repo: table %s: version attribute %q is a key attribute", table, o.Version)}
	}
	if l := o.Large; l != nil {
		if err := l.check(table, pk, sk, o.Version); err != nil {
			return nil, invalidError{err}
		}
	}
	t, err := shard.NewTable[T](c, shard.Layout{Table: table, PartitionKey: pk, SortKey: sk, Strategy: o.Strategy, Codec: o.Codec}, func(so *shard.Options) {
		so.Encoder, so.Decoder = o.Encoder, o.Decoder
	})
	if err != nil {
		return nil, invalidError{err}
	}
	// A Random strategy would make Get impossible; catch it here, not at
	// the first read.
	if _, err := t.Key("probe", "probe"); errors.Is(err, shard.ErrNotCalculated) {
		return nil, invalidError{fmt.Errorf("repo: table %s: %w", table, err)}
	}
	r := &Repo[T]{
		c: c, table: t, name: table, pk: pk, sk: sk, opts: o,
		sc: scatter.New(c, func(so *scatter.Options) {
			so.MaxConcurrency, so.CursorKey = o.MaxConcurrency, o.CursorKey
		}),
	}
	if o.CacheEntries > 0 {
		r.cache = newCache[map[string]types.AttributeValue](o.CacheEntries, o.CacheBytes, o.CacheTTL)
	}
	return r, nil
}

func (r *Repo[T]) encoder() func(*attributevalue.EncoderOptions) {
	if r.opts.Encoder != nil {
		return r.opts.Encoder
	}
	return func(*attributevalue.EncoderOptions) {}
}

func (r *Repo[T]) decode(av map[string]types.AttributeValue) (T, error) {
	var v T
	dec := r.opts.Decoder
	if dec == nil {
		dec = func(*attributevalue.DecoderOptions) {}
	}
	if err := attributevalue.UnmarshalMapWithOptions(av, &v, dec); err != nil {
		return v, fmt.Errorf("repo: table %s: unmarshal into %T: %w", r.name, v, err)
	}
	return v, nil
}

// checkCtx refuses a nil ctx before it reaches a goroutine of ours or the
// SDK, where it would panic.
func (r *Repo[T]) checkCtx(ctx context.Context) error {
	if ctx == nil {
		return invalidError{fmt.Errorf("repo: table %s: nil ctx", r.name)}
	}
	return nil
}

func (r *Repo[T]) cacheKey(base, id string) string {
	return strconv.Itoa(len(base)) + ":" + base + id
}

// Create stores v under base only if no item has its id yet; otherwise it
// fails with ErrConflict. With optimistic locking it is Put of a value
// whose version is 0.
func (r *Repo[T]) Create(ctx context.Context, base string, v T) (T, error) {
	return r.put(ctx, base, v, true)
}

// Put stores v under base and returns it as stored: with optimistic
// locking, its version attribute is the new version. The id is v's sort-key
// attribute.
func (r *Repo[T]) Put(ctx context.Context, base string, v T) (T, error) {
	return r.put(ctx, base, v, false)
}

func (r *Repo[T]) put(ctx context.Context, base string, v T, create bool) (T, error) {
	if err := r.checkCtx(ctx); err != nil {
		return v, err
	}
	av, err := attributevalue.MarshalMapWithOptions(v, r.encoder())
	if err != nil {
		return v, invalidError{fmt.Errorf("repo: table %s: marshal %T: %w", r.name, v, err)}
	}
	id, _ := av[r.sk].(*types.AttributeValueMemberS)
	if id == nil {
		return v, invalidError{fmt.Errorf("repo: table %s: %T has no string attribute %q (the id)", r.name, v, r.sk)}
	}
	var cond expression.ConditionBuilder
	if create {
		cond = expression.AttributeNotExists(expression.Name(r.pk))
	}
	if r.opts.Version != "" {
		cur, err := versionOf(av, r.opts.Version)
		if err != nil {
			return v, invalidError{fmt.Errorf("repo: table %s id %q: %w", r.name, id.Value, err)}
		}
		switch {
		case cur == math.MaxInt64:
			return v, invalidError{fmt.Errorf("repo: table %s id %q: version attribute %q = %d cannot be advanced", r.name, id.Value, r.opts.Version, cur)}
		case cur == 0:
			cond = expression.AttributeNotExists(expression.Name(r.pk))
		case create:
			return v, invalidError{fmt.Errorf("repo: table %s id %q: Create of a value with version %d, want 0", r.name, id.Value, cur)}
		default:
			cond = expression.Name(r.opts.Version).Equal(expression.Value(cur))
		}
		av[r.opts.Version] = &types.AttributeValueMemberN{Value: strconv.FormatInt(cur+1, 10)}
		if v, err = r.decode(av); err != nil {
			return v, err
		}
	}
	if r.cache != nil {
		defer r.cache.invalidate(r.cacheKey(base, id.Value))
	}
	if r.opts.Large != nil {
		return v, classify(r.putLarge(ctx, base, id.Value, av, cond))
	}
	return v, classify(r.table.Put(ctx, base, v, func(o *shard.Options) { o.Condition = cond }))
}

func versionOf(av map[string]types.AttributeValue, name string) (int64, error) {
	switch n := av[name].(type) {
	case nil, *types.AttributeValueMemberNULL:
		return 0, nil
	case *types.AttributeValueMemberN:
		v, err := strconv.ParseInt(n.Value, 10, 64)
		if err != nil || v < 0 {
			return 0, fmt.Errorf("version attribute %q = %q, want a whole number >= 0", name, n.Value)
		}
		return v, nil
	default:
		return 0, fmt.Errorf("version attribute %q is %T, want a number", name, n)
	}
}

// Get returns the item with id under base: one GetItem on the computed
// physical key (plus the chunk reads of a large attribute), or a cache hit.
// The value is the caller's own, also on a cache hit: changing it changes
// nothing stored.
func (r *Repo[T]) Get(ctx context.Context, base, id string) (T, error) {
	var zero T
	if err := r.checkCtx(ctx); err != nil {
		return zero, err
	}
	pk, err := r.table.Key(base, id)
	if err != nil {
		return zero, classify(err)
	}
	if r.cache == nil {
		av, err := r.read(ctx, pk, id, r.opts.ConsistentRead)
		if err != nil {
			return zero, err
		}
		return r.decode(av)
	}
	av, err := r.cache.get(ctx, r.cacheKey(base, id), func(ctx context.Context) (map[string]types.AttributeValue, int64, error) {
		// Only a strongly consistent read may fill the cache: an eventually
		// consistent one just after a write through this Repo may return
		// the previous value, which would then be served for the TTL.
		av, err := r.read(ctx, pk, id, true)
		if err != nil {
			return nil, 0, err
		}
		// Weigh the entry by its stored size, the closest cheap measure of
		// the memory it holds.
		size, err := ddbsize.ItemSize(av)
		return av, int64(size), err
	})
	if err != nil {
		return zero, err
	}
	// The stored item is shared by every Get: decode a copy, so that
	// neither T's unmarshaller nor the caller can reach it.
	return r.decode(cloneItem(av))
}

// read returns the stored item with id under physical key pk, with its
// large attribute (if any) in place.
func (r *Repo[T]) read(ctx context.Context, pk, id string, consistent bool) (map[string]types.AttributeValue, error) {
	key := map[string]types.AttributeValue{
		r.pk: &types.AttributeValueMemberS{Value: pk},
		r.sk: &types.AttributeValueMemberS{Value: id},
	}
	out, err := r.c.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(r.name), Key: key, ConsistentRead: aws.Bool(consistent),
	})
	if err != nil {
		return nil, fmt.Errorf("repo: GetItem table %s key %q id %q: %w", r.name, pk, id, err)
	}
	if out.Item == nil {
		return nil, fmt.Errorf("%w: table %s key %q id %q", ErrNotFound, r.name, pk, id)
	}
	if r.opts.Large == nil {
		return out.Item, nil
	}
	return r.readLarge(ctx, pk, id, out.Item)
}

// Delete removes the item with id under base. Deleting an absent item is
// not an error.
func (r *Repo[T]) Delete(ctx context.Context, base, id string) error {
	if err := r.checkCtx(ctx); err != nil {
		return err
	}
	if r.cache != nil {
		defer r.cache.invalidate(r.cacheKey(base, id))
	}
	if r.opts.Large != nil {
		return classify(r.deleteLarge(ctx, base, id))
	}
	return classify(r.table.Delete(ctx, base, id))
}

func (r *Repo[T]) query(base string) scatter.Query {
	return scatter.Query{
		Table: r.name, PartitionKey: r.pk, SortKey: r.sk,
		Base: base, Strategy: r.opts.Strategy, Codec: r.opts.Codec,
		ConsistentRead: r.opts.ConsistentRead,
	}
}

// ListOptions are per-call options of List and All. The zero value reads
// whole items.
type ListOptions struct {
	// SkipLarge leaves the LargeField attribute at its zero value instead
	// of reading it, so a page of items with large values costs only the
	// Queries: for listings that show everything but the large value.
	SkipLarge bool
}

// List returns up to limit items of base in id order, starting after
// cursor ("" for the first page), and the cursor of the next page ("" when
// there is none). Cursors are bound to this table and base. Large values
// of the page's items are read in parallel; items are decoded on the
// caller's goroutine.
func (r *Repo[T]) List(ctx context.Context, base string, limit int, cursor string, optFns ...func(*ListOptions)) ([]T, string, error) {
	if err := r.checkCtx(ctx); err != nil {
		return nil, "", err
	}
	if limit < 1 {
		return nil, "", invalidError{fmt.Errorf("repo: table %s: limit %d, want >= 1", r.name, limit)}
	}
	lo := listOpts(optFns)
	items, next, err := r.sc.Page(ctx, r.query(base), limit, scatter.Cursor(cursor))
	if err != nil {
		return nil, "", classify(err)
	}
	stored := make([]map[string]types.AttributeValue, len(items))
	for i, it := range items {
		stored[i] = it.Attrs
	}
	if r.opts.Large != nil && !lo.SkipLarge {
		if err := r.resolveAll(ctx, base, stored); err != nil {
			return nil, "", err
		}
	}
	out := make([]T, len(stored))
	for i, av := range stored {
		if out[i], err = r.decode(av); err != nil {
			return nil, "", err
		}
	}
	return out, string(next), nil
}

// resolveAll reads the large values of listed items in parallel, replacing
// each item with its completed form. A panic on one of its goroutines (in
// a Client) is raised again on the caller's.
func (r *Repo[T]) resolveAll(ctx context.Context, base string, items []map[string]types.AttributeValue) error {
	var panicked atomic.Pointer[panicError]
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(r.resolveConcurrency())
	for i, it := range items {
		g.Go(func() error {
			err := catch(func() (err error) {
				items[i], err = r.resolveLarge(gctx, base, it)
				return err
			})
			if p, ok := err.(*panicError); ok {
				panicked.CompareAndSwap(nil, p)
			}
			return err
		})
	}
	err := g.Wait()
	if p := panicked.Load(); p != nil {
		panic(p)
	}
	return err
}

func listOpts(optFns []func(*ListOptions)) ListOptions {
	var lo ListOptions
	for _, f := range optFns {
		f(&lo)
	}
	return lo
}

// resolveConcurrency bounds how many items' large values List reads at
// once; each chunked value is BatchGetItem requests of its own.
func (r *Repo[T]) resolveConcurrency() int {
	if r.opts.MaxConcurrency > 0 {
		return r.opts.MaxConcurrency
	}
	return 8
}

// All yields every item of base in id order. Breaking out of the loop
// stops the reads.
func (r *Repo[T]) All(ctx context.Context, base string, optFns ...func(*ListOptions)) iter.Seq2[T, error] {
	lo := listOpts(optFns)
	return func(yield func(T, error) bool) {
		if err := r.checkCtx(ctx); err != nil {
			var zero T
			yield(zero, err)
			return
		}
		for it, err := range r.sc.All(ctx, r.query(base)) {
			var v T
			if err == nil {
				v, err = r.fromStored(ctx, base, it.Attrs, lo)
			}
			if !yield(v, classify(err)) || err != nil {
				return
			}
		}
	}
}

// Count returns the number of items under base, counted by DynamoDB
// without transferring them.
func (r *Repo[T]) Count(ctx context.Context, base string) (int64, error) {
	if err := r.checkCtx(ctx); err != nil {
		return 0, err
	}
	n, err := r.sc.Count(ctx, r.query(base))
	return n, classify(err)
}

// CacheStats reports the read-through cache's counters; all zero when the
// cache is off.
func (r *Repo[T]) CacheStats() CacheStats {
	if r.cache == nil {
		return CacheStats{}
	}
	return r.cache.stats()
}

// fromStored turns a listed item into T, reading its large attribute's
// chunks if it has any.
func (r *Repo[T]) fromStored(ctx context.Context, base string, av map[string]types.AttributeValue, lo ListOptions) (T, error) {
	if r.opts.Large != nil && !lo.SkipLarge {
		var err error
		if av, err = r.resolveLarge(ctx, base, av); err != nil {
			var zero T
			return zero, err
		}
	}
	return r.decode(av)
}

// cloneItem returns a deep copy of item: no slice, map or pointer of the
// copy is shared with item.
func cloneItem(item map[string]types.AttributeValue) map[string]types.AttributeValue {
	if item == nil {
		return nil
	}
	out := make(map[string]types.AttributeValue, len(item))
	for k, v := range item {
		out[k] = cloneValue(v)
	}
	return out
}

func cloneValue(v types.AttributeValue) types.AttributeValue {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		c := *v
		return &c
	case *types.AttributeValueMemberN:
		c := *v
		return &c
	case *types.AttributeValueMemberBOOL:
		c := *v
		return &c
	case *types.AttributeValueMemberNULL:
		c := *v
		return &c
	case *types.AttributeValueMemberB:
		return &types.AttributeValueMemberB{Value: bytes.Clone(v.Value)}
	case *types.AttributeValueMemberSS:
		return &types.AttributeValueMemberSS{Value: slices.Clone(v.Value)}
	case *types.AttributeValueMemberNS:
		return &types.AttributeValueMemberNS{Value: slices.Clone(v.Value)}
	case *types.AttributeValueMemberBS:
		var bs [][]byte
		if v.Value != nil {
			bs = make([][]byte, len(v.Value))
			for i, b := range v.Value {
				bs[i] = bytes.Clone(b)
			}
		}
		return &types.AttributeValueMemberBS{Value: bs}
	case *types.AttributeValueMemberL:
		var l []types.AttributeValue
		if v.Value != nil {
			l = make([]types.AttributeValue, len(v.Value))
			for i, e := range v.Value {
				l[i] = cloneValue(e)
			}
		}
		return &types.AttributeValueMemberL{Value: l}
	case *types.AttributeValueMemberM:
		return &types.AttributeValueMemberM{Value: cloneItem(v.Value)}
	}
	return v // nil, or a member type this SDK version does not know
}
