package record

import (
	"context"
	"fmt"
	"time"

	"github.com/dynashard/dynashard/internal/errs"
)

// Shards is base's shard-count history, checked against its record
// (shard.Table.Shards). due reports that it came from a cache entry past
// half its HistoryTTL: scatter then reads the record again beside its
// own requests, so that a base read at least that often never waits for
// its record.
func (d Layout) Shards(ctx context.Context, c Reader, base string) (h []int, due bool, err error) {
	v, err := d.History(ctx, c, base, d.TTL)
	ttl := v.Trust(d.TTL)
	due = err == nil && !d.Unchecked && ttl > 0 && time.Since(v.At) >= ttl/2
	return v.Shards, due, err
}

// History is base's view, checked against its record, from the cache if
// no older than maxAge; maxAge 0 reads the record. A base without a
// record has the history [N], and nothing is written.
func (d Layout) History(ctx context.Context, c Reader, base string, maxAge time.Duration) (View, error) {
	return d.cachedView(ctx, c, base, maxAge, "verify", func() (View, error) {
		at := time.Now()
		rec, ok, err := d.Read(ctx, c, base)
		if err != nil {
			return View{}, err
		}
		if !ok {
			return View{Shards: []int{d.N}, At: at}, nil
		}
		return d.Accept(Database(ctx, c), base, rec)
	})
}

// Recorded checks d against the record of base before a write, and
// writes the record if there is none, with a conditional put so that
// processes racing with different layouts agree: exactly one record is
// written, and every layout that differs from it in anything but N then
// fails with a *shard.LayoutError. A new base's history starts as [N].
// It returns the base's view, from the cache if no older than maxAge.
func (d Layout) Recorded(ctx context.Context, c Writer, base string, maxAge time.Duration) (View, error) {
	return d.cachedView(ctx, c, base, maxAge, "record", func() (View, error) { return d.record(ctx, c, base) })
}

// cachedView is base's view from the process's cache if no older than
// maxAge, else from load, one load per (layout, base, what) at a time;
// an Unchecked layout's view is [N] without a request. c is the client
// load uses, checked here.
func (d Layout) cachedView(ctx context.Context, c Reader, base string, maxAge time.Duration, what string, load func() (View, error)) (View, error) {
	if ctx == nil || errs.IsNil(c) {
		return View{}, fmt.Errorf("%w: table %s: nil ctx or client", errs.Invalid, d.Table)
	}
	if d.Unchecked {
		return View{Shards: []int{d.N}, At: time.Now()}, nil
	}
	k := d.key(Database(ctx, c), base)
	if v, ok := views.get(k, maxAge); ok {
		return v, nil
	}
	return views.once(ctx, k, what, load)
}

func (d Layout) record(ctx context.Context, c Writer, base string) (View, error) {
	for range 2 {
		at := time.Now()
		rec, ok, err := d.Read(ctx, c, base)
		if err != nil {
			return View{}, err
		}
		if ok {
			return d.Accept(Database(ctx, c), base, rec)
		}
		err = d.Write(ctx, c, base, d.N)
		if !condFailed(err) {
			if err != nil {
				return View{}, err
			}
			v := d.Created(d.N, at)
			d.Add(Database(ctx, c), base, v)
			return v, nil
		}
		// Another writer recorded the base first: compare with its record.
	}
	return View{}, fmt.Errorf("shard: table %s base %q: layout record kept changing", d.Table, clip(base))
}

// Accept checks rec against d and caches its view in database db.
func (d Layout) Accept(db, base string, rec Record) (View, error) {
	if rec.Shape != d.Shape {
		return View{}, d.mismatchErr(base, rec.String(d.Table), nil)
	}
	v := View{Shards: rec.Shards, Pending: rec.Pending, Rev: rec.Rev, At: rec.At, Got: rec.Got,
		TTL: rec.TTL, Wait: rec.Wait, Recorded: rec.Recorded}
	d.Add(db, base, v)
	return v, nil
}

// Created is the view of a record d writes with the history [n], sent
// at at.
func (d Layout) Created(n int, at time.Time) View {
	return View{Shards: []int{n}, Rev: 1, At: at, TTL: d.TTL, Wait: Fence(d.TTL), Recorded: true}
}
