package shard

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynashard/dynashard/internal/avmap"
	"github.com/dynashard/dynashard/internal/ddbsize"
	"github.com/dynashard/dynashard/internal/errs"
	"github.com/dynashard/dynashard/internal/observe"
	"github.com/dynashard/dynashard/internal/record"
)

// Client is the part of *dynamodb.Client a [Table] uses, Reshard and
// Rebalance included. A Layout whose key attribute names are not the
// table's is reported as a *[LayoutError] naming them only if the client
// also has DescribeTable (as *dynamodb.Client has) and the permission for
// it; through a client with just these methods it is the SDK's
// ValidationException, wrapped.
type Client interface {
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error)
	BatchWriteItem(ctx context.Context, in *dynamodb.BatchWriteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.BatchWriteItemOutput, error)
	TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, optFns ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error)
	TransactGetItems(ctx context.Context, in *dynamodb.TransactGetItemsInput, optFns ...func(*dynamodb.Options)) (*dynamodb.TransactGetItemsOutput, error)
	Query(ctx context.Context, in *dynamodb.QueryInput, optFns ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
}

var _ Client = (*dynamodb.Client)(nil)

// ItemError reports an item, or a (base, id) pair, rejected before any
// request: empty id, an item lacking its sort key, a key too long after the
// suffix, an item over 400 KB, a value DynamoDB would reject, or a value
// attributevalue cannot marshal. It matches [ErrInvalidItem] and
// [ErrInvalid], [ErrItemTooLarge] when that is the reason, and whatever Err
// matches (e.g. [ErrKeyTooLong], [ErrInvalidKey]).
type ItemError struct {
	Table string
	Base  string // the logical partition key
	ID    string // the sort key value, if known
	Err   error
}

func (e *ItemError) Error() string {
	return fmt.Sprintf("shard: invalid item (table %s, base %q, id %q): %v", e.Table, clip(e.Base), clip(e.ID), e.Err)
}

func (e *ItemError) Unwrap() error { return e.Err }

func (e *ItemError) Is(target error) bool {
	return target == ErrInvalidItem || target == ErrInvalid ||
		(target == ErrItemTooLarge && errors.Is(e.Err, ddbsize.ErrItemTooLarge))
}

// Options configures a [Table], and each call through optFns applied to a
// copy of the Table's Options, as the AWS SDK does. The zero value is the
// default: eventually consistent reads, unconditional writes,
// attributevalue's default conversion.
type Options struct {
	// ConsistentRead makes Get read with strong consistency. Default false.
	ConsistentRead bool
	// Condition, if set, is sent as the ConditionExpression of Put, Update
	// and Delete; usually set per call. A failed condition returns an
	// error matching ErrConflict that wraps the SDK's
	// *types.ConditionalCheckFailedException.
	Condition expression.ConditionBuilder
	// Encoder, if set, adjusts how items are marshalled (e.g. TagKey
	// "json"). Default: attributevalue's defaults.
	Encoder func(*attributevalue.EncoderOptions)
	// Decoder, if set, adjusts how items are unmarshalled.
	Decoder func(*attributevalue.DecoderOptions)
	// ExactlyOnce makes Put, Update and Delete one TransactWriteItems even
	// while the id has one key. A plain write that the SDK sends again
	// after an attempt whose answer was lost (a reset, a timeout, a 5xx)
	// may apply twice, as with any DynamoDB client: a Delete between the
	// two attempts is undone. A transaction applies once: the SDK sends
	// every attempt with one ClientRequestToken, and DynamoDB answers a
	// repeat within 10 minutes with the first outcome. It costs what a
	// transaction costs (twice the write units of a plain write; DynamoDB
	// Local reports four times) and
	// needs a server with transactions (otherwise ErrNoTransactions,
	// before anything is written, the base's record included: dynalite;
	// one TransactGetItems per Table finds out). While an id has several keys every write is a
	// transaction anyway. Load's batches are not affected. Usually set at
	// NewTable; per call too. Default false: plain writes.
	ExactlyOnce bool
	// Grower, if set, is the auto-grow policy: it sees every write
	// attempt of Put, Update and Load and grows a base's N under sustained
	// throttling (see [Grower]). It is taken from the Options NewTable
	// was given, not per call. Default nil: N changes only through
	// Reshard.
	Grower *Grower
}

// Table is typed access to the physical items of one sharded table, by
// (base, id): Put computes the physical key from the id at the base's
// newest shard count; Get, Update and Delete recompute it (and, while the
// base's history has several counts, the keys of the older ones), so they
// need a calculated strategy ([Hash], [CodePointProduct], or your own);
// with [Random] only Put and Load work, and reads go through package
// scatter. Load is the interleaving bulk loader. Table has no policy of
// its own (no cache, versions or listing): that is package repo, built on
// it.
//
// The Layout's sort key holds the item's id (type S). Items of type T are
// converted with attributevalue; Put sets the partition key attribute in
// the marshalled item (overriding any value T carries there), and items
// read back carry the physical key in it.
//
// Before its first data request for a base, each call checks the Layout
// against the base's record (see [Table.Shards]; Put, Update and Load
// write the record of a base that has none): a mismatch is a
// *LayoutError.
// Every method validates its input before sending anything and returns an
// *ItemError naming it. SDK errors are wrapped once with %w, naming the
// table and physical key. Each method that sends requests is a logical
// call that a dynashard.Usage in ctx, and the client's TracerProvider and
// MeterProvider, observe (see "What a call costs" in the package doc).
// A Table is safe for concurrent use. Its zero
// value, like a nil *Table, has no client: every method but Layout fails
// with ErrInvalid; make Tables with NewTable.
type Table[T any] struct {
	c    Client
	l    Layout
	rec  record.Layout // l described for its record (see Layout.rec)
	opts Options
	obs  *observe.Scope // the client's TracerProvider and MeterProvider; nil: none
	// txOK is set once the server answered a transaction probe, so that
	// ExactlyOnce probes it once per Table (see needTransactions).
	txOK atomic.Bool
}

// NewTable returns a Table over the table l describes. It returns an
// error matching ErrInvalid for a nil client, an invalid Layout, a Layout
// with an Index (writes need the table's own key) or one without a sort key
// of type S (the id). It sends no request.
func NewTable[T any](c Client, l Layout, optFns ...func(*Options)) (*Table[T], error) {
	if errs.IsNil(c) {
		return nil, fmt.Errorf("%w: NewTable: nil client", ErrInvalid)
	}
	if err := l.Validate(); err != nil {
		return nil, err
	}
	switch {
	case l.Index != "":
		return nil, fmt.Errorf("%w: table %s: a Table writes the table's items; index %q is read through scatter", ErrInvalidLayout, l.Table, l.Index)
	case l.SortKey == "" || l.sortType() != types.ScalarAttributeTypeS:
		return nil, fmt.Errorf("%w: table %s: a Table needs a sort key of type S (the id)", ErrInvalidLayout, l.Table)
	}
	var o Options
	for _, f := range optFns {
		if f != nil {
			f(&o)
		}
	}
	return &Table[T]{c: c, l: l, rec: l.rec(), opts: o, obs: observe.For(c)}, nil
}

// Layout returns the table's layout: the zero Layout for a zero or nil
// Table.
func (t *Table[T]) Layout() Layout {
	if t == nil {
		return Layout{}
	}
	return t.l
}

// made returns an error matching ErrInvalid for a Table not made by
// NewTable (zero or nil), which has no client nor a checked layout.
func (t *Table[T]) made() error {
	if t == nil || errs.IsNil(t.c) {
		return fmt.Errorf("%w: shard: Table not made by NewTable (zero value or nil)", ErrInvalid)
	}
	return nil
}

// options returns the Table's Options with optFns applied, after checking
// the Table and ctx.
func (t *Table[T]) options(ctx context.Context, optFns []func(*Options)) (Options, error) {
	if err := t.made(); err != nil {
		return Options{}, err
	}
	if ctx == nil {
		return Options{}, fmt.Errorf("%w: nil context", ErrInvalid)
	}
	o := t.opts
	for _, f := range optFns {
		if f != nil {
			f(&o)
		}
	}
	return o, nil
}

// itemOptions is options for a call on one item: then base and id are
// checked too.
func (t *Table[T]) itemOptions(ctx context.Context, base, id string, optFns []func(*Options)) (Options, error) {
	o, err := t.options(ctx, optFns)
	if err != nil {
		return o, err
	}
	return o, t.check(base, id)
}

func (t *Table[T]) itemErr(base, id string, err error) error {
	return &ItemError{Table: t.l.Table, Base: base, ID: id, Err: err}
}

// physical returns the physical key for (base, id) under strategy s after
// validating both.
func (t *Table[T]) physical(base, id string, s Strategy) (string, error) {
	if err := ddbsize.CheckKeyValue(t.l.SortKey, &types.AttributeValueMemberS{Value: id}, true); err != nil {
		return "", t.itemErr(base, id, err)
	}
	suffix, err := pick(s, id)
	if err != nil {
		return "", t.itemErr(base, id, err)
	}
	if err := t.l.Codec.Check(base, suffix); err != nil {
		return "", t.itemErr(base, id, err)
	}
	return t.l.Codec.Key(base, suffix), nil
}

// Key returns the physical partition key of the item with id under base
// at the newest shard count this process knows for base: the last of the
// base's history as last read from its record (whatever its age; see
// [Table.Shards]), or the Layout's N if the record was not read yet. It
// is where Put writes and the first key Get tries. It sends no request.
// It returns ErrNotCalculated for a Random strategy and an *ItemError for
// an invalid base or id.
func (t *Table[T]) Key(base, id string) (string, error) {
	if err := t.made(); err != nil {
		return "", err
	}
	if !calculated(t.l.Strategy) {
		return "", fmt.Errorf("%w: table %s uses %v", ErrNotCalculated, t.l.Table, t.l.Strategy)
	}
	s := t.l.Strategy
	if v, ok := t.newest(base); ok && !t.l.Unchecked {
		ns, err := withN(s, v.WriteN())
		if err != nil {
			return "", t.itemErr(base, id, err)
		}
		s = ns
	}
	return t.physical(base, id, s)
}

// check validates (base, id) for a request by id, before any request.
func (t *Table[T]) check(base, id string) error {
	if !calculated(t.l.Strategy) {
		return fmt.Errorf("%w: table %s uses %v", ErrNotCalculated, t.l.Table, t.l.Strategy)
	}
	_, err := t.physical(base, id, t.l.Strategy)
	return err
}

// keyAt returns the primary key map of id at physical key pk.
func (t *Table[T]) keyAt(pk, id string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		t.l.PartitionKey: &types.AttributeValueMemberS{Value: pk},
		t.l.SortKey:      &types.AttributeValueMemberS{Value: id},
	}
}

// marshal converts item to its stored form under base: the sort key must be
// a non-empty S (the id); the partition key is set from strategy s; the
// whole item is checked against DynamoDB's value rules and size limit.
func (t *Table[T]) marshal(base string, item T, o Options, s Strategy) (map[string]types.AttributeValue, string, error) {
	av, err := avmap.Marshal(item, encoder(o))
	if err != nil {
		return nil, "", t.itemErr(base, "", fmt.Errorf("marshal %T: %w", item, err))
	}
	if av == nil {
		return nil, "", t.itemErr(base, "", fmt.Errorf("%T marshals to no attributes", item))
	}
	skv, ok := av[t.l.SortKey]
	if !ok {
		return nil, "", t.itemErr(base, "", fmt.Errorf("item lacks sort key attribute %q", t.l.SortKey))
	}
	id, ok := skv.(*types.AttributeValueMemberS)
	if !ok {
		return nil, "", t.itemErr(base, "", fmt.Errorf("sort key attribute %q is %T, want a string (S)", t.l.SortKey, skv))
	}
	pk, err := t.physical(base, id.Value, s)
	if err != nil {
		return nil, "", err
	}
	av[t.l.PartitionKey] = &types.AttributeValueMemberS{Value: pk}
	if _, err := ddbsize.CheckItem(av); err != nil {
		return nil, "", t.itemErr(base, id.Value, err)
	}
	return av, id.Value, nil
}

func encoder(o Options) func(*attributevalue.EncoderOptions) {
	if o.Encoder != nil {
		return o.Encoder
	}
	return func(*attributevalue.EncoderOptions) {}
}

func decoder(o Options) func(*attributevalue.DecoderOptions) {
	if o.Decoder != nil {
		return o.Decoder
	}
	return func(*attributevalue.DecoderOptions) {}
}

func (t *Table[T]) unmarshal(av map[string]types.AttributeValue, o Options) (T, error) {
	var v T
	if err := avmap.Unmarshal(av, &v, decoder(o)); err != nil {
		return v, fmt.Errorf("shard: table %s: unmarshal into %T: %w", t.l.Table, v, err)
	}
	return v, nil
}

// expr builds the expression for a condition and/or update; ok is false
// when there is neither.
func expr(cond expression.ConditionBuilder, upd *expression.UpdateBuilder) (e expression.Expression, ok bool, err error) {
	b := expression.NewBuilder()
	if cond.IsSet() {
		b, ok = b.WithCondition(cond), true
	}
	if upd != nil {
		b, ok = b.WithUpdate(*upd), true
	}
	if !ok {
		return e, false, nil
	}
	e, err = b.Build()
	return e, true, err
}

func keyString(v types.AttributeValue) string {
	if s, ok := v.(*types.AttributeValueMemberS); ok {
		return s.Value
	}
	return fmt.Sprint(v)
}

// requestErr wraps an SDK error once, naming the request; a failed
// condition also matches ErrConflict.
func (t *Table[T]) requestErr(op, pk, id string, err error) error {
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return fmt.Errorf("shard: %s table %s key %q id %q: %w: %w", op, t.l.Table, pk, id, ErrConflict, err)
	}
	return fmt.Errorf("shard: %s table %s key %q id %q: %w", op, t.l.Table, pk, id, err)
}

// newest is the cached view of base whatever its age, if this process
// has one for the database t's client reaches (known without a request).
func (t *Table[T]) newest(base string) (record.View, bool) {
	db, ok := record.KnownDatabase(t.c)
	if !ok {
		return record.View{}, false
	}
	return t.rec.Newest(db, base)
}
