// Package split stores one logical item as several items in several
// tables, one per access pattern, sharing the item's key. It follows the
// DynamoDB developer guide's "Use Multiple Tables to Support Varied Access
// Patterns". For example:
//
//   - a product page reads the basic part (ProductCatalog: Title,
//     Description);
//   - a checkout writes the availability part (ProductAvailability: Price,
//     QuantityOnHand);
//   - a detail page reads the extended part (ExtendedProductCatalog:
//     AverageCustomerRating, TrackListing).
//
// A price change then writes a small item instead of the whole product.
// Each table gets the capacity its own traffic needs.
//
// # Model
//
// A [Layout] names the logical key attributes and the [Part]s. Each part is
// a table of its own. It holds some top-level attributes of one Go type T,
// and optionally a version attribute of its own.
//
// Parts are separate tables, not one table with a sort-key prefix per part.
// The guide's point is that each access pattern has its own provisioned (or
// on-demand) capacity, its own partitions and its own item size. A sort-key
// prefix would put every part in one table's capacity and one item
// collection.
//
// A part's table may itself be sharded by a shard.Layout, for a hot set of
// items written more than one partition takes. The logical partition key is
// then the base, and the sort key the id.
//
//	st, err := split.New[Product](client, layout)
//	r, err := st.Get(ctx, split.Key{PK: "21"}, []string{"catalog"})       // one BatchGetItem
//	p, err = st.Put(ctx, p, []string{"availability"})                      // one PutItem
//	_, err = st.Update(ctx, split.Key{PK: "21"}, "availability", update)   // one UpdateItem
//	p, err = st.Create(ctx, p)                                             // one TransactWriteItems
//	err = st.Delete(ctx, split.Key{PK: "21"})                              // one TransactWriteItems
//
// Operations and their guarantees:
//
//   - Create writes every part in one TransactWriteItems, each on the
//     condition that it does not exist: all parts or none. A logical item
//     comes into being only this way.
//   - Put replaces the named parts. It writes each only if it exists, its
//     version equals the value's and its Options.Conditions entry holds. So
//     a Put never leaves a partial item behind after a Delete. It sends one
//     PutItem for one part, and one transaction (all or nothing) for
//     several.
//   - Update applies an expression to one part (an ADD to a stock, a SET of
//     a price) with one UpdateItem, on the same conditions.
//   - Delete deletes every part in one transaction. An absent item is no
//     error.
//   - Get and GetMany read the named parts of one or many items with
//     BatchGetItem, strongly consistent or not. They use internal/batch:
//     100 keys per request, unprocessed keys retried with backoff.
//
// Each part a Get reads is as its table holds it when read. BatchGetItem is
// not a snapshot. So a read overlapping a Create, Delete or multi-part Put
// may see some parts before it and some after. A transaction is
// all-or-nothing for writers, not for BatchGetItem. A missing part is
// listed in Result.Missing. Get fails with ErrNotFound only when every part
// asked for is missing.
//
// Every write of a part is linearizable on its own: one conditional
// request, or for a large part one conditional flip. Create, Delete and
// multi-part Puts are atomic across parts, a large part's flip included.
//
// A single-part write's condition may fail only on an SDK retry, after an
// attempt that may have been applied (a reset connection, a timeout, a
// 5xx). It may then have failed on its own result. It returns a *PartError
// saying the outcome is unknown, matching neither ErrConflict nor
// ErrNotFound.
//
// The package's model check drives random operations, concurrent ones
// included, through a Store on DynamoDB Local. It checks every history
// against a model of one logical item. The item has a large part whose
// values lie on both sides of the chunk store's thresholds and of the item
// limit.
//
// # Capacity
//
// A dynashard.Usage in a call's context (dynashard.WithUsage) collects the
// capacity DynamoDB reports for every request of the call, per table. So
// the saving is seen rather than computed.
//
// Measured on DynamoDB Local 1.25.1 for the guide's product (a 3 KB item
// whose availability part is under 1 KB):
//
//   - A price update costs 3 WCU in one table, and 1 WCU in the split
//     availability table.
//   - A basic page view costs 0.5 RCU either way. GetItem and BatchGetItem
//     round each item up to 4 KB, so splitting an item under 4 KB saves
//     nothing on point reads. Query and Scan sum items before rounding.
//   - Reading every part costs one rounded read per part.
//   - Create and Delete are transactions. The AWS documentation charges
//     twice the units of plain writes. DynamoDB Local reports four times:
//     12, 4 and 4 WCU for the three parts of that product.
//
// A large part's chunk store sends its requests with the call's context, so
// they are counted too, its chunk table's under that table's name.
//
// # Observability
//
// Get, GetMany, Create, Put, Update and Delete are each one logical call
// (internal/observe). When the client has a TracerProvider, each is a span
// named dynashard.split.<Op>. The span carries the parts' tables
// (comma-separated), the key, and the requests and capacity of the call.
// When the client has a MeterProvider, each records the call metrics. With
// neither, and no Usage in the context, no request asks DynamoDB for its
// consumed capacity.
//
// # Limits
//
//   - Every part's item, keys included, is checked against DynamoDB's 400
//     KB item limit before any request: 409,600 bytes, internal/ddbsize's
//     count.
//   - A transaction's items are checked against 4 MB (MaxTransactionBytes).
//     A large part's item counts at the item limit.
//   - A part over the limit is refused with ErrItemTooLarge, unless its
//     large attribute is a Large value (see "Large parts").
//   - A Layout has at most MaxParts (100) parts, a transaction's limit of
//     actions.
//   - Key values follow DynamoDB's limits (2,048 bytes partition, 1,024
//     sort). They are checked after a sharded part's suffix is appended.
//
// # Large parts
//
// A part may hold one attribute whose value exceeds the item limit (a
// manual, a track listing with lyrics). Part.Large names it and the package
// chunk Store that keeps it; it is repo's LargeField for a part. The part's
// item is the store's parent item. The value stays in it up to the store's
// InlineLimit (4 KiB by default). Above, it goes in chunk items of the
// store's chunk table, or in an object (chunk.Options.Objects).
//
// The attribute is a []byte or a string of T (B or S). The item records
// which, in attribute dynashard_large_s. The part's other attributes and
// version stay ordinary attributes of its item.
//
//	manuals, err := chunk.New(client, "ExtendedProductCatalog", "ManualChunks")
//	part := split.Part{Name: "extended", Table: "ExtendedProductCatalog", Attributes: []string{"Rating", "Manual"},
//		Large: &split.LargeField{Attribute: "Manual", Store: manuals}}
//
// The store writes a value in two steps:
//
//  1. its chunks (or object), under a version of their own that no reader
//     follows;
//  2. one conditional update of the part's item, the flip. It sets the
//     part's other attributes and makes the new version current.
//
// split sends the store's requests on the part's item itself. So the flip
// carries the part's conditions: it exists, its version is the value's,
// its Options.Conditions entry holds. When other parts are written too,
// the flip goes in the call's TransactWriteItems. Operation by operation:
//
//   - Create: the chunks, then one TransactWriteItems with the other parts'
//     Puts and the flip. All parts or none, as without a large part.
//   - Put of the large part alone: one consistent GetItem of the part, the
//     chunks, then the flip as one UpdateItem. A missing part or a version
//     other than the value's stops the Put at the GetItem, with ErrNotFound
//     or ErrConflict, before any chunk is written.
//   - Put with other parts: the same, with the flip in the transaction with
//     their Puts, all or nothing.
//   - A Put's flip may lose to a concurrent write of the value while the
//     part still exists and its version is still the value's. The Put then
//     starts over, up to 5 times, then returns ErrConflict.
//   - Delete: the store reads the value's version consistently. Then one
//     TransactWriteItems deletes every part, the large part on condition
//     that it still holds that version. If it does not, the store reads it
//     again and retries. Then the store deletes the old chunks.
//   - A part that holds no value is deleted with the others, on condition
//     that it still holds none.
//   - Options.Conditions may not name the large part for Delete
//     (ErrInvalid): the store's delete takes no caller condition.
//   - Get and GetMany read the part's item in the BatchGetItem with the
//     other parts, then its value through Store.Resolve. That costs nothing
//     more for a value inline in the item. Otherwise it costs the chunks'
//     BatchGetItems (or the object), one item after another.
//   - If the value was replaced between those two reads, the part is
//     returned as the newer flip left it, its other attributes with it:
//     never a mix. If the part was deleted meanwhile, it is reported
//     missing.
//   - Update changes the part's other attributes with one UpdateItem and
//     returns them, with the value at its zero value. It may name nothing
//     else: not the value, not the chunk store's attributes.
//
// A write that fails never damages the value before it. Until the flip,
// the new chunks are invisible. The replaced version's chunks are deleted
// only after it.
//
//   - A refused write (ErrConflict, ErrNotFound, ErrNoTransactions) leaves
//     chunks that the store deletes at once.
//   - A write whose flip got no answer is settled by the store reading the
//     part again. The result is success, or an error of unknown outcome
//     that is neither ErrConflict nor ErrNotFound.
//   - Chunks the store could not delete are left to its Sweep, like those
//     of a crash between the two steps. Sweep finds them: chunks are named
//     after the part's key (no chunk.Key.Name).
//   - The same holds for Delete: chunks it could not delete are left to
//     Sweep, the part being gone all the same.
//
// The chunk store's requests on its chunk table (and objects) are its own,
// and so are their retries (chunk's package doc). A Usage in the call's
// context counts them with the others. The store must be set up so:
//
//   - its parent table is the part's table;
//   - its chunk table is a table of its own, shared with no other large
//     part (Sweep of one store would delete the other's chunks);
//   - its Options do not set Guide.
//
// # Servers without transactions
//
// dynalite has no TransactWriteItems. Create, Delete and a Put of several
// parts then fail with ErrNoTransactions and write nothing. A large part's
// chunks, written before the refused flip, are deleted. split never falls
// back to a sequence of writes that a crash could leave half done. Get,
// GetMany, and Put and Update of one part (a large one included) work on
// any server.
//
// # Sharded parts
//
// A part with a Shard layout is keyed by base<sep>suffix and id. The
// layout's calculated strategy computes the suffix from the id at its N, as
// shard.Table.Key computes it for a base never resharded. split does not
// read or write shard's layout record. So the layout must be Unchecked: New
// refuses a checked one with ErrInvalidLayout, naming the part and this
// reason. A base resharded with shard.Table.Reshard is not followed: split
// would keep using the strategy's N.
//
// # How it fails
//
// Errors match the families every dynashard package shares:
//
//   - ErrInvalid: input refused before any request. That is a bad Layout at
//     New (matching ErrInvalidLayout), a nil ctx, a bad key, an unknown
//     part, or an attribute of T no part holds. It is also an update naming
//     an attribute the part does not hold, or a part too large (matching
//     ErrItemTooLarge).
//   - ErrNotFound: a part a Put or Update needs does not exist, or an item
//     none of whose parts exists.
//   - ErrConflict: a version or condition failed, Create found a part, or a
//     concurrent transaction won. Nothing was written.
//
// Errors about a part are a *PartError naming it. A transaction refused on
// several parts joins one per part: errors.As finds the first, and
// PartErrors lists them all. SDK errors are wrapped once and stay reachable
// with errors.As (*types.TransactionCanceledException and its
// CancellationReasons, *types.ConditionalCheckFailedException).
//
// A Get or GetMany whose BatchGetItems get nothing through for 10 s gives
// up with a *PartError naming the first part item not read. The last
// throttling error (*types.ProvisionedThroughputExceededException, …)
// stays reachable too. A write that fails with any other error may or may
// not have been applied, as with any DynamoDB write. A transaction is
// applied whole or not at all.
//
// A failed single-part write is told apart as missing or conflicting from
// the item DynamoDB returns with the failure
// (ReturnValuesOnConditionCheckFailure). A server may not return it
// (dynalite). Then one consistent GetItem decides, which a concurrent
// writer can make wrong in one case (see Store.Put).
//
// Nothing panics on input. A panic in code the Store calls (T's marshalling
// methods, a user Strategy, the Client) reaches the caller's goroutine. A
// Store is safe for concurrent use.
package split
