package repo

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynashard/dynashard/internal/avmap"
	"github.com/dynashard/dynashard/internal/errs"
	"github.com/dynashard/dynashard/internal/observe"
	"github.com/dynashard/dynashard/scatter"
	"github.com/dynashard/dynashard/shard"
)

// Errors, matched with errors.Is. The first three are the families every
// dynashard package shares: errors.Is(err, repo.ErrNotFound) and
// errors.Is(err, shard.ErrNotFound) are the same test.
var (
	// ErrInvalid is matched by every error about input rejected before any
	// request: a nil ctx, an empty base or id, an item too large or lacking
	// its id, a bad value, a version that cannot be advanced, a limit below
	// 1, a bad cursor, or an unusable configuration at New. The error names
	// it.
	ErrInvalid = errs.Invalid
	// ErrNotFound reports that no item has the (base, id).
	ErrNotFound = errs.NotFound
	// ErrConflict reports a write whose condition failed: with optimistic
	// locking, the stored version is not the one the value carries
	// (someone else wrote the item first, or it already exists, for
	// version 0, or no longer does); from Create, an item with the id
	// exists. Without a LargeField the error also wraps the SDK's
	// *types.ConditionalCheckFailedException, for errors.As.
	ErrConflict = errs.Conflict
	// ErrInvalidCursor is matched by a List cursor that this Repo did not
	// issue for this base, or that was altered. It matches ErrInvalid.
	ErrInvalidCursor = scatter.ErrInvalidCursor
)

// Client is the part of *dynamodb.Client a Repo uses: shard.Client for
// point reads and writes, scatter.Client for listing and counting.
type Client interface {
	shard.Client
	scatter.Client
}

var _ Client = (*dynamodb.Client)(nil)

// Options configures a Repo through the optFns of New, and each call
// through optFns applied to a copy of the Repo's Options for that call
// only, as the AWS SDK does. The zero value of every field is its
// documented default.
//
// Reads (Get, List, All, Count) take optFns per call, where only
// ConsistentRead, SkipLarge and MaxConcurrency take effect; writes (Create,
// Put, Delete) take none. The other fields shape the Repo itself
// (versions, cache, large field, cursor key, conversion of T) and keep the
// values New was given, whatever a call's optFns set.
type Options struct {
	// Version names a numeric attribute used for optimistic locking. When
	// set, Put writes only if the stored version equals the value's and
	// stores version+1; otherwise it fails with ErrConflict. A value whose
	// version is 0 (or absent) is written only if the item does not exist
	// or has no version yet: an item written without one (bulk-loaded,
	// say) reads as version 0, and a Put of that value versions it at 1.
	// Create writes only if the item does not exist. A value whose
	// version is math.MaxInt64 cannot be advanced: Put refuses it with
	// ErrInvalid before any request (retrying, as after ErrConflict, would
	// not help). It must not be a key attribute. Default "": last write
	// wins.
	Version string

	// ConsistentRead makes Get (when it does not go through the cache),
	// List, All and Count read strongly consistently, as the ConsistentRead
	// fields of packages shard, scatter and chunk do: they then see every
	// write that succeeded before they began, at twice the read cost. The
	// cache is always filled by strongly consistent reads, whatever this
	// says. Per call too. Default false: eventually consistent reads, which
	// may miss a write of the last second or so.
	ConsistentRead bool

	// CacheEntries, when positive, turns on a read-through cache for Get,
	// one per Repo, holding at most that many items and CacheBytes bytes
	// (zero or less: 64 MiB) for CacheTTL (zero or less: 1 minute). It is
	// filled by strongly consistent reads; writes through this Repo
	// invalidate their item, writes by anyone else (another Repo, another
	// process) are seen after the TTL. Each Get returns its own copy of the
	// value. Default 0: no cache.
	CacheEntries int
	CacheBytes   int64
	CacheTTL     time.Duration

	// Large stores one attribute through a chunk store so values of any
	// size fit: see LargeField. New keeps a copy. Default nil: items must
	// fit DynamoDB's 400 KB item limit.
	Large *LargeField

	// MaxConcurrency bounds the parallel Queries of List, All and Count
	// (zero: min(N, scatter.DefaultMaxConcurrency)) and the large values
	// one List reads at once (zero: 8). Negative is invalid. Per call too.
	MaxConcurrency int

	// CursorKey signs List cursors with HMAC-SHA256; set it when cursors
	// travel through clients you do not trust. It must be at least 16
	// bytes (32 random bytes recommended); New refuses a shorter one with
	// ErrInvalid. Default (nil or empty): unsigned.
	CursorKey []byte

	// SkipLarge makes List and All leave the LargeField attribute at its
	// zero value instead of reading it, so a page of items with large
	// values costs only the Queries: for listings that show everything but
	// the large value. Usually set per call. Default false: whole items.
	SkipLarge bool

	// Encoder and Decoder adjust attributevalue's conversion of T (e.g.
	// TagKey "json"). Default: attributevalue's defaults.
	Encoder func(*attributevalue.EncoderOptions)
	Decoder func(*attributevalue.DecoderOptions)
}

// apply returns a copy of o with optFns applied (nil ones skipped). The
// copy shares no slice or LargeField with o, so an option function
// changing them in place leaves o alone.
func (o Options) apply(optFns []func(*Options)) Options {
	o.CursorKey = slices.Clone(o.CursorKey)
	if o.Large != nil {
		l := *o.Large
		o.Large = &l
	}
	for _, f := range optFns {
		if f != nil {
			f(&o)
		}
	}
	return o
}

// scatter sets the fields of a scatter call that a Repo call controls.
func (o Options) scatter(so *scatter.Options) {
	so.ConsistentRead, so.MaxConcurrency = o.ConsistentRead, o.MaxConcurrency
}

// Defaults of Options.
const (
	defaultCacheBytes = 64 << 20
	defaultCacheTTL   = time.Minute
	// defaultResolve bounds the large values one List reads at once.
	defaultResolve = 8
)

// Repo is a typed repository of T over one sharded table, described by a
// shard.Layout: its partition key holds physical keys (base.N with the
// default codec), its sort key (type S) the item's id. Create it with New; the zero Repo is not
// usable: its calls that read or write, like those of a nil *Repo, fail
// with ErrInvalid. A Repo is safe for concurrent use.
type Repo[T any] struct {
	c      Client
	obs    *observe.Scope // the client's tracer and meter; nil without providers
	layout shard.Layout
	table  *shard.Table[T]
	sc     *scatter.Scatter
	opts   Options
	cache  *cache[map[string]types.AttributeValue] // stored items, decoded per Get
}

// New returns a Repo over the table l describes, with the Options optFns
// set. It sends no request. It fails with an error matching ErrInvalid,
// naming the input, for a nil client (also a typed nil such as
// (*dynamodb.Client)(nil)), an invalid Layout, a Layout with an Index (a
// Repo writes) or without a sort key of type S (the id), a Random strategy
// (Get derives an item's suffix from its id), a Version that is a key
// attribute, a LargeField without a store or with a key or version
// attribute, a CursorKey of 1 to 15 bytes, or a negative MaxConcurrency.
func New[T any](c Client, l shard.Layout, optFns ...func(*Options)) (*Repo[T], error) {
	if errs.IsNil(c) {
		return nil, fmt.Errorf("%w: repo: New: nil client %T", ErrInvalid, c)
	}
	o := Options{}.apply(optFns)
	t, err := shard.NewTable[T](c, l, func(so *shard.Options) { so.Encoder, so.Decoder = o.Encoder, o.Decoder })
	if err != nil {
		return nil, fmt.Errorf("repo: New: %w", err)
	}
	// Key checks the strategy before the id, so the empty id asks whether
	// the strategy is calculated without calling a user's Pick.
	if _, err := t.Key("", ""); errors.Is(err, shard.ErrNotCalculated) {
		return nil, fmt.Errorf("repo: New: Get finds an item by its id and needs a calculated strategy: %w", err)
	}
	if o.Version != "" && (o.Version == l.PartitionKey || o.Version == l.SortKey) {
		return nil, fmt.Errorf("%w: repo: table %s: version attribute %q is a key attribute", ErrInvalid, l.Table, o.Version)
	}
	if o.Large != nil {
		if err := o.Large.check(l, o.Version); err != nil {
			return nil, err
		}
	}
	sc, err := scatter.New(c, l, func(so *scatter.Options) {
		so.MaxConcurrency, so.CursorKey, so.ConsistentRead = o.MaxConcurrency, o.CursorKey, o.ConsistentRead
	})
	if err != nil {
		return nil, fmt.Errorf("repo: New: %w", err)
	}
	r := &Repo[T]{c: c, obs: observe.For(c), layout: l, table: t, sc: sc, opts: o}
	if o.CacheEntries > 0 {
		if o.CacheBytes <= 0 {
			o.CacheBytes = defaultCacheBytes
		}
		if o.CacheTTL <= 0 {
			o.CacheTTL = defaultCacheTTL
		}
		r.cache = newCache[map[string]types.AttributeValue](o.CacheEntries, o.CacheBytes, o.CacheTTL)
		if r.obs != nil {
			r.cache.lookups = r.obs.Cache
		}
	}
	return r, nil
}

// Layout returns the layout of the Repo's table: the zero Layout for a
// zero or nil Repo.
func (r *Repo[T]) Layout() shard.Layout {
	if r == nil {
		return shard.Layout{}
	}
	return r.layout
}

// CacheStats reports the read-through cache's counters; all zero when the
// cache is off.
func (r *Repo[T]) CacheStats() CacheStats {
	if r == nil || r.cache == nil {
		return CacheStats{}
	}
	return r.cache.stats()
}

// attrID is the span attribute of an item's id.
const attrID = "dynashard.id"

// start opens the logical call op (its span "dynashard.repo.<Op>") under
// ctx, with the table and base as span attributes when traced. A call on
// a Repo not made by New still counts (it fails its checks inside the
// call); a nil ctx opens nothing, having nothing to carry it.
func (r *Repo[T]) start(ctx context.Context, op, base string) (context.Context, observe.Call) {
	if ctx == nil {
		return ctx, observe.Call{}
	}
	var obs *observe.Scope
	if r != nil {
		obs = r.obs
	}
	ctx, call := obs.Start(ctx, op)
	if call.Traced() {
		if r != nil {
			call.SetString(observe.AttrTable, r.layout.Table)
		}
		call.SetString(observe.AttrBase, base)
	}
	return ctx, call
}

// call checks what every call takes and returns the call's Options: a
// Repo not made by New and a nil ctx are refused here, before they reach
// a goroutine of ours or the SDK, where they would panic.
func (r *Repo[T]) call(ctx context.Context, optFns []func(*Options)) (Options, error) {
	if r == nil || r.table == nil {
		return Options{}, fmt.Errorf("%w: repo: Repo not made by New (zero value or nil)", ErrInvalid)
	}
	if ctx == nil {
		return Options{}, r.invalid("nil ctx (use context.Background() or context.TODO())")
	}
	if len(optFns) == 0 {
		return r.opts, nil
	}
	return r.opts.apply(optFns), nil
}

// invalid reports input rejected before any request, naming the table;
// format may wrap a cause with %w.
func (r *Repo[T]) invalid(format string, args ...any) error {
	return fmt.Errorf("%w: repo: table %s: "+format, append([]any{ErrInvalid, r.layout.Table}, args...)...)
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
	if err := avmap.Unmarshal(av, &v, dec); err != nil {
		return v, fmt.Errorf("repo: table %s: unmarshal into %T: %w", r.layout.Table, v, err)
	}
	return v, nil
}

func (r *Repo[T]) cacheKey(base, id string) string {
	return strconv.Itoa(len(base)) + ":" + base + id
}
