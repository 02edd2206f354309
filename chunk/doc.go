// Package chunk stores payloads larger than DynamoDB's 400 KB item limit as
// "virtual items", the layout of the DynamoDB developer guide: a parent item
// that says which version is current, and chunk items holding that version's
// bytes in a separate table, written with BatchWriteItem and read with
// BatchGetItem. Readers never see a mix of two versions or a truncated
// payload, whatever fails and whoever writes concurrently.
//
//	st, err := chunk.New(client, "Thread", "ThreadChunks") // ErrInvalid for a nil client or a bad option
//	info, err := st.Put(ctx, key, body)
//	got, info, err := st.Get(ctx, key) // the parent read eventually consistently
//	got, info, err = st.Get(ctx, key, func(o *chunk.Options) { o.ConsistentRead = true })
//
// New takes the SDK's shape: the client and the required names positional,
// everything else in Options through optFns, every field's zero value its
// default. Get, Open, Stat, Resolve and Delete take optFns too, applied to
// a copy of the Store's Options for that call only; Put and PutReader take
// PutOptions (Attributes, Condition), Sweep SweepOptions.
//
// # Model
//
// A parent item lives in the caller's table, under any key schema, next to
// the caller's own attributes (PutOptions.Attributes, Info.Attributes). The
// store adds:
//
//	ChunkVersion      S  the current version: a unique id per write attempt
//	ChunkCount        N  its number of chunks (0: the payload is inline)
//	ChunkBytes        N  payload length
//	ChunkStoredBytes  N  stored length (after compression)
//	ChunkSHA256       B  SHA-256 of the payload
//	ChunkEncoding     S  "gzip" or "zstd" when compressed, absent otherwise
//	ChunkPrevious     S  the version this one replaced, absent for the first
//	ChunkData         B  the stored payload, when inline
//
// Chunk items live in a table with a simple primary key of type S (named
// "ChunkKey" unless Options.ChunkKeyAttribute says otherwise). A chunk's key
// is the parent's key values joined with '#', then the version and a 1-based
// sequence number, as in the guide: parent ("DynamoDB", "Thread1") and
// version V give chunks "DynamoDB#Thread1#V#1", "DynamoDB#Thread1#V#2", ….
// S values appear as they are, N values in plain canonical decimal (so 1.0
// and 1 name the same chunks), B values in standard base64. Every chunk has
// its own partition key, so reading a payload spreads over partitions. A
// chunk item holds:
//
//	ChunkKey  S  the key above
//	Data      B  up to ChunkSize stored bytes
//	Parent    M  the parent's key attributes, for Sweep
//
// Versions are 26 characters of base32hex: the writer's clock in
// nanoseconds, then 64 random bits. They sort by creation time, never
// repeat, and tell Sweep a version's age without reading anything.
//
// Payloads whose stored form is at most Options.InlineLimit bytes (4 KiB
// by default) stay inline in the parent, with no chunks (the guide's short
// message).
//
// # Compression
//
// Options.Compression (None, Gzip or Zstd) is what Put tries; the parent's
// ChunkEncoding records what it used, and every reader decodes whatever a
// parent records, whatever its own Options say (a Store with None reads
// gzip and zstd payloads). Put stores a payload raw when it is shorter than
// Options.MinCompressSize (DefaultMinCompressSize, 1 KiB: below one write
// unit compression saves no capacity) or when compressing it leaves more
// than Options.MaxCompressRatio of its size (DefaultMaxCompressRatio, 0.9).
// Put decides once, from a probe of the first max(ChunkSize,
// MinCompressSize) raw bytes: a payload that fits the probe is judged
// exactly; a longer one by its probe compressed and flushed, and is then
// streamed compressed, or raw, as a whole. Put and PutReader so stay
// streaming: besides the compressed chunk being filled, as before, they
// hold at most that probe (384 KiB at the default ChunkSize). zstd runs
// synchronously at its default level with an 8 MiB window; readers refuse
// zstd frames with a larger window (*CorruptError), so a zstd Reader holds
// at most 8 MiB of history besides its chunk window.
//
// Measured by BenchmarkCompression (4 MiB payloads, deterministic forum
// replies as prose and as JSON, cut into 384 KiB chunks; MB/s of payload;
// ratio is stored/raw; 2-core AMD EPYC, go1.26.8, klauspost/compress
// v1.20.3):
//
//	payload  codec  ratio   encode MB/s  decode MB/s
//	text     gzip   0.251      13           219
//	text     zstd   0.266      88           522
//	json     gzip   0.211      25           258
//	json     zstd   0.180     114           811
//
// zstd compresses 4 to 7 times faster and decodes 2 to 3 times faster for
// a similar ratio; gzip stays for existing data and peers that read only
// gzip.
//
// # Writing
//
// Put reads the parent's current version consistently, writes the new
// version's chunks through the batch engine (parallel, at most 25 items or
// 16 MB per request, unprocessed items retried with backoff), then flips the
// parent with one UpdateItem whose condition is that ChunkVersion still holds
// the version read at the start (or is absent). Until the flip the new chunks
// are invisible. BatchWriteItem has no conditions, but no two writers ever
// write the same chunk key, because every attempt has its own version.
//
// A writer that loses the flip gets ErrConflict and deletes its chunks. A
// flip whose response is lost (HTTP 500, connection reset, timeout) is
// settled by reading the parent again: if it holds our version, or a later
// one recording ours as ChunkPrevious, the Put succeeded. The flip runs with
// the SDK's retries off and its own bounded retries, because a retried
// conditional update cannot otherwise tell "my first attempt applied" from
// "someone else won". When it cannot be settled, Put returns an error that
// is neither ErrConflict nor success: the outcome is unknown, as for any
// DynamoDB write, and the chunks are left to Sweep.
//
// After a flip, the replaced version's chunks are deleted at once (set
// Options.RetainOld to leave them to Sweep instead). A reader still fetching
// them notices a missing chunk, reads the parent again and starts over with
// the new version; Get does so transparently, a streaming Reader only if it
// has not yet returned any byte (otherwise it fails with ErrConflict).
//
// # Reading
//
// Get, Open and Stat read the parent eventually consistently by default
// (half the cost of a consistent read; set Options.ConsistentRead, for the
// Store or for one call, for a strongly consistent read). Right after a
// write, an eventually consistent read may still return the payload that
// was replaced, or ErrNotFound after the first Put; never a mix, never
// bytes no Put stored. Get and Open then read exactly that version's chunks
// with BatchGetItem. Each request asks for as many chunks as one 16 MB
// response can return whole (40 at the default ChunkSize; at most 100
// keys), and a window of at most 32 MiB of stored bytes bounds how many
// such requests are in flight at once: two at the default ChunkSize, at
// least one, at most Options.MaxConcurrency. The next window is fetched
// only once the last one has been read, so a Reader holds at most 32 MiB of
// chunks; Get holds the payload it returns besides, in a buffer that grows
// with the bytes that arrive. A parent whose sizes contradict each other or
// its chunk count is a *CorruptError before any chunk is read. Chunks are
// read eventually consistently (they never change once written); a missing
// one is read again consistently, then the parent is read again,
// consistently: a new version means start over, the same version means the
// payload is damaged (*CorruptError). Length, chunk count and SHA-256 of
// the whole payload are checked before Get returns and before a Reader's
// final io.EOF. Once the ctx of Get or Open is done, no more bytes are
// returned, even from chunks already fetched: Read fails with its error.
//
// Delete removes the parent first, conditional on the version it read
// consistently, and then that version's chunks: a reader can never follow
// a parent to chunks that are gone for good, and a Put that started from
// the deleted version fails instead of resurrecting it. Deleting a key that
// holds no payload returns nil, as DynamoDB's DeleteItem does (and
// shard.Table.Delete, and package repo): a Delete that is retried, or races
// another, succeeds.
//
// # Sweeping
//
// Chunks become orphans when a Put is cancelled or crashes before its flip,
// or a clean-up fails. Sweep scans the chunk table (never the parent table),
// skips versions younger than Options.Grace (1 hour), reads each remaining
// chunk's parent consistently and deletes chunks whose version the parent
// does not hold. This is safe while writers run because Put never flips to
// a version older than Grace/2, so a version past Grace that is not current
// never will be. Writers' and sweepers' clocks must agree to within Grace/2.
//
// # Limits
//
// DefaultChunkSize (384 KiB) keeps every chunk item under 400,000 bytes
// even with the longest parent key DynamoDB allows and 255-byte attribute
// names: within the 409,600-byte item limit, and 40 chunks per 16 MB
// BatchGetItem response. A parent key must leave room for
// "#<version>#<seq>" in the chunk table's 2,048-byte partition key (2,016
// bytes of rendered key at the default sizes), or Put fails with
// ErrInvalidKey before any request. Payloads above Options.MaxSize (1 GiB by
// default) fail with ErrTooLarge, before any write when the size is known;
// so do caller attributes that would take the parent item over the item
// limit, before any request. A 64 MiB payload is 171 chunks: 7
// BatchWriteItem requests and one UpdateItem to write (plus one GetItem),
// one GetItem and 5 BatchGetItem requests to read (the fewest possible:
// 4 of 40 chunks and one of 11, in 3 windows of 2, 2 and 1 requests).
//
// # Failure modes
//
//   - Put cancelled or crashed before its flip: the old payload stays
//     current and readable; the new chunks are orphans until Sweep. (A
//     chunk request already on the wire when ctx is cancelled may still be
//     applied after Put returns; it is an orphan like the others.)
//   - Put cancelled or crashed after its flip: the payload is stored; the
//     replaced version's chunks are orphans until Sweep.
//   - Ambiguous flip that cannot be settled: an error that is not
//     ErrConflict; the payload may or may not be current.
//   - Chunks deleted under a reader: the reader restarts with the new
//     version (bounded by Options.ReadAttempts), or a streaming Reader that
//     has already returned bytes fails with ErrConflict.
//   - Damaged data (a chunk missing for good, a flipped byte, bad gzip or
//     zstd, a parent whose sizes contradict each other): *CorruptError,
//     never wrong bytes from Get, whose memory follows the bytes that
//     arrive, not the size a parent claims.
//   - Input no call can take: an error matching ErrInvalid that names it,
//     before any request, never a panic. New returns one for a nil client
//     (also a typed nil), an empty or repeated table name and every option
//     it cannot work with; calls for a nil ctx, a nil or typed-nil reader,
//     a nil value among caller attributes or in a condition, per-call
//     options New would refuse. ErrInvalidKey, ErrTooLarge and ErrReserved
//     are finer kinds of it.
//   - Throttling and unprocessed batch items: retried with capped,
//     jittered backoff; the batch engine gives up after ten seconds
//     without progress. The parent flip, which runs with the SDK's retries
//     off, tells throttles (retry.DefaultThrottles) from other failures
//     and backs off the same way, up to ten attempts. Keep the SDK's own
//     retries on; for many concurrent callers, a client whose retryer has
//     no retry quota (dynashard.RetryForFanOut) avoids "retry quota
//     exceeded" failures under throttling.
//
// # Errors
//
// Errors match, with errors.Is, one of three families shared by every
// dynashard package (chunk.ErrNotFound is shard.ErrNotFound is
// dynashard.ErrNotFound): ErrInvalid (input rejected before any request),
// ErrNotFound (no payload under the key: Get, Open, Stat, Resolve) and
// ErrConflict (a concurrent write won). ErrInvalidKey, ErrTooLarge and
// ErrReserved match ErrInvalid as well; ErrCorrupt (a *CorruptError)
// belongs to no family. SDK errors are wrapped once, so errors.As finds
// them. Any other error from Put leaves its outcome unknown, as for any
// DynamoDB write.
//
// A Store is safe for concurrent use. Every call waits for the requests it
// started before returning.
package chunk
