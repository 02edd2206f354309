package chunk

import (
	"context"
	"crypto/sha256"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynashard/dynashard/internal/ddbsize"
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

// Compression names how a payload is stored. The zero value stores it as
// is.
type Compression string

// Supported compressions.
const (
	None Compression = ""
	Gzip Compression = "gzip" // compress/gzip at its default level
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
)

// Options configures a Store. The zero value of every field selects its
// documented default. Writers, readers and sweepers sharing tables must use
// the same ChunkKeyAttribute and Grace.
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
	// instead of in chunks. Zero means DefaultInlineLimit; negative stores
	// every non-empty payload in chunks.
	InlineLimit int

	// MaxSize is the largest payload Put accepts, in bytes before
	// compression. Zero means DefaultMaxSize.
	MaxSize int64

	// Compression is how Put stores payloads. Readers decode whatever a
	// parent records, whatever this is set to. Default None.
	Compression Compression

	// EventuallyConsistent makes Get, Open and Stat read the parent with an
	// eventually consistent read (half the cost), which may return the
	// previous version for a moment after a Put. Re-reads after a missing
	// chunk are always consistent. Default false: consistent reads.
	EventuallyConsistent bool

	// ReadAttempts bounds how many versions Get and Open try when the
	// version they read is replaced (and its chunks deleted) under them.
	// Default 5.
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

	// MaxConcurrency bounds the batch requests one call has in flight.
	// Default 4.
	MaxConcurrency int
}

// Store stores payloads of any size up to Options.MaxSize under parent items
// of one table, with their chunks in another. The zero value is not usable;
// create one with New. A Store is safe for concurrent use, also with other
// Stores (in other processes) on the same tables.
type Store struct {
	c       Client
	parents string
	chunks  string
	opts    Options

	// maxChunks bounds the sequence numbers of a payload of MaxSize, for the
	// key-length budget.
	maxChunks int

	// Test hooks, nil in production. now replaces time.Now; beforeFlip
	// runs after the last chunk is written and before the parent update.
	now        func() time.Time
	beforeFlip func(ctx context.Context) error
	flipDelay  time.Duration // replaces flipBaseDelay
}

// New returns a Store keeping parent items in table parents and chunks in
// table chunks, which must have a simple primary key of type S named
// Options.ChunkKeyAttribute. Parents may have any key schema. New panics on
// options that could never work (a chunk size that cannot fit an item, a
// negative size), as a programming error; it makes no request.
func New(c Client, parents, chunks string, optFns ...func(*Options)) *Store {
	var o Options
	for _, f := range optFns {
		f(&o)
	}
	if o.ChunkKeyAttribute == "" {
		o.ChunkKeyAttribute = DefaultChunkKeyAttribute
	}
	if o.ChunkSize == 0 {
		o.ChunkSize = DefaultChunkSize
	}
	if o.InlineLimit == 0 {
		o.InlineLimit = DefaultInlineLimit
	}
	if o.MaxSize == 0 {
		o.MaxSize = DefaultMaxSize
	}
	if o.ReadAttempts == 0 {
		o.ReadAttempts = 5
	}
	if o.Grace == 0 {
		o.Grace = DefaultGrace
	}
	if o.MaxConcurrency == 0 {
		o.MaxConcurrency = 4
	}
	switch {
	case c == nil:
		panic("chunk: nil Client")
	case parents == "" || chunks == "":
		panic("chunk: empty table name")
	case parents == chunks:
		panic("chunk: parents and chunks must be different tables")
	case len(o.ChunkKeyAttribute) > 255:
		panic("chunk: ChunkKeyAttribute longer than 255 bytes")
	case o.ChunkSize < 1 || o.ChunkSize > ddbsize.MaxItemSize-minChunkOverhead:
		panic(fmt.Sprintf("chunk: ChunkSize %d outside [1, %d]", o.ChunkSize, ddbsize.MaxItemSize-minChunkOverhead))
	case o.InlineLimit > ddbsize.MaxItemSize:
		panic(fmt.Sprintf("chunk: InlineLimit %d above the item limit", o.InlineLimit))
	case o.MaxSize < 0 || o.ReadAttempts < 0 || o.Grace < 0 || o.MaxConcurrency < 0:
		panic("chunk: negative option")
	case o.Compression != None && o.Compression != Gzip:
		panic(fmt.Sprintf("chunk: unknown Compression %q", o.Compression))
	}
	if o.InlineLimit >= o.ChunkSize {
		// Put decides on inlining from the first chunk, which is known to
		// be the only one only if it is short.
		o.InlineLimit = o.ChunkSize - 1
	}
	maxStored := o.MaxSize + o.MaxSize/64 + 1<<16 // gzip can grow incompressible data a little
	return &Store{
		c: c, parents: parents, chunks: chunks, opts: o,
		maxChunks: int((maxStored + int64(o.ChunkSize) - 1) / int64(o.ChunkSize)),
	}
}

// minChunkOverhead is the least a chunk item adds to its data: the names of
// its three attributes, a one-byte parent key and the shortest chunk key.
const minChunkOverhead = len("ChunkKey") + 1 + 1 + versionLen + 1 + 1 + len(attrData) + len(attrParent) + 3 + 1 + 1 + 1

// Parent item attributes. Put rejects caller attributes with these names.
const (
	attrCount    = "ChunkCount"       // N: number of chunks, 0 when inline
	attrVersion  = "ChunkVersion"     // S: current version id
	attrPrev     = "ChunkPrevious"    // S: the version this one replaced, if any
	attrSize     = "ChunkBytes"       // N: payload length
	attrStored   = "ChunkStoredBytes" // N: stored length (after compression)
	attrSHA      = "ChunkSHA256"      // B: SHA-256 of the payload
	attrEncoding = "ChunkEncoding"    // S: Compression, absent for None
	attrInline   = "ChunkData"        // B: the stored payload when inline
)

var reserved = []string{attrCount, attrVersion, attrPrev, attrSize, attrStored, attrSHA, attrEncoding, attrInline}

// Chunk item attributes besides the key.
const (
	attrData   = "Data"   // B: this chunk's stored bytes
	attrParent = "Parent" // M: the parent's key, for Sweep
)

// Info describes a stored payload: what Stat returns and what Put and Get
// report. The zero value describes nothing.
type Info struct {
	// Version identifies the write that stored the payload; every Put
	// creates a new one.
	Version string
	// Size is the payload length; StoredSize the bytes stored after
	// compression.
	Size, StoredSize int64
	// Chunks is the number of chunk items, 0 for a payload kept inline.
	Chunks int
	// SHA256 is the checksum of the payload (before compression).
	SHA256 [sha256.Size]byte
	// Compression is how the payload is stored.
	Compression Compression
	// Created is when the Put that stored it started, by the writer's clock.
	Created time.Time
	// Attributes are the parent item's other attributes: everything but
	// the key and the store's own.
	Attributes map[string]types.AttributeValue
}

// UnmarshalAttributes decodes Attributes into out with
// attributevalue.UnmarshalMap.
func (i Info) UnmarshalAttributes(out any) error {
	return attributevalue.UnmarshalMap(i.Attributes, out)
}

// parent is a parent item as read.
type parent struct {
	Info
	prev   string // ChunkPrevious
	inline []byte
}

// parseParent decodes a parent item. ok is false for an absent item and for
// one that holds no payload (no ChunkVersion).
func (s *Store) parseParent(key Key, item map[string]types.AttributeValue) (p parent, ok bool, err error) {
	if item == nil {
		return p, false, nil
	}
	v, ok := item[attrVersion].(*types.AttributeValueMemberS)
	if !ok {
		return p, false, nil
	}
	p.Version = v.Value
	bad := func(why string) (parent, bool, error) {
		return parent{}, false, &CorruptError{Key: key, Version: p.Version, Reason: "parent item: " + why}
	}
	var err2 error
	num := func(name string) int64 {
		n, ok := item[name].(*types.AttributeValueMemberN)
		if !ok {
			err2 = fmt.Errorf("%s missing or not a number", name)
			return 0
		}
		x, err := strconv.ParseInt(n.Value, 10, 64)
		if err != nil || x < 0 {
			err2 = fmt.Errorf("%s = %q", name, n.Value)
		}
		return x
	}
	p.Chunks = int(num(attrCount))
	p.Size = num(attrSize)
	p.StoredSize = num(attrStored)
	if err2 != nil {
		return bad(err2.Error())
	}
	sum, ok := item[attrSHA].(*types.AttributeValueMemberB)
	if !ok || len(sum.Value) != sha256.Size {
		return bad(attrSHA + " missing or malformed")
	}
	copy(p.SHA256[:], sum.Value)
	if e, ok := item[attrEncoding].(*types.AttributeValueMemberS); ok {
		p.Compression = Compression(e.Value)
		if p.Compression != Gzip {
			return bad("unknown encoding " + strconv.Quote(e.Value))
		}
	}
	if pv, ok := item[attrPrev].(*types.AttributeValueMemberS); ok {
		p.prev = pv.Value
	}
	if d, ok := item[attrInline].(*types.AttributeValueMemberB); ok {
		p.inline = d.Value
		if p.inline == nil {
			p.inline = []byte{}
		}
	}
	switch {
	case p.Chunks == 0 && int64(len(p.inline)) != p.StoredSize:
		return bad(fmt.Sprintf("inline data is %d bytes, %s says %d", len(p.inline), attrStored, p.StoredSize))
	case p.Chunks > 0 && p.inline != nil:
		return bad("both inline data and chunks")
	case p.Chunks > 0 && int64(p.Chunks) > p.StoredSize:
		return bad(fmt.Sprintf("%d chunks for %d bytes", p.Chunks, p.StoredSize))
	}
	if t, err := versionTime(p.Version); err == nil {
		p.Created = t
	}
	p.Attributes = map[string]types.AttributeValue{}
	for name, av := range item {
		if name == key.PartitionName || name == key.SortName || isReserved(name) {
			continue
		}
		p.Attributes[name] = av
	}
	return p, true, nil
}

func isReserved(name string) bool {
	for _, r := range reserved {
		if name == r {
			return true
		}
	}
	return false
}

// readParent reads the parent item. It returns ErrNotFound (wrapped) when
// there is no payload.
func (s *Store) readParent(ctx context.Context, key Key, consistent bool) (parent, error) {
	out, err := s.c.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      &s.parents,
		Key:            key.item(),
		ConsistentRead: &consistent,
	})
	if err != nil {
		return parent{}, fmt.Errorf("chunk: read parent %v: %w", key, err)
	}
	p, ok, err := s.parseParent(key, out.Item)
	if err != nil {
		return parent{}, err
	}
	if !ok {
		return parent{}, fmt.Errorf("%w: key %v", ErrNotFound, key)
	}
	return p, nil
}

// Stat returns what is stored under key without reading any chunk: one
// GetItem of the parent. It returns an error wrapping ErrNotFound if there
// is no payload.
func (s *Store) Stat(ctx context.Context, key Key) (Info, error) {
	if _, err := s.keyPrefix(key); err != nil {
		return Info{}, err
	}
	p, err := s.readParent(ctx, key, !s.opts.EventuallyConsistent)
	if err != nil {
		return Info{}, err
	}
	return p.Info, nil
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
