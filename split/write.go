package split

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynashard/dynashard/internal/attempts"
	"github.com/dynashard/dynashard/internal/avmap"
	"github.com/dynashard/dynashard/internal/ddbsize"
	"github.com/dynashard/dynashard/internal/observe"
	"github.com/dynashard/dynashard/internal/setclause"
)

// write is one part's write, built and checked before any request.
type write struct {
	p    *part
	key  map[string]types.AttributeValue
	item map[string]types.AttributeValue // Put; nil for Delete
	cond expression.ConditionBuilder     // zero: none
	// onlyExists: the condition is the part's existence alone, so a failed
	// one means the part is missing.
	onlyExists bool
	// versioned: the condition includes version = expect.
	versioned bool
	expect    int64
	// userCond: the condition includes an Options.Conditions entry.
	userCond bool
}

// Create writes every part of item, all or nothing, with one
// TransactWriteItems, each part on the condition that it does not exist
// yet, and each versioned part at version 1. It returns item with those
// versions set. It fails with ErrConflict (a *PartError per part found)
// when any part exists, and with ErrNoTransactions on a server without
// transactions. A transaction costs twice the write units of plain writes.
// A part with a Large value is written through its chunk store: the value
// first, then the transaction carries the store's flip of the part's item
// (see "Large parts" in the package doc).
func (s *Store[T]) Create(ctx context.Context, item T, optFns ...func(*Options)) (_ T, err error) {
	ctx, call := s.start(ctx, "split.Create")
	defer func() { call.End(ctx, err) }()
	o, err := s.call(ctx, optFns)
	if err != nil {
		return item, err
	}
	k, av, err := s.marshal(item, o)
	if err != nil {
		return item, err
	}
	describe(call, &k, s.order)
	ws := make([]write, 0, len(s.order))
	var lw *largeWrite
	for _, p := range s.order {
		if p.Version != "" {
			av[p.Version] = &types.AttributeValueMemberN{Value: "1"}
		}
		w, l, err := s.partWrite(p, k, av)
		if err != nil {
			return item, err
		}
		if l != nil {
			lw, l.i = l, len(ws)
		}
		w.cond = expression.AttributeNotExists(expression.Name(p.keys[0]))
		ws = append(ws, w)
	}
	if lw != nil {
		err = s.writeLarge(ctx, "Create", k, ws, lw, true)
	} else {
		err = s.transact(ctx, "Create", k, ws)
	}
	if err != nil {
		return item, err
	}
	return s.returned(item, av, o)
}

// Put replaces the named parts of the item with item's attributes: one
// PutItem for one part, one TransactWriteItems (all or nothing, twice the
// units) for several. Each part is written only if it exists (Create
// makes parts; a Put never leaves a partial item behind), its version, if
// it has one, equals item's (which Put then advances by one), and its
// Options.Conditions entry holds. It returns item with the new versions.
// It fails with ErrNotFound when a part does not exist and ErrConflict
// when a version or condition does not hold, as a *PartError naming the
// part; nothing was written then. On a server that ignores
// ReturnValuesOnConditionCheckFailure (dynalite), a Put of one part with a
// condition of the caller's that fails while another writer creates the
// part may report ErrConflict where ErrNotFound was the cause. A part with
// a Large value is written through its chunk store: one consistent
// GetItem, the value, then the flip, alone or in the transaction (see
// "Large parts" in the package doc).
func (s *Store[T]) Put(ctx context.Context, item T, parts []string, optFns ...func(*Options)) (_ T, err error) {
	ctx, call := s.start(ctx, "split.Put")
	defer func() { call.End(ctx, err) }()
	o, err := s.call(ctx, optFns)
	if err != nil {
		return item, err
	}
	ps, err := s.named(parts, false)
	if err != nil {
		return item, err
	}
	k, av, err := s.marshal(item, o)
	if err != nil {
		return item, err
	}
	describe(call, &k, ps)
	ws := make([]write, 0, len(ps))
	var lw *largeWrite
	for _, p := range ps {
		var cond expression.ConditionBuilder
		if !putBack.putCreates {
			cond = expression.AttributeExists(expression.Name(p.keys[0]))
		}
		only, versioned, expect := true, false, int64(0)
		if p.Version != "" {
			vc, next, err := advance(p, av)
			if err != nil {
				return item, err
			}
			expect, _ = strconv.ParseInt(next.(*types.AttributeValueMemberN).Value, 10, 64)
			expect--
			av[p.Version] = next
			cond, only, versioned = and(cond, vc), false, true
		}
		w, l, err := s.partWrite(p, k, av)
		if err != nil {
			return item, err
		}
		if l != nil {
			lw, l.i = l, len(ws)
		}
		if c, ok := o.Conditions[p.Name]; ok && c.IsSet() {
			cond, only, w.userCond = and(cond, c), false, true
		}
		w.cond, w.onlyExists, w.versioned, w.expect = cond, only, versioned, expect
		ws = append(ws, w)
	}
	switch {
	case lw != nil:
		err = s.writeLarge(ctx, "Put", k, ws, lw, false)
	case len(ws) == 1:
		err = s.putOne(ctx, k, ws[0])
	default:
		err = s.transact(ctx, "Put", k, ws)
	}
	if err != nil {
		return item, err
	}
	return s.returned(item, av, o)
}

// putBack holds bugs that this package's tests put back on purpose, to
// show that the model check catches them. Never set outside tests.
var putBack struct {
	// putCreates drops Put's existence condition: a Put after a Delete
	// then leaves a partial item behind.
	putCreates bool
	// largeApart sends a multi-part write with a large part as two
	// writes: the other parts' transaction, then the large part's write
	// through its chunk store alone. A large part refused after the
	// others were written then leaves a partial write behind.
	largeApart bool
}

// and returns a AND b, or b when a is unset.
func and(a, b expression.ConditionBuilder) expression.ConditionBuilder {
	if !a.IsSet() {
		return b
	}
	return a.And(b)
}

// advance returns the condition that the stored version of p equals the
// one in av, and the version to store.
func advance(p *part, av map[string]types.AttributeValue) (expression.ConditionBuilder, types.AttributeValue, error) {
	var v int64
	switch x := av[p.Version].(type) {
	case nil:
	case *types.AttributeValueMemberN:
		n, err := strconv.ParseInt(x.Value, 10, 64)
		if err != nil || n < 0 {
			return expression.ConditionBuilder{}, nil, fmt.Errorf("%w: split: part %q: version %s=%q is not a whole number ≥ 0", ErrInvalid, p.Name, p.Version, x.Value)
		}
		v = n
	default:
		return expression.ConditionBuilder{}, nil, fmt.Errorf("%w: split: part %q: version %s is %T, want a number", ErrInvalid, p.Name, p.Version, x)
	}
	if v == math.MaxInt64 {
		return expression.ConditionBuilder{}, nil, fmt.Errorf("%w: split: part %q: version %d cannot be advanced", ErrInvalid, p.Name, v)
	}
	name := expression.Name(p.Version)
	cond := name.Equal(expression.Value(v))
	if v == 0 {
		cond = expression.AttributeNotExists(name).Or(cond)
	}
	return cond, &types.AttributeValueMemberN{Value: strconv.FormatInt(v+1, 10)}, nil
}

// Update applies update to one part of the item with key k, with one
// UpdateItem, on the condition that the part exists and its
// Options.Conditions entry holds; a versioned part's version is advanced
// by one. The paths of update must begin at one of the part's own
// attributes: an update naming a key, the part's version, another part's
// attribute or one no part holds is refused with ErrInvalid before any
// request. Past that first name, a path may name any field. It returns the
// logical key and the part's attributes as stored after the update (other
// fields of T at their zero value). It fails with ErrNotFound when the
// part does not exist and ErrConflict when the condition does not hold.
// For a part with a Large value, update may name only the part's other
// attributes (no paths into them), and the value is returned at its zero
// value: Get reads it.
func (s *Store[T]) Update(ctx context.Context, k Key, partName string, update expression.UpdateBuilder, optFns ...func(*Options)) (_ T, err error) {
	ctx, call := s.start(ctx, "split.Update")
	defer func() { call.End(ctx, err) }()
	var zero T
	o, err := s.call(ctx, optFns)
	if err != nil {
		return zero, err
	}
	ps, err := s.named([]string{partName}, false)
	if err != nil {
		return zero, err
	}
	p := ps[0]
	describe(call, &k, ps)
	if k, err = s.l.checkKey(k); err != nil {
		return zero, err
	}
	km, err := p.key(s.l, k)
	if err != nil {
		return zero, err
	}
	cond := expression.AttributeExists(expression.Name(p.keys[0]))
	only := true
	if c, ok := o.Conditions[p.Name]; ok && c.IsSet() {
		cond, only = cond.And(c), false
	}
	alone, err := expression.NewBuilder().WithUpdate(update).Build()
	if err != nil {
		return zero, fmt.Errorf("%w: split: Update %v part %q: %w", ErrInvalid, k, p.Name, err)
	}
	if err := s.checkUpdateNames(p, aws.ToString(alone.Update()), alone.Names()); err != nil {
		return zero, fmt.Errorf("%w: split: Update %v part %q: %w", ErrInvalid, k, p.Name, err)
	}
	expr, err := expression.NewBuilder().WithUpdate(update).WithCondition(cond).Build()
	if err != nil {
		return zero, fmt.Errorf("%w: split: Update %v part %q: %w", ErrInvalid, k, p.Name, err)
	}
	in := &dynamodb.UpdateItemInput{
		TableName:                 aws.String(p.table),
		Key:                       km,
		UpdateExpression:          expr.Update(),
		ConditionExpression:       expr.Condition(),
		ExpressionAttributeNames:  expr.Names(),
		ExpressionAttributeValues: expr.Values(),
		ReturnValues:              types.ReturnValueAllNew,
	}
	if p.Version != "" {
		if in.ExpressionAttributeNames == nil {
			in.ExpressionAttributeNames = map[string]string{}
		}
		if in.ExpressionAttributeValues == nil {
			in.ExpressionAttributeValues = map[string]types.AttributeValue{}
		}
		in.UpdateExpression = aws.String(withVersion(aws.ToString(in.UpdateExpression)))
		in.ExpressionAttributeNames["#splitVersion"] = p.Version
		in.ExpressionAttributeValues[":splitZero"] = &types.AttributeValueMemberN{Value: "0"}
		in.ExpressionAttributeValues[":splitOne"] = &types.AttributeValueMemberN{Value: "1"}
	}
	var a attempts.Counter
	out, err := observe.Do(ctx, s.c.UpdateItem, in, a.Option)
	if err != nil {
		w := write{p: p, key: km, onlyExists: only, userCond: !only}
		if uerr := retried(&a, "Update", k, w, err); uerr != nil {
			return zero, uerr
		}
		return zero, s.failed(ctx, "Update", k, w, err)
	}
	av := s.logicalKey(k)
	p.copyAttrs(av, out.Attributes)
	var v T
	return v, s.decode(av, &v, o)
}

// checkUpdateNames checks the attribute names of an update of part p, as
// package expression builds it: every name at the top level of a path must
// be one of the part's own attributes (not a key, not its version, not
// another part's or no part's attribute), whatever it does there (SET,
// ADD, REMOVE, DELETE, or an operand read). A path into one of them may
// name any field. A part with a Large value takes no paths: every name
// must be one of its other attributes.
func (s *Store[T]) checkUpdateNames(p *part, update string, names map[string]string) error {
	top := topLevel(update)
	for ph, name := range names {
		if !top[ph] && p.Large == nil {
			continue
		}
		switch {
		case name == s.l.PartitionKey || name == s.l.SortKey:
			return fmt.Errorf("the update names %q, a key attribute", name)
		case name == p.Version:
			return fmt.Errorf("the update names %q, the part's version (split advances it)", name)
		case p.Large != nil && !top[ph]:
			return fmt.Errorf("the update has a path into %q: a part with a Large value takes whole attributes only", name)
		case p.Large != nil && name == p.Large.Attribute:
			return fmt.Errorf("the update names %q, the part's Large value (Put writes it)", name)
		case s.owner[name] == nil:
			return fmt.Errorf("the update names %q, which no part holds", name)
		case s.owner[name] != p:
			return fmt.Errorf("the update names %q, which part %q holds", name, s.owner[name].Name)
		}
	}
	return nil
}

// topLevel returns the name placeholders ("#0") that begin a path in an
// update expression: those not preceded by "." (a field of a map). A
// placeholder used both ways is top-level.
func topLevel(update string) map[string]bool {
	top := map[string]bool{}
	for i := 0; i < len(update); i++ {
		if update[i] != '#' {
			continue
		}
		j := i + 1
		for j < len(update) && (update[j] == '_' || update[j] >= '0' && update[j] <= '9' || update[j] >= 'a' && update[j] <= 'z' || update[j] >= 'A' && update[j] <= 'Z') {
			j++
		}
		if i == 0 || update[i-1] != '.' {
			top[update[i:j]] = true
		}
		i = j - 1
	}
	return top
}

// withVersion adds "#splitVersion = if_not_exists(#splitVersion,
// :splitZero) + :splitOne" to the SET clause of an update expression as
// package expression formats it (one "MODE a, b" line per mode), or a SET
// clause of its own.
func withVersion(update string) string {
	return setclause.Add(update, "#splitVersion = if_not_exists(#splitVersion, :splitZero) + :splitOne")
}

// Delete deletes every part of the item with key k, all or nothing, with
// one TransactWriteItems (one DeleteItem for a one-part layout), each
// part on its Options.Conditions entry if it has one. Deleting an item
// that does not exist, or parts that do not, is no error. It fails with
// ErrConflict when a condition does not hold (nothing is deleted then) and
// with ErrNoTransactions on a server without transactions. A part with a
// Large value is deleted through its chunk store, in the same transaction,
// then its chunks; Options.Conditions may not name it (ErrInvalid).
func (s *Store[T]) Delete(ctx context.Context, k Key, optFns ...func(*Options)) (err error) {
	ctx, call := s.start(ctx, "split.Delete")
	defer func() { call.End(ctx, err) }()
	o, err := s.call(ctx, optFns)
	if err != nil {
		return err
	}
	describe(call, &k, s.order)
	if k, err = s.l.checkKey(k); err != nil {
		return err
	}
	ws := make([]write, 0, len(s.order))
	large := -1
	for _, p := range s.order {
		km, err := p.key(s.l, k)
		if err != nil {
			return err
		}
		w := write{p: p, key: km}
		if c, ok := o.Conditions[p.Name]; ok && c.IsSet() {
			if p.Large != nil {
				return &PartError{Part: p.Name, Table: p.table, Key: k,
					Err: fmt.Errorf("%w: split: Delete: Options.Conditions has a condition on a part with a Large value, which Delete cannot check", ErrInvalid)}
			}
			w.cond = c
		}
		if p.Large != nil {
			large = len(ws)
		}
		ws = append(ws, w)
	}
	switch {
	case large >= 0:
		return s.deleteLarge(ctx, k, ws, large)
	case len(ws) == 1:
		return s.deleteOne(ctx, k, ws[0])
	}
	return s.transact(ctx, "Delete", k, ws)
}

// marshal converts item and checks that every attribute is a key
// attribute or held by a part.
func (s *Store[T]) marshal(item T, o Options) (Key, map[string]types.AttributeValue, error) {
	enc := o.Encoder
	if enc == nil {
		enc = func(*attributevalue.EncoderOptions) {}
	}
	av, err := avmap.Marshal(item, enc)
	if err != nil {
		return Key{}, nil, fmt.Errorf("%w: split: marshal %T: %w", ErrInvalid, item, err)
	}
	k, err := s.l.keyOf(av)
	if err != nil {
		return Key{}, nil, err
	}
	for name := range av {
		if name != s.l.PartitionKey && name != s.l.SortKey && s.owner[name] == nil {
			return Key{}, nil, fmt.Errorf("%w: split: item %v: attribute %q belongs to no part", ErrInvalid, k, name)
		}
	}
	return k, av, nil
}

// partWrite builds part p's write from av: for a part with a Large value,
// also the write of its value.
func (s *Store[T]) partWrite(p *part, k Key, av map[string]types.AttributeValue) (write, *largeWrite, error) {
	if p.Large != nil {
		return s.largePut(p, k, av)
	}
	w, err := s.putWrite(p, k, av)
	return w, nil, err
}

// putWrite builds part p's item from av and checks its size.
func (s *Store[T]) putWrite(p *part, k Key, av map[string]types.AttributeValue) (write, error) {
	km, err := p.key(s.l, k)
	if err != nil {
		return write{}, err
	}
	item := make(map[string]types.AttributeValue, len(km)+len(p.Attributes)+1)
	p.copyAttrs(item, av)
	for n, v := range km {
		item[n] = v
	}
	if _, err := ddbsize.CheckItem(item); err != nil {
		e := ErrInvalid
		if errors.Is(err, ddbsize.ErrItemTooLarge) {
			e = ErrItemTooLarge
		}
		return write{}, &PartError{Part: p.Name, Table: p.table, Key: k, Err: fmt.Errorf("%w: %w", e, err)}
	}
	return write{p: p, key: km, item: item}, nil
}

// returned is item with the versions of av.
func (s *Store[T]) returned(item T, av map[string]types.AttributeValue, o Options) (T, error) {
	v := item
	vs := map[string]types.AttributeValue{}
	for _, p := range s.order {
		if p.Version != "" && av[p.Version] != nil {
			vs[p.Version] = av[p.Version]
		}
	}
	if err := s.decode(vs, &v, o); err != nil {
		return item, err
	}
	return v, nil
}

func (s *Store[T]) putOne(ctx context.Context, k Key, w write) error {
	in := &dynamodb.PutItemInput{
		TableName:                           aws.String(w.p.table),
		Item:                                w.item,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}
	if w.cond.IsSet() {
		expr, err := expression.NewBuilder().WithCondition(w.cond).Build()
		if err != nil {
			return fmt.Errorf("%w: split: Put %v part %q: %w", ErrInvalid, k, w.p.Name, err)
		}
		in.ConditionExpression, in.ExpressionAttributeNames, in.ExpressionAttributeValues = expr.Condition(), expr.Names(), expr.Values()
	}
	var a attempts.Counter
	if _, err := observe.Do(ctx, s.c.PutItem, in, a.Option); err != nil {
		if uerr := retried(&a, "Put", k, w, err); uerr != nil {
			return uerr
		}
		return s.failed(ctx, "Put", k, w, err)
	}
	return nil
}

func (s *Store[T]) deleteOne(ctx context.Context, k Key, w write) error {
	in := &dynamodb.DeleteItemInput{TableName: aws.String(w.p.table), Key: w.key}
	if w.cond.IsSet() {
		expr, err := expression.NewBuilder().WithCondition(w.cond).Build()
		if err != nil {
			return fmt.Errorf("%w: split: Delete %v part %q: %w", ErrInvalid, k, w.p.Name, err)
		}
		in.ConditionExpression, in.ExpressionAttributeNames, in.ExpressionAttributeValues = expr.Condition(), expr.Names(), expr.Values()
	}
	var a attempts.Counter
	if _, err := observe.Do(ctx, s.c.DeleteItem, in, a.Option); err != nil {
		if uerr := retried(&a, "Delete", k, w, err); uerr != nil {
			return uerr
		}
		return s.failed(ctx, "Delete", k, w, err)
	}
	return nil
}
