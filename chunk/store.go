package chunk

import (
	"context"
	"crypto/sha256"
	"fmt"
	"math"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynashard/dynashard/internal/avmap"
	"github.com/dynashard/dynashard/internal/ddbsize"
	"github.com/dynashard/dynashard/internal/errs"
	"github.com/dynashard/dynashard/internal/observe"
)

// Client is the part of *dynamodb.Client the store uses: plain reads and
// conditional writes on the parent table, batches on the chunk table, and
// Scan of the chunk table for Sweep.
type Client interface {
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error)
	BatchWriteItem(ctx context.Context, in *dynamodb.BatchWriteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.BatchWriteItemOutput, error)
	BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error)
	Scan(ctx context.Context, in *dynamodb.ScanInput, optFns ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error)
}

var _ Client = (*dynamodb.Client)(nil)

// Compression names how a payload is stored. The zero value stores it as
// is.
type Compression string

// Supported compressions.
const (
	None Compression = ""
	Gzip Compression = "gzip" // compress/gzip at its default level
	Zstd Compression = "zstd" // github.com/klauspost/compress/zstd, default level, 8 MiB window
)

// Defaults of Options.
const (
	// DefaultChunkSize is 384 KiB: with the longest parent key DynamoDB
	// allows and the longest attribute names, a chunk item stays under
	// 400,000 bytes, so it fits the 409,600-byte item limit and 40 of them
	// fit one 16 MB BatchGetItem response.
	DefaultChunkSize = 384 << 10
	// DefaultInlineLimit is the largest stored payload kept inline in the
	// parent item: about one 4 KB read unit, so a parent stays cheap to
	// read and query.
	DefaultInlineLimit = 4 << 10
	// DefaultMaxSize is the largest payload a Store accepts: 1 GiB.
	DefaultMaxSize = 1 << 30
	// DefaultGrace is how old an unreferenced version must be before Sweep
	// deletes it.
	DefaultGrace = time.Hour
	// DefaultChunkKeyAttribute names the chunk table's partition key.
	DefaultChunkKeyAttribute = "ChunkKey"
	// DefaultReadAttempts is how many versions a read tries when the one
	// it reads is replaced under it.
	DefaultReadAttempts = 5
	// DefaultMinCompressSize is the smallest payload Put compresses:
	// 1 KiB, DynamoDB's write unit. A shorter payload costs one write
	// unit (and one read unit) compressed or not, and gzip's 18 bytes or
	// zstd's ~10 bytes of framing eat much of what it could save.
	DefaultMinCompressSize = 1 << 10
	// DefaultMaxCompressRatio is the largest compressed/raw size ratio
	// at which Put keeps a payload compressed: 0.9. Saving less than a
	// tenth is not worth a decoder on every read.
	DefaultMaxCompressRatio = 0.9
	// DefaultMaxConcurrency bounds the batch requests one call has in
	// flight.
	DefaultMaxConcurrency = 4
)

// Options configures a Store, through the optFns of New; Get, Open, Stat,
// Resolve and Delete take optFns too, applied to a copy of the Store's
// Options for that call only:
//
//	data, info, err := store.Get(ctx, key, func(o *chunk.Options) { o.ConsistentRead = true })
//
// The zero value of every field selects its documented default. Writers,
// readers and sweepers sharing tables must use the same ChunkKeyAttribute
// and Grace.
type Options struct {
	// ChunkKeyAttribute is the name of the chunk table's partition key, of
	// type S. Default DefaultChunkKeyAttribute.
	ChunkKeyAttribute string

	// ChunkSize is the most stored bytes per chunk item. Default
	// DefaultChunkSize. A larger value is accepted as long as each chunk
	// item of a given key fits DynamoDB's item limit; Put checks that before
	// writing anything.
	ChunkSize int

	// InlineLimit is the largest stored payload kept in the parent item
	// instead of in chunks. It must be below ChunkSize (at most
	// ChunkSize-4 when Guide.Write writes text): Put tells a payload is
	// inline from its first chunk. New refuses a larger one with
	// ErrInvalid. Zero means DefaultInlineLimit, or the most ChunkSize
	// allows if that is less. Negative stores every non-empty payload in
	// chunks.
	InlineLimit int

	// MaxSize is the largest payload Put accepts, in bytes before
	// compression, at most 1 PiB. Zero means DefaultMaxSize.
	MaxSize int64

	// Compression is how Put stores payloads: None, Gzip or Zstd. Readers
	// decode whatever a parent records, whatever this is set to (a Store
	// with None reads gzip and zstd payloads). Put may still store a
	// payload raw, by MinCompressSize and MaxCompressRatio; the parent
	// (Info.Compression) records what was used. Default None.
	Compression Compression

	// MinCompressSize is the smallest payload Put compresses; shorter
	// ones are stored raw. Zero means DefaultMinCompressSize; negative
	// compresses every non-empty payload. At most the largest ChunkSize
	// New accepts, since Put decides from a probe that must hold it.
	MinCompressSize int

	// MaxCompressRatio is the compressed/raw size ratio above which Put
	// stores the payload raw. Put decides once, from a probe of the first
	// max(ChunkSize, MinCompressSize) raw bytes: for a payload no longer
	// than the probe the ratio is exact; a longer one is judged by its
	// probe compressed and flushed, and then streamed compressed or raw
	// as a whole. Zero means DefaultMaxCompressRatio; negative never
	// stores raw by ratio.
	MaxCompressRatio float64

	// ConsistentRead makes Get, Open and Stat read the parent item with a
	// strongly consistent read. Default false: an eventually consistent
	// read, half the cost, which for a moment after a write may return the
	// payload it replaced (or ErrNotFound after the first Put, a payload
	// after a Delete). Either way a payload returned is whole and is one a
	// Put stored: a chunk found missing is read again consistently, and
	// then the parent, consistently. Put, Delete and Sweep always read the
	// parent consistently; Resolve reads it only to move on from a version
	// replaced since, consistently.
	ConsistentRead bool

	// ReadAttempts bounds how many versions Get, Open, Resolve and Delete
	// try when the version they read is replaced (and its chunks deleted)
	// under them. Default DefaultReadAttempts.
	ReadAttempts int

	// Grace is the age below which Sweep never deletes a version, however
	// unreferenced it looks. A Put gives up rather than commit a version
	// older than Grace/2, so Grace must exceed twice the longest Put plus
	// the clock difference between writers and sweepers. Default
	// DefaultGrace.
	Grace time.Duration

	// RetainOld leaves a replaced version's chunks for Sweep instead of
	// deleting them as soon as a Put or Delete has replaced it. Slow
	// streaming readers of the old version then keep working until Grace;
	// the cost is storage until the next Sweep. Default false.
	RetainOld bool

	// MaxConcurrency bounds the batch requests one call has in flight. A
	// read has no more BatchGetItem requests in flight than full requests
	// fit its 32 MiB window (two at the default ChunkSize; see the package
	// documentation), and at least one. Default DefaultMaxConcurrency.
	MaxConcurrency int

	// Objects, if set, is where Put stores payloads of ObjectThreshold
	// bytes or more instead of chunks: one object per write attempt,
	// recorded by the parent (see "S3 offload" in the package
	// documentation). Module github.com/dynashard/dynashard/s3blob
	// implements it on Amazon S3. Readers of offloaded payloads need it
	// too. Default nil: every payload stays in DynamoDB.
	Objects ObjectStore

	// ObjectThreshold is the payload size, in bytes before compression,
	// from which Put stores a payload in Objects, at most 64 MiB: PutReader
	// reads up to that many bytes to decide, unless its reader has a Len
	// method. Zero means DefaultObjectThreshold; negative offloads every
	// payload, an empty one too. Unused without Objects.
	ObjectThreshold int64

	// ObjectPrefix begins the key of every object the Store writes, and
	// Sweep lists the objects under it: at most 512 bytes. Default
	// "dynashard/" + the parent table's name + "/".
	ObjectPrefix string

	// Guide, when set, says that these tables hold items in the DynamoDB
	// guide's own layout (see "The guide's layout" in the package
	// documentation, and GuideLayout): the Store then reads them beside
	// its own, and with Guide.Write it writes them. New keeps a copy.
	// Default nil: the tables hold only this package's layout, and a
	// parent whose ChunkVersion is a number is a *CorruptError.
	Guide *Guide
}

// Store stores payloads of any size up to Options.MaxSize under parent items
// of one table, with their chunks in another. The zero value is not usable
// (its methods fail with ErrInvalid); create one with New. A Store is safe
// for concurrent use, also with other Stores (in other processes) on the
// same tables.
type Store struct {
	c       Client
	obs     *observe.Scope // the client's tracer and meter; nil without providers
	parents string
	chunks  string
	opts    Options

	// maxChunks bounds the sequence numbers of a payload of MaxSize, for the
	// key-length budget.
	maxChunks int

	// reads is shared by the copies a call makes: chunk reads' counts and
	// the limit they learned (ReadStats).
	reads *readState

	// Test hooks, nil in production. now replaces time.Now; beforeFlip
	// runs after the last chunk is written and before the parent update.
	now        func() time.Time
	beforeFlip func(ctx context.Context) error
	flipDelay  time.Duration // replaces flipBaseDelay
	readWindow int64         // replaces maxReadWindow
}

// New returns a Store keeping parent items in table parents and chunks in
// table chunks, which must have a simple primary key of type S named
// Options.ChunkKeyAttribute. Parents may have any key schema. It makes no
// request. New fails with an error matching ErrInvalid, naming the input,
// for a nil client (also a typed nil such as (*dynamodb.Client)(nil)), an
// empty table name, the same table for both, and options that could never
// work: a ChunkSize that cannot fit an item, an InlineLimit above the item
// limit or not below ChunkSize, a negative MaxSize, ReadAttempts, Grace or MaxConcurrency, a
// ChunkKeyAttribute longer than 255 bytes, an unknown Compression, or an
// Options.Guide it cannot work with (a type other than S or B, a name of
// the store's own or longer than 255 bytes, a DataAttribute that is the
// chunk key or Parent, Write with Compression or Objects, Write with S
// attributes and a ChunkSize below 4).
func New(c Client, parents, chunks string, optFns ...func(*Options)) (*Store, error) {
	switch {
	case errs.IsNil(c):
		return nil, invalid("New", "nil client")
	case parents == "":
		return nil, invalid("New", "empty parents table name")
	case chunks == "":
		return nil, invalid("New", "empty chunks table name")
	case parents == chunks:
		return nil, invalid("New", "parents and chunks are the same table %q", parents)
	}
	var o Options
	for _, f := range optFns {
		if f != nil {
			f(&o)
		}
	}
	o, maxChunks, err := resolveOptions("New", o)
	if err != nil {
		return nil, err
	}
	return &Store{c: c, obs: observe.For(c), parents: parents, chunks: chunks, opts: o, maxChunks: maxChunks, reads: &readState{}}, nil
}

// resolveOptions replaces o's zero values by their defaults and checks the
// result, for New or for one call of method. It also returns the largest
// sequence number a payload of MaxSize can need.
func resolveOptions(method string, o Options) (Options, int, error) {
	if o.ChunkKeyAttribute == "" {
		o.ChunkKeyAttribute = DefaultChunkKeyAttribute
	}
	if o.ChunkSize == 0 {
		o.ChunkSize = DefaultChunkSize
	}
	defaultInline := o.InlineLimit == 0
	if defaultInline {
		o.InlineLimit = DefaultInlineLimit
	}
	if o.MaxSize == 0 {
		o.MaxSize = DefaultMaxSize
	}
	if o.ReadAttempts == 0 {
		o.ReadAttempts = DefaultReadAttempts
	}
	if o.Grace == 0 {
		o.Grace = DefaultGrace
	}
	if o.MaxConcurrency == 0 {
		o.MaxConcurrency = DefaultMaxConcurrency
	}
	if o.MinCompressSize == 0 {
		o.MinCompressSize = DefaultMinCompressSize
	}
	if o.MaxCompressRatio == 0 {
		o.MaxCompressRatio = DefaultMaxCompressRatio
	}
	o, err := resolveObjectOptions(method, o)
	if err != nil {
		return Options{}, 0, err
	}
	switch {
	case len(o.ChunkKeyAttribute) > 255:
		err = invalid(method, "Options.ChunkKeyAttribute of %d bytes, limit 255", len(o.ChunkKeyAttribute))
	case !utf8.ValidString(o.ChunkKeyAttribute):
		err = invalid(method, "Options.ChunkKeyAttribute %q is not valid UTF-8", o.ChunkKeyAttribute)
	case o.ChunkSize < 1 || o.ChunkSize > maxChunkData:
		err = invalid(method, "Options.ChunkSize %d outside [1, %d]", o.ChunkSize, maxChunkData)
	case o.InlineLimit > ddbsize.MaxItemSize:
		err = invalid(method, "Options.InlineLimit %d above the item limit %d", o.InlineLimit, ddbsize.MaxItemSize)
	case o.MaxSize < 0:
		err = invalid(method, "negative Options.MaxSize %d", o.MaxSize)
	case o.MaxSize > maxMaxSize:
		err = invalid(method, "Options.MaxSize %d above %d", o.MaxSize, int64(maxMaxSize))
	case o.ReadAttempts < 0:
		err = invalid(method, "negative Options.ReadAttempts %d", o.ReadAttempts)
	case o.Grace < 0:
		err = invalid(method, "negative Options.Grace %v", o.Grace)
	case o.MaxConcurrency < 0:
		err = invalid(method, "negative Options.MaxConcurrency %d", o.MaxConcurrency)
	case o.Compression != None && o.Compression != Gzip && o.Compression != Zstd:
		err = invalid(method, "unknown Options.Compression %q", o.Compression)
	case o.MinCompressSize > maxChunkData:
		err = invalid(method, "Options.MinCompressSize %d above %d", o.MinCompressSize, maxChunkData)
	case math.IsNaN(o.MaxCompressRatio):
		err = invalid(method, "Options.MaxCompressRatio is NaN")
	case o.Guide != nil:
		err = o.resolveGuide(method)
	}
	if err != nil {
		return Options{}, 0, err
	}
	// Put decides on inlining from the first chunk, which is known to be
	// the only one only if it is short.
	if limit := o.maxInlineLimit(); defaultInline {
		o.InlineLimit = min(o.InlineLimit, limit)
	} else if o.InlineLimit > limit {
		return Options{}, 0, invalid(method, "Options.InlineLimit %d above %d, the most Options.ChunkSize %d allows: Put tells a payload is inline from its first chunk",
			o.InlineLimit, limit, o.ChunkSize)
	}
	maxStored := o.MaxSize + o.MaxSize/64 + 1<<16 // compression can grow data a little
	return o, int((maxStored + int64(o.ChunkSize) - 1) / int64(o.ChunkSize)), nil
}

// maxMaxSize bounds Options.MaxSize so that sizes computed from it cannot
// overflow: 1 PiB, far beyond anything DynamoDB would hold for one key.
const maxMaxSize = 1 << 50

// begin checks what every call takes (a Store made by New, a ctx) and
// returns the Store the call runs with: s itself, or a copy whose Options
// the call's optFns changed (and that are checked as New checks them).
func (s *Store) begin(ctx context.Context, method string, optFns []func(*Options)) (*Store, error) {
	switch {
	case s == nil || s.c == nil:
		return nil, invalid(method, "Store not created by New")
	case ctx == nil:
		return nil, invalid(method, "nil ctx")
	}
	if len(optFns) == 0 {
		return s, nil
	}
	o := s.opts
	if o.Guide != nil {
		g := *o.Guide // a call's optFns must not change the Store's
		o.Guide = &g
	}
	for _, f := range optFns {
		if f != nil {
			f(&o)
		}
	}
	call := *s
	var err error
	if call.opts, call.maxChunks, err = resolveOptions(method, o); err != nil {
		return nil, err
	}
	return &call, nil
}

// minChunkOverhead is the least a chunk item adds to its data: the names of
// its three attributes, a one-byte parent key and the shortest chunk key.
const minChunkOverhead = len("ChunkKey") + 1 + 1 + versionLen + 1 + 1 + len(attrData) + len(attrParent) + 3 + 1 + 1 + 1

// maxChunkData is the largest ChunkSize New accepts: no Store writes a
// chunk holding more.
const maxChunkData = ddbsize.MaxItemSize - minChunkOverhead

// maxGzipRatio bounds how much a gzip stream can expand: deflate codes a
// 258-byte match in no fewer than two bits.
const maxGzipRatio = 1032

// maxZstdRatio bounds how much a zstd stream can expand: every block has a
// 3-byte header and decodes to at most 128 KiB.
const maxZstdRatio = (128 << 10) / 3

// Info describes a stored payload: what Stat returns and what Put and Get
// report. The zero value describes nothing.
type Info struct {
	// Version identifies the write that stored the payload; every Put
	// creates a new one.
	Version string
	// Size is the payload length; StoredSize the bytes stored after
	// compression. Both are -1 for a chunked payload in the guide's
	// layout that records no length (see NoChecksum).
	Size, StoredSize int64
	// Chunks is the number of chunk items, 0 for a payload kept inline
	// or in an object.
	Chunks int
	// Object is the key of the object holding the payload when it is
	// offloaded to Options.Objects, "" otherwise.
	Object string
	// SHA256 is the checksum of the payload (before compression).
	SHA256 [sha256.Size]byte
	// Compression is how the payload is stored.
	Compression Compression
	// Created is when the Put that stored it started, by the writer's
	// clock; zero for a parent in the guide's layout, which records no
	// time.
	Created time.Time
	// Guide reports a parent in the guide's layout (Options.Guide): its
	// Version is a number, or "" for a short message written without
	// ChunkVersion, as the guide shows it (Put writes one).
	Guide bool
	// NoChecksum reports a parent that records no SHA-256 (the guide's
	// layout): SHA256 is zero, and a read verifies only the chunk count,
	// and the length where the parent records one (ChunkBytes). Size and
	// StoredSize are -1 when a chunked payload's length is recorded
	// nowhere, until Get has read it.
	NoChecksum bool
	// Attributes are the parent item's other attributes: everything but
	// the key and the store's own.
	Attributes map[string]types.AttributeValue
}

// UnmarshalAttributes decodes Attributes into out with
// attributevalue.UnmarshalMap; into a *map[string]types.AttributeValue
// it copies them.
func (i Info) UnmarshalAttributes(out any) error {
	return avmap.Unmarshal(i.Attributes, out)
}

// keyPrefix validates key for this store and returns its chunk-key prefix.
func (s *Store) keyPrefix(key Key) (string, error) {
	p, err := key.prefix()
	if err != nil {
		return "", err
	}
	longest := len(chunkKey(p, newVersion(time.Time{}), s.maxChunks))
	if longest > ddbsize.MaxPartitionKeyBytes {
		return "", fmt.Errorf("%w: key %v: chunk keys would be up to %d bytes, limit %d",
			ErrInvalidKey, key, longest, ddbsize.MaxPartitionKeyBytes)
	}
	return p, nil
}

// clock returns the current time.
func (s *Store) clock() time.Time {
	if s.now != nil {
		return s.now()
	}
	return time.Now()
}
