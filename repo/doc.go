// Package repo is a typed repository over a sharded DynamoDB table: the
// layer a Go service puts between its handlers and dynashard.
//
// A Repo[T] stores values of T (structs, through attributevalue) under a
// logical key, the base (a day, a tenant, a status), spread over N physical
// partition keys by a calculated shard.Strategy (shard.Hash by default). An
// item is found again by (base, id) with one GetItem; a whole base is listed
// with a parallel scatter-gather Query, with a limit and an opaque cursor, or
// counted. Optionally a version attribute gives optimistic locking, a
// read-through cache takes load off hot items, and one large attribute is
// stored through package chunk when it outgrows a threshold.
//
// Errors callers branch on match ErrNotFound, ErrConflict, ErrBadCursor and
// ErrInvalid with errors.Is; SDK errors are wrapped once and stay reachable
// with errors.As.
//
// # Limits and failure modes
//
// An item (with its physical key) must fit DynamoDB's 400 KB item limit
// unless its large attribute goes through a LargeField; bad input is
// rejected before any request. Get and Put are one request each. With a
// LargeField, Put reads the current version and then updates the item (two
// requests) plus the BatchWriteItems of a chunked value, and Get adds the
// BatchGetItems of a chunked value; a value kept inline costs nothing more.
// List and Count send one Query per suffix, in parallel, bounded by
// MaxConcurrency; a failing suffix fails the call. A Put that returns an
// error other than ErrConflict or ErrInvalid may or may not have been
// applied, as with any DynamoDB write.
//
// Reads are eventually consistent unless Options.ConsistentRead is set
// (the cache's excepted, below): a Get, List, All or Count may then miss a
// write that succeeded a moment before, and an uncached Get right after a
// Put may return the previous value.
//
// # The cache
//
// The cache belongs to one Repo: two Repos over the same table, in one
// process or several, each have their own. It is filled only by strongly
// consistent reads, whatever ConsistentRead says, and a read that overlaps
// a write through the same Repo is not kept, so after a Put or Delete
// through a Repo returns, its Gets never return an older value. Writes
// through anything else (another Repo, another process) are seen once the
// entry expires, after at most CacheTTL. Every Get returns its own copy,
// decoded from the stored item: modifying it changes nothing that later
// Gets return.
//
// # Panics
//
// Nothing panics on input: a nil ctx, like any bad input, fails with
// ErrInvalid before any request. A panic in code the Repo calls, such as
// T's marshalling methods or the Client, reaches the caller's goroutine,
// where recover works, also when it happens on a goroutine of the Repo's
// (the cache's shared load, List's parallel reads of large values): it is
// raised again there as an error that unwraps to the original value if that
// was an error, and carries the stack where it happened. (A panic in the
// Client during the parallel Queries of List, All and Count, or the chunk
// reads of a large value, happens on a goroutine of package scatter or
// chunk, and is as those packages handle it.)
package repo
