// Package repo is a typed repository over a sharded DynamoDB table: the
// layer a Go service puts between its handlers and dynashard.
//
// Pick shard.Table for typed access to a sharded table's items, with
// conditions of your own, bulk Load and no policy. Pick repo.Repo for an
// application repository with a policy: listing a base, a cache,
// optimistic versions and one large field.
//
// # Model
//
// A Repo[T] stores values of T (structs, through attributevalue) in the
// table a shard.Layout describes. That Layout is the same value every
// dynashard entry point is built from. An item lives under a logical key,
// the base (a day, a tenant, a status). The layout's calculated strategy
// spreads the base over N physical partition keys. The item's id is in the
// sort key (type S).
//
// An item is found again by (base, id) with one GetItem. A whole base is
// listed with a parallel scatter-gather Query (package scatter), with a
// limit and a scatter.Cursor, or counted.
//
//	orders, err := repo.New[Order](client, layout)
//	o, err := orders.Get(ctx, "2014-07-09", "ORD-3")
//	page, next, err := orders.List(ctx, "2014-07-09", 50, cursor, func(o *repo.Options) { o.ConsistentRead = true })
//
// New takes the SDK's shape. The client and the layout are positional;
// everything else is in Options, through optFns. Every field's zero value
// is its default. Every call takes optFns too, applied to a copy of the
// Repo's Options for that call only. Per call, only ConsistentRead,
// SkipLarge and MaxConcurrency take effect.
//
// Three features are opt-in, all off by default:
//
//   - a version attribute for optimistic locking (Options.Version);
//   - a read-through cache that takes load off hot items
//     (Options.CacheEntries);
//   - one large attribute, stored through package chunk when it outgrows a
//     threshold (Options.Large).
//
// # The layout check
//
// Before its first data request for a base, every call checks the Repo's
// layout against the layout recorded for that base in the table. It does
// so as shard.Table.Shards does. A write records the layout of a base never
// written.
//
//   - A Repo built with another separator, strategy or key fails with a
//     *shard.LayoutError, matching shard.ErrLayoutMismatch (not ErrInvalid).
//     It does not read or write the wrong physical keys.
//   - A Repo built with another N reads and writes the base at the shard
//     counts recorded for it (see shard's Resharding).
//
// Put, Get and Delete check through shard.Table. With a LargeField, they
// check themselves, before the chunk store reads or writes the item. List,
// All and Count check through package scatter.
//
// The check costs one strongly consistent GetItem per base per client per
// shard.Layout.HistoryTTL (10 s by default). A match is cached with the
// base's shard counts that long. The first write of a base adds one
// PutItem, large-field writes included. A base without a record (written by
// other code) pays the GetItem on every read. A Layout with Unchecked set
// is trusted and costs nothing.
//
// # Errors
//
// Errors callers branch on match, with errors.Is, the families every
// dynashard package shares:
//
//   - ErrInvalid: input rejected before any request, or an unusable
//     configuration at New. ErrInvalidCursor is a kind of it.
//   - ErrNotFound.
//   - ErrConflict: a failed version check or Create.
//
// A layout mismatch matches shard.ErrLayoutMismatch. A base's layout record
// that dynashard did not write matches shard.ErrMalformedRecord. SDK errors
// are wrapped once and stay reachable with errors.As.
//
// # Limits and failure modes
//
// An item (with its physical key) must fit DynamoDB's 400 KB item limit,
// unless its large attribute goes through a LargeField. Bad input is
// rejected before any request. A large-field Put's attributes are checked
// by the chunk store, after the layout check.
//
// Get and Put are one request each after the layout check. With a
// LargeField, Put reads the current version and then updates the item (two
// requests), plus the BatchWriteItems of a chunked value. Get adds the
// BatchGetItems of a chunked value. A value kept inline costs nothing more.
//
// List and Count send one Query per suffix, in parallel, bounded by
// MaxConcurrency. A failing suffix fails the call. A Put that returns an
// error other than ErrConflict or ErrInvalid may or may not have been
// applied, as with any DynamoDB write.
//
// Reads are eventually consistent unless Options.ConsistentRead is set, for
// the Repo or for one call (the cache's reads excepted, below). A Get,
// List, All or Count may then miss a write that succeeded a moment before.
// An uncached Get right after a Put may return the previous value. A large
// value is the one the item as read names, or the current one if that was
// replaced meanwhile: never a mix.
//
// # The cache
//
// The cache belongs to one Repo. Two Repos over the same table, in one
// process or several, each have their own. It is filled only by strongly
// consistent reads, whatever ConsistentRead says. A read that overlaps a
// write through the same Repo is not kept. So after a Put or Delete
// through a Repo returns, its Gets never return an older value. Writes
// through anything else (another Repo, another process) are seen once the
// entry expires, after at most CacheTTL.
//
// Every Get returns its own copy, decoded from the stored item: modifying
// it changes nothing that later Gets return. With a MeterProvider on the
// client, every Get through the cache counts one lookup
// (dynashard.cache.lookups, hit or miss). It also counts the entries it
// evicted (dynashard.cache.evictions). CacheStats counts the same for this
// Repo alone.
//
// # Cost
//
// dynashard.Usage measures what calls cost, as DynamoDB reports it. Give a
// call a context from dynashard.WithUsage. Then every request of the call
// adds its consumed capacity to the Usage, per table: the layout check's,
// the item's, and a large value's chunk reads and writes. When the client
// has a TracerProvider, each call is also a span (dynashard.repo.Get, …).
// It wraps the spans of the shard, scatter and chunk calls it makes. A Get
// served by the cache sends nothing and costs nothing.
//
// # Panics
//
// Nothing panics on input. A nil ctx, like any bad input, fails with
// ErrInvalid before any request. A panic in code the Repo calls, such as
// T's marshalling methods, a Strategy or the Client, reaches the caller's
// goroutine, where recover works. That holds also when it happens on a
// goroutine of the Repo's: the cache's shared load, or List's parallel
// reads of large values. There it is raised again as an error. The error
// unwraps to the original value if that was an error, and carries the
// stack where it happened.
//
// A panic in the Client may happen during the parallel Queries of List,
// All and Count, or the chunk reads of a large value. It then happens on a
// goroutine of package scatter or chunk, and is as those packages handle
// it.
//
// A Repo is safe for concurrent use.
package repo
