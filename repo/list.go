package repo

import (
	"context"
	"iter"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"golang.org/x/sync/errgroup"

	"github.com/dynashard/dynashard/internal/observe"
	"github.com/dynashard/dynashard/internal/panics"
	"github.com/dynashard/dynashard/scatter"
)

// List returns up to limit items of base in id order, starting after the
// position after (the empty Cursor: from the beginning), and the cursor of
// the next page (the empty Cursor when there is none). Cursors are bound
// to this table and base; a cursor made for anything else, or altered, is
// rejected with ErrInvalidCursor before any request. The layout is checked
// against base's record before the first Query. Large values of the page's
// items are read in parallel; items are decoded on the caller's goroutine.
// Per call, ConsistentRead, SkipLarge and MaxConcurrency apply.
func (r *Repo[T]) List(ctx context.Context, base string, limit int, after scatter.Cursor, optFns ...func(*Options)) (_ []T, _ scatter.Cursor, err error) {
	ctx, call := r.start(ctx, "repo.List", base)
	defer func() { call.End(ctx, err) }()
	o, err := r.call(ctx, optFns)
	if err != nil {
		return nil, "", err
	}
	items, next, err := r.sc.Page(ctx, base, limit, after, o.scatter)
	if err != nil {
		return nil, "", err
	}
	stored := make([]map[string]types.AttributeValue, len(items))
	for i, it := range items {
		stored[i] = it.Attrs
	}
	if r.opts.Large != nil && !o.SkipLarge {
		if err := r.resolveAll(ctx, base, stored, o); err != nil {
			return nil, "", err
		}
	}
	out := make([]T, len(stored))
	for i, av := range stored {
		if out[i], err = r.decode(av); err != nil {
			return nil, "", err
		}
	}
	call.SetInt(observe.AttrItems, len(out))
	return out, next, nil
}

// resolveAll reads the large values of listed items in parallel, at most
// o.MaxConcurrency at once (default 8), replacing each item with its
// completed form. A panic on one of its goroutines (in a Client or a
// Strategy) is raised again on the caller's.
func (r *Repo[T]) resolveAll(ctx context.Context, base string, items []map[string]types.AttributeValue, o Options) error {
	var panicked panics.Group
	g, gctx := errgroup.WithContext(ctx)
	limit := o.MaxConcurrency
	if limit <= 0 {
		limit = defaultResolve
	}
	g.SetLimit(limit)
	for i, it := range items {
		g.Go(func() (err error) {
			defer panicked.Recover(&err)
			items[i], err = r.resolveLarge(gctx, base, it, o.ConsistentRead)
			return err
		})
	}
	err := g.Wait()
	panicked.Raise()
	return err
}

// All yields every item of base in id order. Nothing is sent before the
// first iteration; then the layout is checked against base's record, and
// breaking out of the loop stops the reads. An error is the last pair
// yielded. Per call, ConsistentRead, SkipLarge and MaxConcurrency apply.
func (r *Repo[T]) All(ctx context.Context, base string, optFns ...func(*Options)) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		ctx, call := r.start(ctx, "repo.All", base)
		var (
			items int
			err   error
		)
		defer func() {
			call.SetInt(observe.AttrItems, items)
			call.End(ctx, err)
		}()
		var o Options
		if o, err = r.call(ctx, optFns); err != nil {
			var zero T
			yield(zero, err)
			return
		}
		for it, ierr := range r.sc.All(ctx, base, o.scatter) {
			var v T
			if err = ierr; err == nil {
				v, err = r.fromStored(ctx, base, it.Attrs, o)
			}
			if err == nil {
				items++
			}
			if !yield(v, err) || err != nil {
				return
			}
		}
	}
}

// FromStored turns an item as the table stores it into T: a stream
// record's new image (package stream's Change.Attributes), or an item of
// a Scan or Query of your own. With a LargeField it reads the large
// attribute's chunks if the item names any, as Get does (per call,
// ConsistentRead and SkipLarge apply); the item's base comes from its
// partition key. If a later write replaced the value's chunks,
// FromStored returns the value that write stored, read again.
func (r *Repo[T]) FromStored(ctx context.Context, item map[string]types.AttributeValue, optFns ...func(*Options)) (_ T, err error) {
	var zero T
	o, err := r.call(ctx, optFns)
	if err != nil {
		return zero, err
	}
	pk, _ := item[r.layout.PartitionKey].(*types.AttributeValueMemberS)
	if pk == nil {
		return zero, r.invalid("FromStored: the item has no partition key %q of type S", r.layout.PartitionKey)
	}
	base, _, err := r.layout.Codec.Parse(pk.Value)
	if err != nil {
		return zero, r.invalid("FromStored: partition key %q: %w", pk.Value, err)
	}
	ctx, call := r.start(ctx, "repo.FromStored", base)
	defer func() { call.End(ctx, err) }()
	return r.fromStored(ctx, base, item, o)
}

// fromStored turns a listed item into T, reading its large attribute's
// chunks if it has any and o does not skip them.
func (r *Repo[T]) fromStored(ctx context.Context, base string, av map[string]types.AttributeValue, o Options) (T, error) {
	if r.opts.Large != nil && !o.SkipLarge {
		var err error
		if av, err = r.resolveLarge(ctx, base, av, o.ConsistentRead); err != nil {
			var zero T
			return zero, err
		}
	}
	return r.decode(av)
}

// Count returns the number of items under base, counted by DynamoDB
// without transferring them, after the layout check. Per call,
// ConsistentRead and MaxConcurrency apply.
func (r *Repo[T]) Count(ctx context.Context, base string, optFns ...func(*Options)) (_ int64, err error) {
	ctx, call := r.start(ctx, "repo.Count", base)
	defer func() { call.End(ctx, err) }()
	o, err := r.call(ctx, optFns)
	if err != nil {
		return 0, err
	}
	return r.sc.Count(ctx, base, o.scatter)
}
