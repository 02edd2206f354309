// Package repo is a typed repository over a sharded DynamoDB table: the
// layer a Go service puts between its handlers and dynashard.
//
// Pick shard.Table for typed access to a sharded table's items with
// conditions of your own and bulk Load, and no policy; pick repo.Repo for
// an application repository with a policy: listing a base, a cache,
// optimistic versions and one large field.
//
// # Model
//
// A Repo[T] stores values of T (structs, through attributevalue) in the
// table a shard.Layout describes, the same value every dynashard entry
// point is built from: under a logical key, the base (a day, a tenant, a
// status), spread over N physical partition keys by the layout's
// calculated strategy, with the item's id in the sort key (type S). An item
// is found again by (base, id) with one GetItem; a whole base is listed
// with a parallel scatter-gather Query (package scatter), with a limit and
// a scatter.Cursor, or counted.
//
//	orders, err := repo.New[Order](client, layout)
//	o, err := orders.Get(ctx, "2014-07-09", "ORD-3")
//	page, next, err := orders.List(ctx, "2014-07-09", 50, cursor, func(o *repo.Options) { o.ConsistentRead = true })
//
// New takes the SDK's shape: the client and the layout positional,
// everything else in Options through optFns, every field's zero value its
// default. Every call takes optFns too, applied to a copy of the Repo's
// Options for that call only; per call, only ConsistentRead, SkipLarge and
// MaxConcurrency take effect. Opt-in, all off by default: a version
// attribute for optimistic locking (Options.Version), a read-through cache
// that takes load off hot items (Options.CacheEntries), and one large
// attribute stored through package chunk when it outgrows a threshold
// (Options.Large).
//
// # The layout check
//
// Before its first data request for a base, every call checks the Repo's
// layout against the layout recorded for that base in the table
// (as shard.Table.Shards does; a write records the layout of a base
// never written): a Repo built
// with another separator, strategy or key fails with a *shard.LayoutError,
// matching shard.ErrLayoutMismatch (not ErrInvalid), instead of reading or
// writing the wrong physical keys; a Repo built with another N reads and
// writes the base at the shard counts recorded for it (see shard's
// Resharding). Put, Get and
// Delete check through shard.Table or, with a LargeField, themselves
// before the chunk store reads or writes the item; List, All and Count
// through package scatter. The cost is one strongly consistent GetItem per
// base per client per shard.Layout.HistoryTTL (10 s by default: a match
// is cached with the base's shard counts that long), plus one PutItem the first time a base is written, large-field
// writes included; a base without a record (written by other code) pays
// the GetItem on every read. A Layout with Unchecked set is trusted and
// costs nothing.
//
// # Errors
//
// Errors callers branch on match, with errors.Is, the families every
// dynashard package shares: ErrInvalid (input rejected before any request,
// or an unusable configuration at New; ErrInvalidCursor is a kind of it),
// ErrNotFound and ErrConflict (a failed version check or Create). A layout
// mismatch matches shard.ErrLayoutMismatch, and a base's layout record
// that dynashard did not write, shard.ErrMalformedRecord. SDK errors are
// wrapped once and stay reachable with errors.As.
//
// # Limits and failure modes
//
// An item (with its physical key) must fit DynamoDB's 400 KB item limit
// unless its large attribute goes through a LargeField; bad input is
// rejected before any request (a large-field Put's attributes are checked
// by the chunk store, after the layout check). Get and Put are one request
// each after the layout check. With a LargeField, Put reads the current
// version and then updates the item (two requests) plus the BatchWriteItems
// of a chunked value, and Get adds the BatchGetItems of a chunked value; a
// value kept inline costs nothing more. List and Count send one Query per
// suffix, in parallel, bounded by MaxConcurrency; a failing suffix fails
// the call. A Put that returns an error other than ErrConflict or
// ErrInvalid may or may not have been applied, as with any DynamoDB write.
//
// Reads are eventually consistent unless Options.ConsistentRead is set,
// for the Repo or for one call (the cache's excepted, below): a Get, List,
// All or Count may then miss a write that succeeded a moment before, and
// an uncached Get right after a Put may return the previous value. A large
// value is the one the item as read names (or, if that was replaced
// meanwhile, the current one), never a mix.
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
// Gets return. With a MeterProvider on the client, every Get through the
// cache counts one lookup (dynashard.cache.lookups, hit or miss) and the
// entries it evicted (dynashard.cache.evictions); CacheStats counts the
// same for this Repo alone.
//
// # Cost
//
// dynashard.Usage measures what calls cost as DynamoDB reports it: with a
// context from dynashard.WithUsage, every request of a Repo call (the
// layout check's, the item's, a large value's chunk reads and writes) adds
// its consumed capacity to it, per table. Each call is also a span
// (dynashard.repo.Get, …, around the spans of the shard, scatter and chunk
// calls it makes) when the client has a TracerProvider. A Get served by
// the cache sends nothing and costs nothing.
//
// # Panics
//
// Nothing panics on input: a nil ctx, like any bad input, fails with
// ErrInvalid before any request. A panic in code the Repo calls, such as
// T's marshalling methods, a Strategy or the Client, reaches the caller's
// goroutine, where recover works, also when it happens on a goroutine of
// the Repo's (the cache's shared load, List's parallel reads of large
// values): it is raised again there as an error that unwraps to the
// original value if that was an error, and carries the stack where it
// happened. (A panic in the Client during the parallel Queries of List,
// All and Count, or the chunk reads of a large value, happens on a
// goroutine of package scatter or chunk, and is as those packages handle
// it.)
//
// A Repo is safe for concurrent use.
package repo
