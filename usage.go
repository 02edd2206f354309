package dynashard

import (
	"context"

	"github.com/dynashard/dynashard/internal/observe"
)

// Usage totals what DynamoDB reported for every request of the dynashard
// calls made with a context that carries it ([WithUsage]): capacity units
// per table and index, requests sent, throttled attempts and unprocessed
// batch entries. One call or many, from any package (shard, scatter,
// chunk, repo, split, timeseries) and any goroutine: a Usage is safe for
// concurrent use, and its zero value is empty and ready. A nil *Usage
// reports nothing, and its Reset does nothing.
//
// The context is the one way to ask because it reaches every entry point
// and every request a call makes on its behalf (a repo Put's chunk
// writes, a Put's layout-record read, a Load's retries), the way
// net/http/httptrace does.
//
// Cost: each request of such a call asks DynamoDB for its consumed
// capacity (ReturnConsumedCapacity INDEXES), which makes answers slightly
// larger; DynamoDB charges nothing for it. The client's own work is about
// 1 µs and a few allocations per request; DynamoDB Local answers such
// requests measurably slower (a Put 1.1× in examples/observability's
// BenchmarkObserve, a scatter Page 1.01×). A request that fails reports
// no capacity, though DynamoDB charges for some (a write refused by its
// condition): such calls are under-counted. The figures are the
// server's own, and local servers depart from DynamoDB's (measured on
// DynamoDB Local 1.25.1 and dynalite 4.0.0): DynamoDB Local charges a
// TransactWriteItems 4 write units per started KB per action (DynamoDB:
// 2) and counts actions of equal size once, a BatchWriteItem delete of an
// absent key 2 units, a BatchGetItem key with no item nothing; dynalite
// has no transactions, charges the minimum for a missing BatchGetItem
// key, and sizes strings in UTF-16 units.
type Usage struct{ t observe.Tally }

// WithUsage returns a context that makes every dynashard call made with
// it (or a context derived from it) add to u. Calls nest: a context that
// already carries a Usage adds to both. Each Usage counts a request once,
// however often it is in the chain (u, then v, then u again counts each
// request once in u). With a nil u or a nil ctx it returns ctx unchanged:
// every dynashard call refuses a nil ctx with ErrInvalid.
func WithUsage(ctx context.Context, u *Usage) context.Context {
	if ctx == nil || u == nil {
		return ctx
	}
	outer, _ := ctx.Value(usageKey{}).(*usageLink)
	for l := outer; l != nil; l = l.next {
		if l.u == u {
			return ctx // u counts every request of ctx already
		}
	}
	ctx = observe.WithTally(ctx, &u.t)
	return context.WithValue(ctx, usageKey{}, &usageLink{u: u, next: outer})
}

// usageKey is the context key of the Usages a context adds to: a list,
// innermost first.
type usageKey struct{}

type usageLink struct {
	u    *Usage
	next *usageLink
}

// Capacity is capacity units DynamoDB reported.
type Capacity struct {
	Read, Write float64
}

// Total is read and write units together.
func (c Capacity) Total() float64 { return c.Read + c.Write }

// Total returns the units reported so far over every table.
func (u *Usage) Total() Capacity {
	var c Capacity
	for _, t := range u.report().Tables {
		c.Read += t.Read
		c.Write += t.Write
	}
	return c
}

// Table returns the units reported so far for the table, its indexes'
// included.
func (u *Usage) Table(name string) Capacity {
	return Capacity(u.report().Tables[name])
}

// Index returns the units reported so far for one index (global or local
// secondary) of a table.
func (u *Usage) Index(table, index string) Capacity {
	return Capacity(u.report().Indexes[table][index])
}

// Tables returns a copy of the units reported so far, by table name.
func (u *Usage) Tables() map[string]Capacity {
	r := u.report()
	m := make(map[string]Capacity, len(r.Tables))
	for k, v := range r.Tables {
		m[k] = Capacity(v)
	}
	return m
}

// Requests returns the DynamoDB requests sent so far (an SDK call with
// its retries counts once).
func (u *Usage) Requests() int64 { return u.report().Requests }

// Throttled returns the request attempts that met throttling so far
// (ProvisionedThroughputExceededException, ThrottlingException and the
// others the SDK classifies so), the ones the SDK retried included.
func (u *Usage) Throttled() int64 { return u.report().Throttled }

// Unprocessed returns the batch entries DynamoDB returned unprocessed so
// far (UnprocessedItems and UnprocessedKeys), each time it returned one.
func (u *Usage) Unprocessed() int64 { return u.report().Unprocessed }

// Reset forgets every figure.
func (u *Usage) Reset() {
	if u != nil {
		u.t.Reset()
	}
}

// report is u's figures; none for a nil u.
func (u *Usage) report() observe.Report {
	if u == nil {
		return observe.Report{}
	}
	return u.t.Report()
}
