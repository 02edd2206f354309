package split

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynashard/dynashard/chunk"
	"github.com/dynashard/dynashard/internal/ddbsize"
	"github.com/dynashard/dynashard/internal/observe"
	"github.com/dynashard/dynashard/internal/parentio"
)

// LargeField stores one attribute of a part through a chunk store, so its
// value may exceed DynamoDB's 400 KB item limit: repo's LargeField, for a
// part. The part's item is the store's parent item: the store keeps a
// value up to its InlineLimit inside the item and a larger one in chunk
// items of its chunk table (or, with chunk.Options.Objects, in an
// object), and switches the item's other attributes and the value
// together in one conditional update (the flip), so a reader never sees
// the part's new attributes with its old value. See "Large parts" in the
// package doc for what each operation costs and guarantees.
//
// The attribute must marshal to B ([]byte), S (string) or NULL (an empty
// value); reading gives back the type written. The zero value has no
// store; Layout.Validate refuses it.
type LargeField struct {
	// Attribute names the attribute, as T marshals it. It must be one of
	// the part's Attributes, not its Version.
	Attribute string
	// Store is the chunk store: its parent table must be the part's
	// table, its chunk table a table of its own (no part's table, no
	// other large part's chunk table), and its Options.Guide unset.
	Store *chunk.Store
}

// largeIsString records on a large part's item that its value was a
// string, so reads give back the type T declared (as package repo does).
const largeIsString = "dynashard_large_s"

// chunkVersion is the chunk store's parent attribute holding the current
// version (chunk's documented parent layout): a part's item holds a large
// value exactly when it has one.
const chunkVersion = "ChunkVersion"

// largeAttempts bounds how often a write of a large part starts over
// after losing its flip to a concurrent write of the value while the
// part's own conditions still hold.
const largeAttempts = chunk.DefaultReadAttempts

func (lf *LargeField) check(p Part) error {
	switch {
	case lf.Store == nil:
		return fmt.Errorf("part.Large %q has no chunk store", lf.Attribute)
	case lf.Attribute == "" || !slices.Contains(p.Attributes, lf.Attribute):
		return fmt.Errorf("part.Large attribute %q is not one of the part's Attributes %q", lf.Attribute, p.Attributes)
	case slices.Contains(p.Attributes, largeIsString):
		return fmt.Errorf("attribute %q is kept by the part's large value", largeIsString)
	}
	in, err := lf.Store.ParentTableInput(chunk.Key{PartitionName: "k", Partition: &types.AttributeValueMemberS{Value: "k"}})
	if err != nil {
		return fmt.Errorf("part.Large %q: %w", lf.Attribute, err)
	}
	if t := aws.ToString(in.TableName); t != p.table() {
		return fmt.Errorf("part.Large %q: the chunk store's parent table is %q, not the part's table %q", lf.Attribute, t, p.table())
	}
	return nil
}

// chunkTable returns the store's chunk table; check has accepted lf.
func (lf *LargeField) chunkTable() string {
	in, err := lf.Store.ChunkTableInput()
	if err != nil {
		return ""
	}
	return aws.ToString(in.TableName)
}

// chunkKey is the chunk store's key of the part's item with key km: the
// physical key, as the guide names chunks (a part's item never moves).
func (p *part) chunkKey(km map[string]types.AttributeValue) chunk.Key {
	k := chunk.Key{PartitionName: p.keys[0], Partition: km[p.keys[0]]}
	if len(p.keys) > 1 {
		k.SortName, k.Sort = p.keys[1], km[p.keys[1]]
	}
	return k
}

// largeWrite is the write of a large part: the value, and the part's
// other attributes for the flip.
type largeWrite struct {
	i     int // its write's index in the call's writes
	key   chunk.Key
	data  []byte
	attrs map[string]types.AttributeValue
}

// largePut builds the write of large part p from av: its item without the
// value is checked against the item limit here, the value by the store.
func (s *Store[T]) largePut(p *part, k Key, av map[string]types.AttributeValue) (write, *largeWrite, error) {
	km, err := p.key(s.l, k)
	if err != nil {
		return write{}, nil, err
	}
	perr := func(e error) error { return &PartError{Part: p.Name, Table: p.table, Key: k, Err: e} }
	lw := &largeWrite{key: p.chunkKey(km), attrs: map[string]types.AttributeValue{}}
	null := &types.AttributeValueMemberNULL{Value: true}
	lw.attrs[largeIsString] = null // clears the flag of an earlier string
	switch v := av[p.Large.Attribute].(type) {
	case nil, *types.AttributeValueMemberNULL:
	case *types.AttributeValueMemberB:
		lw.data = v.Value
	case *types.AttributeValueMemberS:
		lw.data = []byte(v.Value)
		lw.attrs[largeIsString] = &types.AttributeValueMemberBOOL{Value: true}
	default:
		return write{}, nil, perr(fmt.Errorf("%w: large attribute %q is %T, want B or S", ErrInvalid, p.Large.Attribute, v))
	}
	for _, a := range p.Attributes {
		if a == p.Large.Attribute {
			continue
		}
		// The flip sets attributes and leaves others as they are: an
		// attribute T leaves out is cleared, as a PutItem would.
		lw.attrs[a] = null
		if v, ok := av[a]; ok {
			lw.attrs[a] = v
		}
	}
	if v, ok := av[p.Version]; ok && p.Version != "" {
		lw.attrs[p.Version] = v
	}
	item := maps.Clone(lw.attrs)
	maps.Copy(item, km)
	if _, err := ddbsize.CheckItem(item); err != nil {
		e := ErrInvalid
		if errors.Is(err, ddbsize.ErrItemTooLarge) {
			e = ErrItemTooLarge
		}
		return write{}, nil, perr(fmt.Errorf("%w: without its large value: %w", e, err))
	}
	return write{p: p, key: km}, lw, nil
}

// writeLarge runs a Create or Put whose writes ws include the large part
// lw: the chunk store writes the value and flips the part's item, in a
// TransactWriteItems with the other parts' writes when there are others
// (or when tx is set), through the part's parentio client. A flip lost to
// a concurrent write of the value is tried again while the part's own
// conditions hold.
func (s *Store[T]) writeLarge(ctx context.Context, op string, k Key, ws []write, lw *largeWrite, tx bool) error {
	items, err := s.txItems(op, k, ws, lw.i)
	if err != nil {
		return err
	}
	w := ws[lw.i]
	tx = tx || len(ws) > 1
	if putBack.largeApart && len(ws) > 1 {
		// The bug: the other parts in a transaction of their own (after
		// checking that the item exists), then the large part's write
		// alone.
		if out, err := observe.Do(ctx, s.c.GetItem, &dynamodb.GetItemInput{TableName: aws.String(w.p.table), Key: w.key, ConsistentRead: aws.Bool(true)}); err != nil || (op == "Put" && len(out.Item) == 0) {
			return &PartError{Part: w.p.Name, Table: w.p.table, Key: k, Err: fmt.Errorf("%w: %v", ErrNotFound, err)}
		}
		in := &dynamodb.TransactWriteItemsInput{TransactItems: slices.Delete(slices.Clone(items), lw.i, lw.i+1)}
		if _, err := observe.Do(ctx, s.c.TransactWriteItems, in); err != nil {
			return s.txError(op, k, slices.Delete(slices.Clone(ws), lw.i, lw.i+1), err)
		}
		ws, lw.i, tx = []write{w}, 0, false
	}
	for range largeAttempts {
		pio := &partIO[T]{s: s, op: op, k: k, ws: ws, li: lw.i, items: items, tx: tx, check: op == "Put"}
		_, err = w.p.Large.Store.Put(parentio.With(ctx, pio), lw.key, lw.data, func(po *chunk.PutOptions) {
			po.Attributes, po.Condition = lw.attrs, w.cond
		})
		if err == nil {
			return nil
		}
		var again bool
		if err, again = s.largeFailed(ctx, op, k, ws, lw.i, tx, err); !again {
			return err
		}
	}
	return &PartError{Part: w.p.Name, Table: w.p.table, Key: k,
		Err: fmt.Errorf("split: %s: %w: the large value was replaced by other writes on each of %d attempts", op, ErrConflict, largeAttempts)}
}

// errPartMissing and errPartStale are what a Put's first read of its
// large part found (partIO.GetItem): the write stops there.
var (
	errPartMissing = errors.New("split: the part does not exist")
	errPartStale   = errors.New("split: the part's version is not the value's")
)

// largeFailed turns the error of a chunk store's Put of large part ws[li]
// into the package's errors, or says to start over: the flip lost to a
// concurrent write of the value and the part's own conditions hold.
func (s *Store[T]) largeFailed(ctx context.Context, op string, k Key, ws []write, li int, tx bool, err error) (error, bool) {
	w := ws[li]
	perr := func(e error) error { return &PartError{Part: w.p.Name, Table: w.p.table, Key: k, Err: e} }
	var tce *types.TransactionCanceledException
	switch {
	case errors.Is(err, errPartMissing):
		return perr(fmt.Errorf("split: %s: %w: the part does not exist", op, ErrNotFound)), false
	case errors.Is(err, errPartStale):
		return perr(fmt.Errorf("split: %s: %w: %w", op, ErrConflict, err)), false
	case errors.Is(err, chunk.ErrTooLarge):
		return perr(fmt.Errorf("split: %s: %w: %w", op, ErrItemTooLarge, err)), false
	case errors.Is(err, ErrInvalid):
		return perr(fmt.Errorf("split: %s: %w", op, err)), false
	case op == "Put" && errors.As(err, &tce) && reasonAt(tce, li) == "ConditionalCheckFailed":
		lerr := s.largeCheck(ctx, op, k, w)
		if lerr == nil && othersPassed(tce, li) {
			return err, true
		}
		ws = slices.Clone(ws)
		ws[li].onlyExists = errors.Is(lerr, ErrNotFound)
		return s.txError(op, k, ws, err), false
	case op == "Put" && !tx && errors.Is(err, ErrConflict):
		if lerr := s.largeCheck(ctx, op, k, w); lerr != nil {
			return lerr, false
		}
		return err, true
	case tx:
		return s.txError(op, k, ws, err), false
	}
	return perr(fmt.Errorf("split: %s: %w", op, err)), false
}

// largeCheck reads large part w consistently after its flip was refused,
// to tell why: nil when the part exists and its version is the one the
// write expected, so only the value's own version, which the chunk store
// checks, had changed (unless a condition of the caller's, which split
// cannot evaluate, was involved: then ErrConflict).
func (s *Store[T]) largeCheck(ctx context.Context, op string, k Key, w write) error {
	perr := func(e error) error { return &PartError{Part: w.p.Name, Table: w.p.table, Key: k, Err: e} }
	in := &dynamodb.GetItemInput{TableName: aws.String(w.p.table), Key: w.key, ConsistentRead: aws.Bool(true)}
	out, err := observe.Do(ctx, s.c.GetItem, in)
	if err != nil {
		return perr(fmt.Errorf("split: %s: %w: the large value's flip was refused (and reading the part to tell why failed: %w)", op, ErrConflict, err))
	}
	switch {
	case len(out.Item) == 0:
		return perr(fmt.Errorf("split: %s: %w: the part does not exist", op, ErrNotFound))
	case w.versioned && versionOf(out.Item, w.p.Version) != w.expect:
		return perr(fmt.Errorf("split: %s: %w: %w", op, ErrConflict, errPartStale))
	case w.userCond:
		return perr(fmt.Errorf("split: %s: %w: the large value's flip was refused: the value changed first or the caller's condition failed", op, ErrConflict))
	}
	return nil
}

func versionOf(item map[string]types.AttributeValue, name string) int64 {
	var v int64
	if n, ok := item[name].(*types.AttributeValueMemberN); ok {
		v, _ = strconv.ParseInt(n.Value, 10, 64)
	}
	return v
}

// reasonAt is the cancellation reason of action i of a cancelled
// transaction.
func reasonAt(tce *types.TransactionCanceledException, i int) string {
	if i < 0 || i >= len(tce.CancellationReasons) {
		return ""
	}
	return aws.ToString(tce.CancellationReasons[i].Code)
}

// othersPassed reports whether every action of the transaction but li
// passed.
func othersPassed(tce *types.TransactionCanceledException, li int) bool {
	for i := range tce.CancellationReasons {
		if c := reasonAt(tce, i); i != li && c != "" && c != "None" {
			return false
		}
	}
	return true
}

// deleteLarge deletes the item with key k, whose writes ws include the
// large part ws[li], through its chunk store: the part's item goes first,
// in one TransactWriteItems with the other parts' deletes, and then its
// chunks. When the part holds no value the store sends nothing, and the
// parts are deleted in a transaction on condition that it still holds
// none.
func (s *Store[T]) deleteLarge(ctx context.Context, k Key, ws []write, li int) error {
	w := ws[li]
	items, err := s.txItems("Delete", k, ws, li)
	if err != nil {
		return err
	}
	for range largeAttempts {
		pio := &partIO[T]{s: s, op: "Delete", k: k, ws: ws, li: li, items: items, tx: len(ws) > 1}
		err := w.p.Large.Store.Delete(parentio.With(ctx, pio), w.p.chunkKey(w.key))
		switch {
		case err != nil && !pio.tx:
			return &PartError{Part: w.p.Name, Table: w.p.table, Key: k, Err: fmt.Errorf("split: Delete: %w", err)}
		case err != nil:
			return s.txError("Delete", k, ws, err)
		case pio.sent || !pio.tx:
			return nil
		}
		none := slices.Clone(ws)
		none[li].cond = expression.AttributeNotExists(expression.Name(chunkVersion))
		err = s.transact(ctx, "Delete", k, none)
		var tce *types.TransactionCanceledException
		if err == nil || !errors.As(err, &tce) || reasonAt(tce, li) != "ConditionalCheckFailed" {
			return err
		}
		// A Create stored a value since the store read the part: again.
	}
	return &PartError{Part: w.p.Name, Table: w.p.table, Key: k,
		Err: fmt.Errorf("split: Delete: %w: the large value was replaced on each of %d attempts", ErrConflict, largeAttempts)}
}

// resolveLarge completes the item of large part p as read: the value is
// inline in it or in the chunks (or object) it names. It returns nil when
// the part was deleted since it was read, and an item that holds no value
// (written by other code) as it is.
func (s *Store[T]) resolveLarge(ctx context.Context, p *part, k Key, item map[string]types.AttributeValue, o Options) (map[string]types.AttributeValue, error) {
	var opt func(*chunk.Options)
	if o.ConsistentRead {
		opt = func(co *chunk.Options) { co.ConsistentRead = true }
	}
	data, info, err := p.Large.Store.Resolve(ctx, p.chunkKey(item), item, opt)
	switch {
	case errors.Is(err, chunk.ErrNotFound):
		if _, had := item[chunkVersion]; had {
			return nil, nil
		}
		return item, nil
	case err != nil:
		return nil, &PartError{Part: p.Name, Table: p.table, Key: k, Err: fmt.Errorf("split: large attribute %q: %w", p.Large.Attribute, err)}
	}
	// The attributes of the version read, which is newer than the item if
	// that was replaced meanwhile: the part as one flip left it.
	av := maps.Clone(info.Attributes)
	if av == nil {
		av = map[string]types.AttributeValue{}
	}
	if f, ok := av[largeIsString].(*types.AttributeValueMemberBOOL); ok && f.Value {
		av[p.Large.Attribute] = &types.AttributeValueMemberS{Value: string(data)}
	} else if len(data) > 0 {
		av[p.Large.Attribute] = &types.AttributeValueMemberB{Value: data}
	}
	return av, nil
}
