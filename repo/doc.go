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
// applied, as with any DynamoDB write. The cache is per process: writes by
// other processes are seen after CacheTTL.
package repo
