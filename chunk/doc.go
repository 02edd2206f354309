// Package chunk stores payloads larger than DynamoDB's 400 KB item limit as
// "virtual items", the layout of the DynamoDB developer guide. A parent
// item says which version is current. Chunk items hold that version's bytes
// in a separate table. They are written with BatchWriteItem and read with
// BatchGetItem.
//
// The guide's two other answers to the item limit are here too. One is
// compression (gzip or zstd). The other, with Options.Objects, is the
// payload in Amazon S3 with its key in the parent (see "S3 offload").
// Readers never
// see a mix of two versions or a truncated payload, whatever fails and
// whoever writes concurrently.
//
//	st, err := chunk.New(client, "Thread", "ThreadChunks") // ErrInvalid for a nil client or a bad option
//	info, err := st.Put(ctx, key, body)
//	got, info, err := st.Get(ctx, key) // the parent read eventually consistently
//	got, info, err = st.Get(ctx, key, func(o *chunk.Options) { o.ConsistentRead = true })
//
// New takes the SDK's shape. The client and the required names are
// positional; everything else is in Options, through optFns. Every field's
// zero value is its default. Get, Open, Stat, Resolve and Delete take
// optFns too, applied to a copy of the Store's Options for that call only.
// Put and PutReader take PutOptions (Attributes, Condition), and Sweep
// takes SweepOptions.
//
// # Model
//
// A parent item lives in the caller's table, under any key schema, next to
// the caller's own attributes (PutOptions.Attributes, Info.Attributes). The
// store adds:
//
//	ChunkVersion      S  the current version: a unique id per write attempt
//	ChunkCount        N  its number of chunks (0: the payload is inline)
//	ChunkSize         N  stored bytes per chunk but the last, when chunked
//	ChunkBytes        N  payload length
//	ChunkStoredBytes  N  stored length (after compression)
//	ChunkSHA256       B  SHA-256 of the payload
//	ChunkEncoding     S  "gzip" or "zstd" when compressed, absent otherwise
//	ChunkPrevious     S  the version this one replaced, absent for the first
//	ChunkData         B  the stored payload, when inline
//
// Chunk items live in a table with a simple primary key of type S. The key
// attribute is named "ChunkKey" unless Options.ChunkKeyAttribute says
// otherwise.
// Store.ChunkTableInput and Store.ParentTableInput describe both tables for
// CreateTable.
//
// A chunk's key is the parent's key values joined with '#', then the
// version and a 1-based sequence number, as in the guide. Parent
// ("DynamoDB", "Thread1") and version V give chunks "DynamoDB#Thread1#V#1",
// "DynamoDB#Thread1#V#2", …. S values appear as they are. N values appear
// in plain canonical decimal, so 1.0 and 1 name the same chunks. B values
// appear in standard base64. Every chunk has its own partition key, so
// reading a payload spreads over partitions. A chunk item holds:
//
//	ChunkKey  S  the key above
//	Data      B  up to ChunkSize stored bytes
//	Parent    M  the parent's key attributes, for Sweep
//
// Versions are 26 characters of base32hex: the writer's clock in
// nanoseconds, then 64 random bits. They sort by creation time, never
// repeat, and tell Sweep a version's age without reading anything.
//
// Payloads whose stored form is at most Options.InlineLimit bytes stay
// inline in the parent, with no chunks (the guide's short message).
// InlineLimit is 4 KiB by default, and below ChunkSize, which New checks.
//
// # Compression
//
// Options.Compression (None, Gzip or Zstd) is what Put tries. The parent's
// ChunkEncoding records what it used. Every reader decodes whatever a
// parent records, whatever its own Options say: a Store with None reads
// gzip and zstd payloads.
//
// Put stores a payload raw in two cases:
//
//   - when it is shorter than Options.MinCompressSize
//     (DefaultMinCompressSize, 1 KiB). Below one write unit, compression
//     saves no capacity.
//   - when compressing it leaves more than Options.MaxCompressRatio of its
//     size (DefaultMaxCompressRatio, 0.9).
//
// Put decides once, from a probe of the first max(ChunkSize,
// MinCompressSize) raw bytes. A payload that fits the probe is judged
// exactly. A longer one is judged by its probe compressed and flushed. It
// is then streamed compressed, or raw, as a whole. Put and PutReader so
// stay streaming. Besides the compressed chunk being filled, as before,
// they hold at most that probe (384 KiB at the default ChunkSize).
//
// zstd runs synchronously at its default level with an 8 MiB window.
// Readers refuse zstd frames with a larger window (*CorruptError). So a
// zstd Reader holds at most 8 MiB of history besides its chunk window.
//
// BenchmarkCompression measured the codecs on 4 MiB payloads of
// deterministic forum replies, as prose and as JSON, cut into 384 KiB
// chunks. Speeds are MB/s of payload, and the ratio is stored/raw. The
// machine was a 2-core AMD EPYC, with go1.26.8 and klauspost/compress
// v1.20.3:
//
//	payload  codec  ratio   encode MB/s  decode MB/s
//	text     gzip   0.251      13           219
//	text     zstd   0.266      88           522
//	json     gzip   0.211      25           258
//	json     zstd   0.180     114           811
//
// zstd compresses 4 to 7 times faster and decodes 2 to 3 times faster, for
// a similar ratio. gzip stays for existing data and for peers that read
// only gzip.
//
// # Writing
//
// Put takes three steps:
//
//  1. It reads the parent's current version consistently.
//  2. It writes the new version's chunks through the batch engine: in
//     parallel, at most 25 items or 16 MB per request, unprocessed items
//     retried with backoff.
//  3. It flips the parent with one UpdateItem. The update's condition is
//     that ChunkVersion still holds the version read at the start (or is
//     absent).
//
// Until the flip, the new chunks are invisible. BatchWriteItem has no
// conditions. But no two writers ever write the same chunk key, because
// every attempt has its own version.
//
// A writer that loses the flip gets ErrConflict and deletes its chunks. A
// flip whose response is lost (HTTP 500, connection reset, timeout) is
// settled by reading the parent again. If it holds our version, or a later
// one recording ours as ChunkPrevious, the Put succeeded.
//
// The flip runs with the SDK's retries off and its own bounded retries. A
// retried conditional update could not otherwise tell "my first attempt
// applied" from "someone else won". When the flip cannot be settled, Put
// returns an error that is neither ErrConflict nor success. The outcome is
// unknown, as for any DynamoDB write, and the chunks are left to Sweep.
//
// After a flip, the replaced version's chunks are deleted at once. Set
// Options.RetainOld to leave them to Sweep instead. A reader still fetching
// them notices a missing chunk, reads the parent again and starts over
// with the new version. Get does so transparently. A streaming Reader does
// so only if it has not yet returned any byte; otherwise it fails with
// ErrConflict.
//
// # Reading
//
// Get, Open and Stat read the parent eventually consistently by default,
// for half the cost of a consistent read. Set Options.ConsistentRead, for
// the Store or for one call, for a strongly consistent read. Right after a
// write, an eventually consistent read may still return the payload that
// was replaced, or ErrNotFound after the first Put. It never returns a mix,
// and never bytes no Put stored.
//
// Get and Open then read exactly that version's chunks with BatchGetItem.
// Each request asks for as many chunks as one 16 MB response can return
// whole, at the chunk size the parent records. That is 40 at the default
// ChunkSize, and at most 100 keys. A parent that records none, written
// before ChunkSize was recorded or in the guide's layout, is read for the
// largest chunk its sizes allow.
//
// A window of at most 32 MiB of stored bytes bounds how many such requests
// are in flight at once. That is two at the default ChunkSize, at least
// one, at most Options.MaxConcurrency. The next window is fetched only once
// the last one has been read. So a Reader holds at most 32 MiB of chunks.
//
// Get keeps what it has read instead (the chunks themselves, for a payload
// stored raw) until the payload is whole and verified. It then copies it
// into the payload it returns, allocated once at its length. So its memory
// follows the bytes that arrive, never the size a parent claims. At the end
// it holds twice the payload, as any loop of BatchGetItem that returns one
// buffer does. A parent whose sizes contradict each other or its chunk
// count is a *CorruptError before any chunk is read.
//
// Chunks are read eventually consistently, since they never change once
// written. A missing one is read again consistently. Then the parent is
// read again, consistently. A new version means start over. The same
// version means the payload is damaged (*CorruptError).
//
// Length, chunk count and SHA-256 of the whole payload are checked before
// Get returns and before a Reader's final io.EOF. Once the ctx of Get or
// Open is done, no more bytes are returned, even from chunks already
// fetched: Read fails with its error.
//
// When DynamoDB throttles chunk reads, a Reader backs off. Two kinds of
// BatchGetItem call count as throttled:
//
//   - one that fails with a throttling error
//     (ProvisionedThroughputExceededException, ThrottlingException, …)
//     once the SDK's retries are spent;
//   - one that the SDK's retryer had to retry after such an error.
//
// Either halves the calls the Reader keeps in flight, down to 1, at most
// once per round of calls. Each call that met no throttle adds 1/limit
// back, up to the window's bound above. Unprocessed keys are not taken as
// throttling: DynamoDB also leaves keys unprocessed when more than 1 MB is
// asked of one partition. The batch engine resends them with backoff.
//
// A Reader keeps its limit from window to window. The Store keeps the
// limit the last window (of any Reader) ended with, and a Reader's first
// window starts there. Store.ReadStats reports the calls, the throttled
// ones, the cuts and the limits. A read that backs off is slower, never
// different: the payload and its checks are the same.
//
// Delete removes the parent first, conditional on the version it read
// consistently, and then that version's chunks. So a reader can never
// follow a parent to chunks that are gone for good. A Put that started from
// the deleted version fails instead of resurrecting it. Deleting a key
// that holds no payload returns nil, as DynamoDB's DeleteItem does (and
// shard.Table.Delete, and package repo). So a Delete that is retried, or
// races another, succeeds.
//
// # Sweeping
//
// Chunks become orphans when a Put is cancelled or crashes before its
// flip, or when a clean-up fails. Sweep scans the chunk table, never the
// parent table. It skips versions younger than Options.Grace (1 hour). It
// reads each remaining chunk's parent consistently, and deletes chunks
// whose version the parent does not hold.
//
// This is safe while writers run, because Put never flips to a version
// older than Grace/2. So a version past Grace that is not current never
// will be. Writers' and sweepers' clocks must agree to within Grace/2.
//
// # S3 offload
//
// The guide's third answer to the item limit is to keep the payload in
// Amazon S3 and its identifier in the item. With Options.Objects set, Put
// stores a payload of Options.ObjectThreshold bytes or more as one object
// instead of chunks, behind the same parent protocol. ObjectThreshold is 1
// MiB by default; a negative one sends every payload to S3.
//
// The object is written first, under a key unique to the write attempt
// that names the parent:
//
//	<ObjectPrefix><rendered parent key>/<version>
//
// ObjectPrefix defaults to "dynashard/<parent table>/". The rendered key is
// the chunk-key prefix ("DynamoDB#Thread1"). It is replaced by "sha256-"
// and a hash of the key when:
//
//   - it holds characters outside S3's safe set (letters, digits,
//     !-_.*'() and '#'), or
//   - it would take the key past S3's 1,024 bytes.
//
// The object's user metadata records the parent table and the parent's key
// (dynashard-table, dynashard-parent: base64url of JSON), for Sweep and for
// maintenance. A key that cannot fit S3's 2 KB of metadata fails with
// ErrInvalidKey before any request.
//
// Then the parent flips with the same conditional UpdateItem, lost
// responses settled the same way. The flip records:
//
//	ChunkObject  S  the object's key
//	ChunkCount   N  -1
//
// It records ChunkVersion, ChunkBytes, ChunkStoredBytes, ChunkSHA256 and
// ChunkEncoding besides, as for chunks: compression applies to objects
// too. A ChunkCount of -1 makes a reader that knows only chunks (this
// package before offload) fail with a *CorruptError. Such a reader never
// reads an empty or inline payload. A Store without Objects fails with an
// error naming Options.Objects.
//
// After the flip, the replaced payload's object (or chunks) is deleted,
// unless RetainOld. A loser of the flip deletes its object and returns
// ErrConflict. Delete removes the parent first, then the object.
//
// Readers follow the parent. Get and Open read the object with ranged GETs
// of at most 8 MiB each, one at a time. So a Reader holds at most 8 MiB of
// it. An object missing under a reader is handled as a missing chunk is. A
// replaced version means start over, or ErrConflict once bytes were
// returned. The same version means *CorruptError. Length and SHA-256 are
// verified as for chunks.
//
// Sweep also lists the objects under ObjectPrefix (ListObjectsV2). It skips
// those whose version or LastModified is younger than Grace. It reads the
// metadata of the others (one HEAD each) and reads their parent
// consistently (once per parent). It deletes the objects whose version the
// parent does not hold. Objects of another table, or whose key or metadata
// this package did not write, are counted (SweepStats.ObjectsForeign) and
// left alone.
//
// Orphans come from the same places as orphaned chunks: a Put stopped after
// its upload and before its flip, a failed delete after a flip, and
// RetainOld. A multipart upload that never completed is no object and is
// not listed. A bucket lifecycle rule (AbortIncompleteMultipartUpload)
// removes those.
//
// ObjectStore is the small interface the Store needs: streaming Put with
// metadata, ranged GetRange, Metadata, Delete, List by prefix. The
// implementation on Amazon S3 is module
// github.com/dynashard/dynashard/s3blob. It is a module of its own, so that
// this module's go.mod does not list the S3 SDK, and programs that never
// offload never build it.
//
// It uploads objects above its part size (8 MiB by default) with multipart
// upload, parts in parallel (4 by default), streamed from the payload. Put
// and PutReader hold at most the adapter's parts in flight. PutReader
// without a Len method also holds up to ObjectThreshold bytes, read to
// decide where the payload goes.
//
// It is tested against s3rver 3.7.1, a local S3-compatible server the
// project installs and starts; internal/locals3 says what it lacks. The
// tests also run DynamoDB Local and dynalite, and a fault proxy. The proxy
// fails PUT, UploadPart, multipart completion and DeleteObjects, and resets
// connections mid-upload.
//
// Options.Guide.Write and Objects exclude each other: the guide's layout
// cannot record an object.
//
// # The guide's layout
//
// Other code may have written tables in the layout the DynamoDB guide shows
// ("Break up large attributes across multiple items"). Options.Guide reads
// and writes them as they are. The option GuideLayout sets the guide's
// names and both:
//
//	st, err := chunk.New(client, "Reply", "ReplyChunks", chunk.GuideLayout)
//
//	parent  ChunkVersion  N  the version: 1, 2, … (the guide shows none for a short message; Put writes one)
//	        ChunkCount    N  its number of chunks (absent for a short message)
//	        Message       S  a short message (Guide.InlineAttribute and InlineType)
//	chunk   Id            S  "DynamoDB#Thread1#2012-03-15T20:42:54.023Z#1#1": the key, version, seq
//	        Message       S  its part of the text (Guide.DataAttribute and DataType)
//
// Reading. A parent is in the guide's layout (Info.Guide) when its
// ChunkVersion is a number, or when it has no ChunkVersion but holds
// Guide.InlineAttribute. Any other parent is in this package's layout. So
// a Store with Options.Guide reads both.
//
// The guide records no length and no checksum. A read checks that every one
// of ChunkCount chunks is there. A missing one is a *CorruptError, after
// the same re-reads as in this package's layout. The read checks the length
// where the parent records ChunkBytes, and the SHA-256 where it records
// ChunkSHA256. Info.NoChecksum says so. Info.Size is -1 for a chunked
// payload whose length is recorded nowhere, until Get has read it.
//
// A parent with both a ChunkCount above 0 and a non-empty Message holds two
// payloads, which the guide never writes. It is a *CorruptError ("both
// inline data and chunks"), not one or the other. An empty Message beside
// chunks is the guide's blank one, and the chunks are read. Text damaged
// into other valid text cannot be told from the payload. Without
// Options.Guide, a parent whose ChunkVersion is a number is a
// *CorruptError, and the guide's short message is no payload (ErrNotFound).
//
// Writing. With Guide.Write, Put keeps the guide's layout, so readers that
// know only the guide keep working:
//
//   - ChunkVersion is a number.
//   - ChunkCount is written for a chunked payload only. Such readers tell a
//     short message by its absence.
//   - The text is in Message.
//   - Of this package's own attributes, only ChunkPrevious is on the parent
//     (it settles a lost flip response, as in this package's layout), and
//     Parent on chunk items. Such readers ignore them.
//   - Guide.Checksum adds ChunkBytes and ChunkSHA256.
//
// A short message gets a ChunkVersion too, where the guide shows none. The
// flip's compare-and-set and the settling of a lost response need a
// version to compare. Otherwise two writers starting from the same short
// message would both succeed. Readers take a short message with or without
// one.
//
// The next version is not "the version read plus one". Two writers that
// read version v would both write the chunks of v+1 (BatchWriteItem has no
// conditions). They would overwrite each other's chunks before one lost the
// flip. A reader following the winner could then read the loser's text.
//
// So Put first reserves a number above the version it read. It does so
// with one atomic conditional UpdateItem on a counter item in the chunk
// table, at key "<parent key>#ChunkVersion". The counter is never deleted,
// so no number is used twice, even after a Delete. Put writes chunks under
// that number only. It flips the parent with the same compare-and-set on
// the version read as in this package's layout, settling a lost response
// the same way. The counter costs one UpdateItem (one write unit) per Put.
//
// An S attribute holds only valid UTF-8 (ErrInvalid otherwise), so text
// chunks are cut on rune boundaries. New refuses Compression and Objects
// with Guide.Write (ErrInvalid): the guide's layout records neither.
//
// Sweep leaves the guide's layout alone. Its chunk keys carry no creation
// time, so Sweep counts them, and the counters, as Foreign. Chunks of a
// failed guide-layout Put whose own clean-up failed stay until removed by
// hand.
//
// Migrating to this package's checksummed layout takes two steps:
//
//  1. Switch every reader to a Store with Options.Guide (Write false),
//     which reads both layouts.
//  2. Switch the writers to the same Options. Every Put then writes this
//     package's layout, removing the guide's inline attribute and the old
//     chunks.
//
// Readers go first, because readers that know only the guide cannot read
// the new layout. Migrate rewrites one item at once: a consistent Get, then
// a Put on condition that the version read is still current. Items never
// written again can be moved by calling it for each key.
//
// # Limits
//
//   - DefaultChunkSize (384 KiB) keeps every chunk item under 400,000
//     bytes, even with the longest parent key DynamoDB allows and 255-byte
//     attribute names. That is within the 409,600-byte item limit, and 40
//     chunks per 16 MB BatchGetItem response.
//   - A parent key must leave room for "#<version>#<seq>" in the chunk
//     table's 2,048-byte partition key: 2,016 bytes of rendered key at the
//     default sizes. Otherwise Put fails with ErrInvalidKey before any
//     request.
//   - Payloads above Options.MaxSize (1 GiB by default) fail with
//     ErrTooLarge, before any write when the size is known.
//   - So do caller attributes that would take the parent item over the
//     item limit, before any request.
//
// A 64 MiB payload is 171 chunks. Writing it takes 7 BatchWriteItem
// requests and one UpdateItem (plus one GetItem). Reading it takes one
// GetItem and 5 BatchGetItem requests. That is the fewest possible: 4 of
// 40 chunks and one of 11, in 3 windows of 2, 2 and 1 requests.
//
// # Cost
//
// The table below gives what one payload costs, by where it is stored, for
// the first Put of a key and one Get. It assumes the guide's Reply key,
// default Options and an incompressible payload.
//
//   - Write units are DynamoDB's, one per 1 KB of each item written.
//   - Read units are an eventually consistent read's, half a unit per 4 KB
//     of each item read.
//   - Both are rounded up per item.
//   - Put's consistent GetItem of the parent is not counted.
//   - Replacing a payload also deletes the old version. Its chunks cost
//     their write units again (a delete is charged by the item's size), and
//     an object costs one S3 DELETE.
//   - The S3 rows count DynamoDB units for the parent only. They assume
//     uploads in 8 MiB parts above 8 MiB (s3blob.DefaultPartSize; an
//     adapter chooses its own) and a Reader's ranged GETs of 8 MiB.
//   - Inline needs Options.InlineLimit at least the payload's size.
//   - S3 needs Options.Objects, and an Options.ObjectThreshold at most the
//     payload's size (1 MiB by default).
//
// The package computes the table from its own size rules, and a test keeps
// this text in step:
//
//	payload  stored as  requests to write                                              write units  requests to read           read units
//	100 KiB  inline     GetItem, UpdateItem                                            101          GetItem                    13
//	100 KiB  chunks     GetItem, BatchWriteItem, UpdateItem                            102          GetItem, BatchGetItem      13.5
//	100 KiB  S3         GetItem, S3 PUT, UpdateItem                                    1            GetItem, S3 GET            0.5
//	1 MiB    inline     does not fit the 400 KB item
//	1 MiB    chunks     GetItem, BatchWriteItem, UpdateItem                            1,028        GetItem, BatchGetItem      130
//	1 MiB    S3         GetItem, S3 PUT, UpdateItem                                    1            GetItem, S3 GET            0.5
//	64 MiB   inline     does not fit the 400 KB item
//	64 MiB   chunks     GetItem, 7 BatchWriteItem, UpdateItem                          65,708       GetItem, 5 BatchGetItem    8,278
//	64 MiB   S3         GetItem, S3 multipart (create, 8 parts, complete), UpdateItem  1            GetItem, 8 S3 ranged GETs  0.5
//
// dynashard.Usage measures what calls cost, as DynamoDB reports it. Give a
// call a context from dynashard.WithUsage. Then every request the call
// sends asks for its consumed capacity: the parent's reads and flip, the
// chunk batches, Sweep's Scan. The Usage adds it up per table (the
// parent's and the chunk table).
//
// When the client has a TracerProvider, each entry point is also a logical
// call with a span (dynashard.chunk.Put, …). An Open's Reader is one of its
// own (dynashard.chunk.Read), from its first Read to the payload's end, an
// error or Close. Without either, nothing asks for capacity.
//
// # Failure modes
//
//   - Put cancelled or crashed before its flip: the old payload stays
//     current and readable. The new chunks are orphans until Sweep. A chunk
//     request already on the wire when ctx is cancelled may still be
//     applied after Put returns; it is an orphan like the others.
//   - Put cancelled or crashed after its flip: the payload is stored. The
//     replaced version's chunks are orphans until Sweep.
//   - Ambiguous flip that cannot be settled: an error that is not
//     ErrConflict. The payload may or may not be current.
//   - Chunks deleted under a reader: the reader restarts with the new
//     version (bounded by Options.ReadAttempts). A streaming Reader that has
//     already returned bytes fails with ErrConflict instead.
//   - Damaged data (a chunk missing for good, a flipped byte, bad gzip or
//     zstd, a parent whose sizes contradict each other): *CorruptError.
//     Get never returns wrong bytes. Its memory follows the bytes that
//     arrive, not the size a parent claims.
//   - Input no call can take: an error matching ErrInvalid that names it,
//     before any request, never a panic. ErrInvalidKey, ErrTooLarge and
//     ErrReserved are finer kinds of it.
//   - New returns such an error for a nil client (also a typed nil), an empty or
//     repeated table name, and every option it cannot work with.
//   - Calls return such an error for a nil ctx, a nil or typed-nil reader, a nil
//     value among caller attributes or in a condition, and per-call options
//     New would refuse.
//   - Throttling and unprocessed batch items: retried with capped,
//     jittered backoff. The batch engine gives up after ten seconds without
//     progress.
//   - The parent flip runs with the SDK's retries off. It tells throttles
//     (retry.DefaultThrottles) from other failures and backs off the same
//     way, up to ten attempts. Keep the SDK's own retries on. For many
//     concurrent callers, use a client whose retryer has no retry quota
//     (dynashard.RetryForFanOut). It avoids "retry quota exceeded" failures
//     under throttling.
//   - A panic in the Client, in Options.Objects or in PutReader's reader,
//     also on one of the goroutines a read or Sweep runs in parallel. The
//     call stops and waits for its goroutines. Then it panics in the
//     caller's goroutine, where recover works. It panics with the value, or
//     with an error that unwraps to it and carries the stack where it
//     happened. It never panics on a goroutine of the package's, which
//     would end the process.
//
// # Errors
//
// Errors match, with errors.Is, one of three families shared by every
// dynashard package. (chunk.ErrNotFound is shard.ErrNotFound is
// dynashard.ErrNotFound.) The families are:
//
//   - ErrInvalid: input rejected before any request. ErrInvalidKey,
//     ErrTooLarge and ErrReserved match it as well.
//   - ErrNotFound: no payload under the key (Get, Open, Stat, Resolve).
//   - ErrConflict: a concurrent write won.
//
// ErrCorrupt (a *CorruptError) belongs to no family. SDK errors are wrapped
// once, so errors.As finds them. Any other error from Put leaves its
// outcome unknown, as for any DynamoDB write.
//
// A Store is safe for concurrent use. Every call waits for the requests it
// started before returning.
package chunk
