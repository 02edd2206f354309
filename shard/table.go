package shard

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynashard/dynashard/internal/ddbsize"
	"github.com/dynashard/dynashard/internal/errs"
)

// Client is the part of *dynamodb.Client a [Table] uses.
type Client interface {
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error)
	BatchWriteItem(ctx context.Context, in *dynamodb.BatchWriteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.BatchWriteItemOutput, error)
}

var (
	// ErrInvalid is matched (errors.Is) by every error about input
	// rejected before any request, in every dynashard package.
	ErrInvalid = errs.Invalid
	// ErrBadItem matches (with errors.Is) every *ItemError: an item or key
	// rejected before any request was sent.
	ErrBadItem = errors.New("shard: bad item")
	// ErrItemTooLarge matches an *ItemError for an item over DynamoDB's
	// 400 KB (409,600-byte) limit, measured with the physical key in place.
	ErrItemTooLarge = errors.New("shard: item too large")
	// ErrNotFound is returned (wrapped) by [Table.Get] when no item has the
	// key.
	ErrNotFound = errors.New("shard: item not found")
	// ErrNotCalculated is returned (wrapped) by operations that must find an
	// item by id when the Table's strategy is [Random]: such items can only
	// be found by reading every suffix (see package scatter).
	ErrNotCalculated = errors.New("shard: strategy does not derive the suffix from the id")
	// ErrBadTable is returned (wrapped) by [NewTable] for an unusable
	// configuration.
	ErrBadTable = errors.New("shard: bad table configuration")
)

// ItemError reports an item, or a (base, id) pair, rejected before any
// request: empty id, an item lacking its sort key, a key too long after the
// suffix, an item over 400 KB, a value DynamoDB would reject, or a value
// attributevalue cannot marshal. It matches [ErrBadItem], [ErrItemTooLarge]
// when that is the reason, and whatever Err matches (e.g. [ErrKeyTooLong],
// [ErrBadKey]).
type ItemError struct {
	Table string
	Base  string // the logical partition key
	ID    string // the sort key value, if known
	Err   error
}

func (e *ItemError) Error() string {
	return fmt.Sprintf("shard: bad item (table %s, base %q, id %q): %v", e.Table, clip(e.Base), clip(e.ID), e.Err)
}

func (e *ItemError) Unwrap() error { return e.Err }

func (e *ItemError) Is(target error) bool {
	return target == ErrBadItem || (target == ErrItemTooLarge && errors.Is(e.Err, ddbsize.ErrItemTooLarge))
}

// Options configures a [Table]. The zero value is the default.
type Options struct {
	// Codec joins base and suffix. Zero means Codec{} ("base.7").
	Codec Codec
	// Encoder, if set, adjusts how items are marshalled (e.g. TagKey
	// "json"). Default: attributevalue's defaults.
	Encoder func(*attributevalue.EncoderOptions)
	// Decoder, if set, adjusts how items are unmarshalled.
	Decoder func(*attributevalue.DecoderOptions)
}

// WriteOptions are per-call options of Put, Update and Delete. The zero
// value writes unconditionally.
type WriteOptions struct {
	// Condition, if set, is sent as the request's ConditionExpression. A
	// failed condition returns the SDK's error wrapped once, so
	// errors.As(err, new(*types.ConditionalCheckFailedException)) works.
	Condition expression.ConditionBuilder
}

// ReadOptions are per-call options of Get. The zero value reads eventually
// consistently.
type ReadOptions struct {
	ConsistentRead bool
}

// Table is typed access to one sharded DynamoDB table whose partition key
// holds physical keys base<sep>suffix and whose sort key (type S) holds the
// item's id, the input to the Strategy. Put computes the physical key; Get,
// Update and Delete recompute it from (base, id) and send one request, so
// they need a calculated strategy ([Hash], [CodePointProduct], or your own);
// with [Random] only Put and Load work, and reads go through package
// scatter. A user-supplied Strategy is taken to be calculated (Pick a
// function of id alone), as the Strategy contract implies.
//
// Items of type T are converted with attributevalue. Put sets the partition
// key attribute in the marshalled item (overriding any value T carries
// there); items read back carry the physical key in that attribute.
//
// Every method validates its input before sending anything and returns an
// *ItemError naming the input on failure. SDK errors are wrapped once with
// %w, naming the table and physical key. A Table is safe for concurrent use.
type Table[T any] struct {
	c      Client
	name   string
	pk, sk string
	s      Strategy
	opts   Options
}

// NewTable returns a Table for table name, whose key schema is partition key
// attribute pk and sort key attribute sk (type S), sharded with s. It
// returns an error wrapping ErrBadTable for a nil client, empty or equal
// attribute names or an empty table name, and ErrBadStrategy for a strategy
// with N outside 1..MaxN or an invalid codec separator.
func NewTable[T any](c Client, name, pk, sk string, s Strategy, optFns ...func(*Options)) (*Table[T], error) {
	var o Options
	for _, f := range optFns {
		f(&o)
	}
	switch {
	case c == nil:
		return nil, fmt.Errorf("%w: nil client", ErrBadTable)
	case name == "":
		return nil, fmt.Errorf("%w: empty table name", ErrBadTable)
	case pk == "" || sk == "" || pk == sk:
		return nil, fmt.Errorf("%w: table %s: partition key %q and sort key %q must be distinct and non-empty", ErrBadTable, name, pk, sk)
	}
	if err := checkStrategy(s); err != nil {
		return nil, err
	}
	if err := o.Codec.checkSep(); err != nil {
		return nil, fmt.Errorf("%w: table %s: %w", ErrBadTable, name, err)
	}
	return &Table[T]{c: c, name: name, pk: pk, sk: sk, s: s, opts: o}, nil
}

// Name returns the table name.
func (t *Table[T]) Name() string { return t.name }

// Strategy returns the table's strategy.
func (t *Table[T]) Strategy() Strategy { return t.s }

// Codec returns the table's key codec.
func (t *Table[T]) Codec() Codec { return t.opts.Codec }

func (t *Table[T]) itemErr(base, id string, err error) error {
	return &ItemError{Table: t.name, Base: base, ID: id, Err: err}
}

// physical returns the physical key for (base, id) after validating both.
func (t *Table[T]) physical(base, id string) (string, error) {
	if err := ddbsize.CheckKeyValue(t.sk, &types.AttributeValueMemberS{Value: id}, true); err != nil {
		return "", t.itemErr(base, id, err)
	}
	suffix, err := pick(t.s, id)
	if err != nil {
		return "", t.itemErr(base, id, err)
	}
	if err := t.opts.Codec.Check(base, suffix); err != nil {
		return "", t.itemErr(base, id, err)
	}
	return t.opts.Codec.Key(base, suffix), nil
}

// Key returns the physical partition key of the item with id under base,
// the key Get, Update and Delete use. It returns ErrNotCalculated for a
// Random strategy and an *ItemError for an invalid base or id.
func (t *Table[T]) Key(base, id string) (string, error) {
	if !calculated(t.s) {
		return "", fmt.Errorf("%w: table %s uses %v", ErrNotCalculated, t.name, t.s)
	}
	return t.physical(base, id)
}

// key returns the primary key map for (base, id).
func (t *Table[T]) key(base, id string) (map[string]types.AttributeValue, string, error) {
	pk, err := t.Key(base, id)
	if err != nil {
		return nil, "", err
	}
	return map[string]types.AttributeValue{
		t.pk: &types.AttributeValueMemberS{Value: pk},
		t.sk: &types.AttributeValueMemberS{Value: id},
	}, pk, nil
}

// marshal converts item to its stored form under base: the sort key must be
// a non-empty S (the id); the partition key is set from the strategy; the
// whole item is checked against DynamoDB's value rules and size limit.
func (t *Table[T]) marshal(base string, item T) (map[string]types.AttributeValue, string, error) {
	av, err := attributevalue.MarshalMapWithOptions(item, t.encoder())
	if err != nil {
		return nil, "", t.itemErr(base, "", fmt.Errorf("marshal %T: %w", item, err))
	}
	if av == nil {
		return nil, "", t.itemErr(base, "", fmt.Errorf("%T marshals to no attributes", item))
	}
	skv, ok := av[t.sk]
	if !ok {
		return nil, "", t.itemErr(base, "", fmt.Errorf("item lacks sort key attribute %q", t.sk))
	}
	s, ok := skv.(*types.AttributeValueMemberS)
	if !ok {
		return nil, "", t.itemErr(base, "", fmt.Errorf("sort key attribute %q is %T, want a string (S)", t.sk, skv))
	}
	id := s.Value
	pk, err := t.physical(base, id)
	if err != nil {
		return nil, "", err
	}
	av[t.pk] = &types.AttributeValueMemberS{Value: pk}
	if _, err := ddbsize.CheckItem(av); err != nil {
		return nil, "", t.itemErr(base, id, err)
	}
	return av, id, nil
}

func (t *Table[T]) encoder() func(*attributevalue.EncoderOptions) {
	if t.opts.Encoder != nil {
		return t.opts.Encoder
	}
	return func(*attributevalue.EncoderOptions) {}
}

func (t *Table[T]) decoder() func(*attributevalue.DecoderOptions) {
	if t.opts.Decoder != nil {
		return t.opts.Decoder
	}
	return func(*attributevalue.DecoderOptions) {}
}

func (t *Table[T]) unmarshal(av map[string]types.AttributeValue) (T, error) {
	var v T
	if err := attributevalue.UnmarshalMapWithOptions(av, &v, t.decoder()); err != nil {
		return v, fmt.Errorf("shard: table %s: unmarshal into %T: %w", t.name, v, err)
	}
	return v, nil
}

func writeOpts(optFns []func(*WriteOptions)) WriteOptions {
	var o WriteOptions
	for _, f := range optFns {
		f(&o)
	}
	return o
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

// Put writes item under the logical key base: the physical key comes from
// the strategy applied to the item's sort key (its id). With Random, each
// Put of the same id may land on a different suffix, creating a second copy
// rather than overwriting; use a calculated strategy when ids are rewritten.
func (t *Table[T]) Put(ctx context.Context, base string, item T, optFns ...func(*WriteOptions)) error {
	av, id, err := t.marshal(base, item)
	if err != nil {
		return err
	}
	o := writeOpts(optFns)
	in := &dynamodb.PutItemInput{TableName: aws.String(t.name), Item: av}
	e, ok, err := expr(o.Condition, nil)
	if err != nil {
		return t.itemErr(base, id, fmt.Errorf("condition: %w", err))
	}
	if ok {
		in.ConditionExpression, in.ExpressionAttributeNames, in.ExpressionAttributeValues = e.Condition(), e.Names(), e.Values()
	}
	if _, err := t.c.PutItem(ctx, in); err != nil {
		return fmt.Errorf("shard: PutItem table %s key %q id %q: %w", t.name, keyString(av[t.pk]), id, err)
	}
	return nil
}

func keyString(v types.AttributeValue) string {
	if s, ok := v.(*types.AttributeValueMemberS); ok {
		return s.Value
	}
	return fmt.Sprint(v)
}

// Get reads the item with id under base with one GetItem on the computed
// physical key. It returns an error wrapping ErrNotFound if there is none.
func (t *Table[T]) Get(ctx context.Context, base, id string, optFns ...func(*ReadOptions)) (T, error) {
	var zero T
	var o ReadOptions
	for _, f := range optFns {
		f(&o)
	}
	key, pk, err := t.key(base, id)
	if err != nil {
		return zero, err
	}
	out, err := t.c.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(t.name), Key: key, ConsistentRead: aws.Bool(o.ConsistentRead),
	})
	if err != nil {
		return zero, fmt.Errorf("shard: GetItem table %s key %q id %q: %w", t.name, pk, id, err)
	}
	if out.Item == nil {
		return zero, fmt.Errorf("%w: table %s key %q id %q", ErrNotFound, t.name, pk, id)
	}
	return t.unmarshal(out.Item)
}

// Update applies update to the item with id under base and returns the item
// as it is after the update (ReturnValues ALL_NEW). Like UpdateItem, it
// creates the item if it does not exist unless the condition forbids it.
// An update that sets, removes, adds to or deletes from a key attribute is
// an *ItemError (ErrBadKey) before any request.
func (t *Table[T]) Update(ctx context.Context, base, id string, update expression.UpdateBuilder, optFns ...func(*WriteOptions)) (T, error) {
	var zero T
	key, pk, err := t.key(base, id)
	if err != nil {
		return zero, err
	}
	o := writeOpts(optFns)
	e, _, err := expr(o.Condition, &update)
	if err != nil {
		return zero, t.itemErr(base, id, fmt.Errorf("update expression: %w", err))
	}
	for _, name := range updatedNames(aws.ToString(e.Update()), e.Names()) {
		if name == t.pk || name == t.sk {
			return zero, t.itemErr(base, id, fmt.Errorf("%w: the update sets key attribute %q", ErrBadKey, name))
		}
	}
	out, err := t.c.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(t.name),
		Key:                       key,
		UpdateExpression:          e.Update(),
		ConditionExpression:       e.Condition(),
		ExpressionAttributeNames:  e.Names(),
		ExpressionAttributeValues: e.Values(),
		ReturnValues:              types.ReturnValueAllNew,
	})
	if err != nil {
		return zero, fmt.Errorf("shard: UpdateItem table %s key %q id %q: %w", t.name, pk, id, err)
	}
	return t.unmarshal(out.Attributes)
}

// Delete deletes the item with id under base. Deleting an absent item is not
// an error (as in DynamoDB) unless the condition says so.
func (t *Table[T]) Delete(ctx context.Context, base, id string, optFns ...func(*WriteOptions)) error {
	key, pk, err := t.key(base, id)
	if err != nil {
		return err
	}
	o := writeOpts(optFns)
	in := &dynamodb.DeleteItemInput{TableName: aws.String(t.name), Key: key}
	e, ok, err := expr(o.Condition, nil)
	if err != nil {
		return t.itemErr(base, id, fmt.Errorf("condition: %w", err))
	}
	if ok {
		in.ConditionExpression, in.ExpressionAttributeNames, in.ExpressionAttributeValues = e.Condition(), e.Names(), e.Values()
	}
	if _, err := t.c.DeleteItem(ctx, in); err != nil {
		return fmt.Errorf("shard: DeleteItem table %s key %q id %q: %w", t.name, pk, id, err)
	}
	return nil
}

// updatedNames returns the top-level attribute names an update expression
// built by the expression package changes: the first element of each
// action's target path, resolved through names. The package writes one
// clause per line ("SET #0 = :0, #1.#2 = if_not_exists(#3, :1)"), and a
// target is the path before " = " (SET) or the first token (REMOVE, ADD,
// DELETE) of each top-level, comma-separated action.
func updatedNames(update string, names map[string]string) []string {
	var out []string
	for _, line := range strings.Split(update, "\n") {
		verb, rest, ok := strings.Cut(line, " ")
		if !ok {
			continue
		}
		for _, action := range splitTopLevel(rest) {
			target := strings.TrimSpace(action)
			if verb == "SET" {
				target, _, _ = strings.Cut(target, "=")
			}
			target, _, _ = strings.Cut(strings.TrimSpace(target), " ")
			first := strings.FieldsFunc(target, func(r rune) bool { return r == '.' || r == '[' })
			if len(first) > 0 {
				out = append(out, cmp.Or(names[first[0]], first[0]))
			}
		}
	}
	return out
}

// splitTopLevel splits s at commas outside parentheses.
func splitTopLevel(s string) []string {
	var parts []string
	depth, start := 0, 0
	for i, r := range s {
		switch r {
		case '(':
			depth++
		case ')':
			depth--
		case ',':
			if depth == 0 {
				parts = append(parts, s[start:i])
				start = i + 1
			}
		}
	}
	return append(parts, s[start:])
}
