package split

import (
	"context"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/dynashard/dynashard/internal/errs"
	"github.com/dynashard/dynashard/internal/observe"
)

// Errors, matched with errors.Is. The first three are the families every
// dynashard package shares: errors.Is(err, split.ErrNotFound) and
// errors.Is(err, dynashard.ErrNotFound) are the same test.
var (
	// ErrInvalid is matched by every error about input rejected before any
	// request: a nil client or ctx, a bad Layout, an unknown or repeated
	// part name, a bad key, an attribute no part holds, a part over the
	// item limit, a large value that is neither B nor S, a Delete
	// condition on a large part. The error names the input.
	ErrInvalid = errs.Invalid
	// ErrNotFound reports a logical item none of whose asked-for parts
	// exists (Get), or a part that does not exist (Put, Update: a part is
	// created only by Create, so that no partial item is left behind).
	ErrNotFound = errs.NotFound
	// ErrConflict reports a write that lost: a part's version or condition
	// did not hold, Create found a part already there, or a concurrent
	// transaction on one of the items won. Nothing of the call was
	// written. The SDK's *types.ConditionalCheckFailedException or
	// *types.TransactionCanceledException stays reachable with errors.As.
	ErrConflict = errs.Conflict

	// ErrInvalidLayout is matched by every error about a Layout that
	// cannot describe a split item. It matches ErrInvalid.
	ErrInvalidLayout = errs.New("split: invalid layout", errs.Invalid)
	// ErrItemTooLarge is matched by a *PartError for a part whose item,
	// keys included, is over DynamoDB's 400 KB (409,600-byte) item limit
	// (for a part with a Large value: without the value, or with the
	// chunk store's attributes, as the store checks it; or a value over
	// the store's MaxSize), or a Create, Put or Delete whose items total
	// more than a transaction's 4 MB (a large part's counted at the item
	// limit). It matches ErrInvalid; nothing was sent.
	ErrItemTooLarge = errs.New("split: item too large", errs.Invalid)
	// ErrNoTransactions reports a server without TransactWriteItems
	// (dynalite answers UnknownOperationException): Create, Delete and a
	// Put of several parts need it, and split never falls back to writes
	// that could leave a partial item behind. Nothing was written. It is
	// not ErrInvalid: the input is fine and the server lacks a feature.
	ErrNoTransactions = errs.New("split: the server does not support transactions (TransactWriteItems)", nil)
)

// Client is the part of *dynamodb.Client a Store uses.
type Client interface {
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error)
	BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error)
	TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, optFns ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error)
}

var _ Client = (*dynamodb.Client)(nil)

// Options configures a Store through the optFns of New, and each call
// through optFns applied to a copy of the Store's Options for that call
// only, as the AWS SDK does. The zero value of every field is its
// documented default.
type Options struct {
	// ConsistentRead makes Get and GetMany read with strong consistency
	// (one BatchGetItem with ConsistentRead on every table), at twice the
	// read cost. Default false: eventually consistent reads, which may
	// miss a write of the last second or so, and may see one part of an
	// item written by a Create or Delete a moment before and not another.
	ConsistentRead bool

	// Conditions maps a part name to a condition of its own, sent with
	// every write of that part (Put, Update, Delete; Create has its own:
	// no part may exist). Usually set per call, e.g. the expected stock
	// of a checkout. A failed condition fails the call with ErrConflict.
	// Default nil: only the conditions split sets itself.
	Conditions map[string]expression.ConditionBuilder

	// Encoder and Decoder adjust attributevalue's conversion of T (e.g.
	// TagKey "json"). Default: attributevalue's defaults.
	Encoder func(*attributevalue.EncoderOptions)
	Decoder func(*attributevalue.DecoderOptions)
}

// apply returns a copy of o with optFns applied (nil ones skipped).
func (o Options) apply(optFns []func(*Options)) Options {
	if o.Conditions != nil {
		m := make(map[string]expression.ConditionBuilder, len(o.Conditions))
		for k, v := range o.Conditions {
			m[k] = v
		}
		o.Conditions = m
	}
	for _, f := range optFns {
		if f != nil {
			f(&o)
		}
	}
	return o
}

// PartError reports what went wrong with one part of a logical item. It
// matches whatever Err matches (ErrConflict, ErrNotFound, ErrItemTooLarge,
// an SDK error through errors.As). A transaction refused on several parts
// fails with one PartError per part, joined: errors.As finds the first,
// [PartErrors] every one.
type PartError struct {
	Part  string // the part's name
	Table string // its table
	Key   Key    // the logical key
	Err   error
}

func (e *PartError) Error() string {
	return fmt.Sprintf("split: part %q (table %s, key %v): %v", e.Part, e.Table, e.Key, e.Err)
}

func (e *PartError) Unwrap() error { return e.Err }

// PartErrors returns every *PartError in err's tree, in the order
// errors.As visits them (depth first), so the first is the one errors.As
// finds. It returns nil for an error without one.
func PartErrors(err error) []*PartError {
	var out []*PartError
	var walk func(error)
	walk = func(err error) {
		switch e := err.(type) {
		case nil:
		case *PartError:
			out = append(out, e)
		case interface{ Unwrap() []error }:
			for _, c := range e.Unwrap() {
				walk(c)
			}
		case interface{ Unwrap() error }:
			walk(e.Unwrap())
		}
	}
	walk(err)
	return out
}

// Store reads and writes logical items of type T whose parts live in the
// tables a Layout describes. Create it with New; the zero Store is not
// usable (its methods return ErrInvalid). A Store is safe for concurrent
// use.
type Store[T any] struct {
	c     Client
	l     Layout
	parts map[string]*part // by name
	owner map[string]*part // attribute (or version) name → the part holding it
	order []*part          // as declared
	opts  Options
	obs   *observe.Scope // the client's tracer and meter; nil: none
}

// New returns a Store over the parts l describes, with the Options optFns
// set. It sends no request. It fails with an error matching ErrInvalid,
// naming the input, for a nil client (also a typed nil such as
// (*dynamodb.Client)(nil)) and for a Layout that Validate refuses.
func New[T any](c Client, l Layout, optFns ...func(*Options)) (*Store[T], error) {
	if errs.IsNil(c) {
		return nil, fmt.Errorf("%w: split: New: nil client %T", ErrInvalid, c)
	}
	if err := l.Validate(); err != nil {
		return nil, fmt.Errorf("split: New: %w", err)
	}
	l = l.clone()
	s := &Store[T]{c: c, l: l, parts: map[string]*part{}, owner: map[string]*part{}, opts: Options{}.apply(optFns), obs: observe.For(c)}
	for i := range l.Parts {
		p := newPart(l, &l.Parts[i])
		s.parts[p.Name] = p
		s.order = append(s.order, p)
		for _, a := range p.Attributes {
			s.owner[a] = p
		}
		if p.Version != "" {
			s.owner[p.Version] = p
		}
	}
	return s, nil
}

// Layout returns a copy of the Store's layout: the zero Layout for a nil
// or zero Store.
func (s *Store[T]) Layout() Layout {
	if s == nil {
		return Layout{}
	}
	return s.l.clone()
}

// start opens the logical call op ("split.Get": span
// "dynashard.split.Get"; a constant, so that an unobserved call allocates
// nothing). A nil Store or ctx, which call refuses, is no observed call.
func (s *Store[T]) start(ctx context.Context, op string) (context.Context, observe.Call) {
	if s == nil || ctx == nil {
		return ctx, observe.Call{}
	}
	return s.obs.Start(ctx, op)
}

// describe sets the span attributes of a call on the parts ps of the
// item with key k (nil: several keys): the parts' tables, comma-separated,
// and the key's values.
func describe(c observe.Call, k *Key, ps []*part) {
	if !c.Traced() {
		return
	}
	c.SetString(observe.AttrTable, tables(ps))
	if k != nil {
		c.SetString(observe.AttrBase, k.PK)
		if k.SK != "" {
			c.SetString(attrID, k.SK)
		}
	}
}

// attrID is the span attribute of the logical sort-key value (the id of
// a sharded part), beside observe.AttrBase for the partition-key value.
const attrID = "dynashard.id"

// tables names the tables of ps, comma-separated.
func tables(ps []*part) string {
	var b strings.Builder
	for i, p := range ps {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(p.table)
	}
	return b.String()
}

// call checks the receiver and ctx and returns the call's Options.
func (s *Store[T]) call(ctx context.Context, optFns []func(*Options)) (Options, error) {
	switch {
	case s == nil || s.c == nil:
		return Options{}, fmt.Errorf("%w: split: use of a Store not made by New", ErrInvalid)
	case ctx == nil:
		return Options{}, fmt.Errorf("%w: split: nil context", ErrInvalid)
	}
	o := s.opts.apply(optFns)
	for name := range o.Conditions {
		if _, ok := s.parts[name]; !ok {
			return o, fmt.Errorf("%w: split: Options.Conditions names part %q, which the layout does not have", ErrInvalid, name)
		}
	}
	return o, nil
}

// named returns the parts of names, in the order given; nil or empty
// names means every part, in declaration order, when all is true, and is
// refused otherwise.
func (s *Store[T]) named(names []string, all bool) ([]*part, error) {
	if len(names) == 0 {
		if all {
			return s.order, nil
		}
		return nil, fmt.Errorf("%w: split: no part named", ErrInvalid)
	}
	ps := make([]*part, 0, len(names))
	seen := make(map[string]bool, len(names))
	for _, n := range names {
		p, ok := s.parts[n]
		switch {
		case !ok:
			return nil, fmt.Errorf("%w: split: unknown part %q", ErrInvalid, n)
		case seen[n]:
			return nil, fmt.Errorf("%w: split: part %q named twice", ErrInvalid, n)
		}
		seen[n] = true
		ps = append(ps, p)
	}
	return ps, nil
}
