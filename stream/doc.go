// Package stream reads the DynamoDB stream of a table written through
// package shard as changes of its logical items: (base, id), never a
// physical key.
//
// # What a consumer sees raw
//
// A raw stream shows the library's physical layout. Take 20 items
// written at Hash(2), then Reshard(8) and Rebalance, on DynamoDB Local
// with a NEW_AND_OLD_IMAGES stream. The stream holds 35 INSERTs (20
// items, the layout record, 14 moved copies), 3 MODIFYs (record
// updates) and 14 REMOVEs. No item was deleted. A consumer that mirrors
// the table deletes 14 live items. The layout record reads as an item.
//
// Streams orders the records of one item key (partition and sort key).
// Records of different keys are in no order: a move's INSERT and REMOVE
// may come either way round. A failed batch is delivered again.
//
// # Decoder
//
// A [Decoder] reads each record in two steps:
//
//   - [Decoder.Event] reads the record against the layout. It names the
//     logical item and the copy (the physical key) the record is about.
//     It leaves out chunk items and items whose key the layout does not
//     read. A layout record's Event carries the base's new history.
//   - [Decoder.Apply] turns the Event into a [Change]: [Put], [Delete],
//     [Reshard] or [None]. It takes the item's [State], which the
//     consumer keeps beside its copy of the item.
//
// A State records the last record seen of each copy of the item. The
// item is its one present copy: package shard keeps at most one. Records
// delivered again, or older than one seen, are None. While the records
// seen leave it unclear which copy holds the item, Apply reads the item
// (a consistent Get through shard.Table) and returns what it holds now.
//
// # The guarantee
//
// The ordering rule: apply an item's Changes in the order of its records
// (each stream shard in order, parents first, as Lambda and [Poller]
// deliver them). Store the item's State with each Change, both or
// neither. Serialize the Apply calls of one item (two shards may hold
// records of one item: use a conditional write on the stored State).
//
// A consumer that follows the rule ends equal to the table once it has
// applied every record. That holds with shards in any interleaving and
// batches delivered again. It holds through concurrent writes, deletes,
// re-creations, Reshard and Rebalance, interrupted or not. On the way:
//
//   - a Rebalance move is never a Delete, and its new copy is a Put only
//     to a consumer that has not seen the item yet;
//   - the consumer holds only values the item had, possibly an older one;
//   - a Delete means the item was deleted.
//
// TestConvergence checks this on random histories: three writers (Put,
// Update, Delete, Load), a fourth putting and deleting large values
// through a repo, and a resharder, all through a fault proxy (throttles, 500s, resets before and
// after a write applied), one writer's Table with a Grower. It replays
// the stream under 2,000 random interleavings of its item keys, with
// batches delivered twice. A longer run sets -stream.writes (60 per
// writer by default) and -stream.interleavings. It fails with moves read as deletes, and with a
// consumer that keeps no States.
//
// # Costs
//
// Nothing changes on the write side: no attribute, no request. Apply
// sends a request only when the records seen leave the item unclear: a
// move seen half, a delete and a re-creation seen out of order. It then
// sends a consistent Get: two requests, the layout record and the item.
// TestConvergence measured 0.04 to 0.13 requests per record delivered.
// Its histories have four writers and a resharder; REMOVEs (moves and
// deletes) are a tenth to a fifth of their records. A stream without moves or
// deletes costs none. A State as JSON is about 180 bytes for an item of
// one copy, and about 130 more for each other copy it remembers (two
// while a move is seen half, and removed ones until they expire).
// Removed copies stay until [State.Expire] drops them after 24 hours.
//
// # Where consumers run
//
//   - AWS Lambda: [HandleLambda] takes the event Lambda's event source
//     mapping delivers (aws-lambda-go's events.DynamoDBEvent). It runs a
//     function on each record, in order. It reports the first record that
//     fails in the response's BatchItemFailures, so that Lambda delivers
//     it and the records after it again.
//   - A [Poller] reads the Streams API itself, for local use, tests and
//     small services. It reads parents before children and each shard in
//     order. It hands records in batches, each with the [Checkpoint] to
//     store once the batch is processed.
//
// # Limits
//
//   - The stream's view must hold new images (NEW_IMAGE or
//     NEW_AND_OLD_IMAGES). Other views are [ErrNoImages].
//   - Streams keeps records for 24 hours. A consumer further behind
//     misses records; the Poller says so with [ErrTrimmed].
//   - The layout needs a calculated strategy: under Random an id may
//     have several copies, and NewDecoder refuses it with [ErrInvalid].
//   - Items written by other code, under keys the layout does not read,
//     are left out. Written under the layout's keys, they count as the
//     library's.
//   - A large value comes as its parent item, as stored; its chunks are
//     left out. repo.Repo.FromStored turns a Change's Attributes into the
//     repo's value, reading the chunks.
//   - Package split's parts: each part's table has a stream of its own.
//     A [PartDecoder] reads it as changes of that part of the logical
//     items. Split's sharded parts are Unchecked, so nothing moves them.
//
// dynalite has no Streams API: a Poller there fails with [ErrNoStreams].
package stream
