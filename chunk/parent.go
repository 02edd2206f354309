package chunk

import (
	"context"
	"crypto/sha256"
	"fmt"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynashard/dynashard/internal/parentio"
)

// This file reads parent items: in full for readers (parent), and the
// version alone for writers, Delete and Sweep (current), in either layout.

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
	attrChunk    = "ChunkSize"        // N: stored bytes per chunk but the last; absent when not chunked, and in older parents
)

var reserved = []string{attrCount, attrVersion, attrPrev, attrSize, attrStored, attrSHA, attrEncoding, attrInline, attrObject, attrChunk}

// Chunk item attributes besides the key.
const (
	attrData   = "Data"   // B: this chunk's stored bytes
	attrParent = "Parent" // M: the parent's key, for Sweep
)

// parent is a parent item as read.
type parent struct {
	Info
	prev   string // ChunkPrevious
	inline []byte
	// chunkSize is the stored bytes of every chunk but the last, as
	// ChunkSize records it; 0 where it is not recorded (parents written
	// before it was, and the guide's layout).
	chunkSize int64
	guide     bool // in the guide's layout: its chunks hold Options.Guide's data attribute
}

// parseParent decodes a parent item. ok is false for an absent item and for
// one that holds no payload (no ChunkVersion).
func (s *Store) parseParent(key Key, item map[string]types.AttributeValue) (p parent, ok bool, err error) {
	if item == nil {
		return p, false, nil
	}
	if g, ok, err, isGuide := s.parseGuideParent(key, item); isGuide {
		return g, ok, err
	}
	v, ok := asS(item[attrVersion])
	if !ok {
		return p, false, nil
	}
	p.Version = v.Value
	bad := func(why string) (parent, bool, error) {
		return parent{}, false, &CorruptError{Key: key, Version: p.Version, Reason: "parent item: " + why}
	}
	var err2 error
	num := func(name string) int64 {
		n, ok := asN(item[name])
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
	if o, ok := asS(item[attrObject]); ok {
		// An offloaded payload records ChunkCount -1, which readers
		// without offload refuse instead of taking it for an inline one.
		if n, ok := asN(item[attrCount]); !ok || n.Value != objectCount {
			return bad(attrObject + " with " + attrCount + " other than " + objectCount)
		}
		p.Object = o.Value
	} else {
		p.Chunks = int(num(attrCount))
	}
	p.Size = num(attrSize)
	p.StoredSize = num(attrStored)
	if err2 != nil {
		return bad(err2.Error())
	}
	sum, ok := asB(item[attrSHA])
	if !ok || len(sum.Value) != sha256.Size {
		return bad(attrSHA + " missing or malformed")
	}
	copy(p.SHA256[:], sum.Value)
	if e, ok := asS(item[attrEncoding]); ok {
		p.Compression = Compression(e.Value)
		if p.Compression != Gzip && p.Compression != Zstd {
			return bad("unknown encoding " + strconv.Quote(e.Value))
		}
	}
	if pv, ok := asS(item[attrPrev]); ok {
		p.prev = pv.Value
	}
	if d, ok := asB(item[attrInline]); ok {
		p.inline = d.Value
		if p.inline == nil {
			p.inline = []byte{}
		}
	}
	if _, ok := item[attrChunk]; ok {
		if p.chunkSize = num(attrChunk); err2 != nil || p.chunkSize == 0 {
			return bad(fmt.Sprintf("%s = %v", attrChunk, item[attrChunk]))
		}
	}
	if why := p.contradiction(); why != "" {
		return bad(why)
	}
	if t, err := versionTime(p.Version); err == nil {
		p.Created = t
	}
	p.Attributes = map[string]types.AttributeValue{}
	for name, av := range item {
		if name == key.PartitionName || name == key.SortName || s.reservedName(name) {
			continue
		}
		p.Attributes[name] = av
	}
	return p, true, nil
}

// placement says where p's stored bytes are.
func (p parent) placement() placement {
	return placement{version: p.Version, chunks: p.Chunks, object: p.Object}
}

// contradiction describes how p's sizes, chunk count and inline data
// contradict each other, or returns "" if they agree: a damaged parent
// caught here costs no chunk read. (Its chunks can hold no more than the
// largest ChunkSize New accepts; gzip and zstd cannot inflate beyond
// maxGzipRatio and maxZstdRatio.)
func (p parent) contradiction() string {
	if p.StoredSize < 0 {
		// The guide's layout, which records no length: only the chunk
		// count and the inline data can disagree.
		if p.Chunks > 0 && p.inline != nil {
			return "both inline data and chunks"
		}
		return ""
	}
	switch {
	case p.Object != "" && p.inline != nil:
		return "both inline data and an object"
	case p.Object == "" && p.Chunks == 0 && int64(len(p.inline)) != p.StoredSize:
		return fmt.Sprintf("inline data is %d bytes, %s says %d", len(p.inline), attrStored, p.StoredSize)
	case p.Chunks > 0 && p.inline != nil:
		return "both inline data and chunks"
	case p.Chunks > 0 && int64(p.Chunks) > p.StoredSize:
		return fmt.Sprintf("%d chunks for %d bytes", p.Chunks, p.StoredSize)
	case p.Chunks > 0 && (p.StoredSize-1)/int64(maxChunkData) >= int64(p.Chunks):
		return fmt.Sprintf("%d stored bytes cannot fit %d chunks", p.StoredSize, p.Chunks)
	case p.chunkSize != 0 && (p.Chunks == 0 || p.chunkSize > int64(maxChunkData)):
		return fmt.Sprintf("%s %d for %d chunks", attrChunk, p.chunkSize, p.Chunks)
	case p.chunkSize != 0 && (int64(p.Chunks-1)*p.chunkSize >= p.StoredSize || int64(p.Chunks)*p.chunkSize < p.StoredSize):
		return fmt.Sprintf("%d chunks of %s %d cannot hold %d stored bytes", p.Chunks, attrChunk, p.chunkSize, p.StoredSize)
	case p.Compression == None && p.Size != p.StoredSize:
		return fmt.Sprintf("%s %d differs from %s %d without compression", attrSize, p.Size, attrStored, p.StoredSize)
	case p.Compression == Gzip && p.Size/maxGzipRatio > p.StoredSize:
		return fmt.Sprintf("%d bytes cannot inflate to %d", p.StoredSize, p.Size)
	case p.Compression == Zstd && p.Size/maxZstdRatio > p.StoredSize:
		return fmt.Sprintf("%d bytes cannot inflate to %d", p.StoredSize, p.Size)
	}
	return ""
}

// chunkBound is the most stored bytes one chunk of p can hold: what the
// parent records (ChunkSize), or for a parent that records none, what its
// sizes allow: every chunk but the last holds the same number, and the
// last at least one byte.
func (p parent) chunkBound() int64 {
	if p.chunkSize > 0 {
		return p.chunkSize
	}
	if p.StoredSize < 0 {
		return int64(maxChunkData) // no length recorded: any chunk may be full
	}
	b := p.StoredSize
	if p.Chunks > 1 {
		b = (p.StoredSize - 1) / int64(p.Chunks-1)
	}
	return max(1, min(b, int64(maxChunkData)))
}

// asS, asN and asB return v as an S, N or B value, if it is one and not a
// nil pointer: a parent item passed to Resolve comes from the caller.
func asS(v types.AttributeValue) (*types.AttributeValueMemberS, bool) {
	x, ok := v.(*types.AttributeValueMemberS)
	return x, ok && x != nil
}

func asN(v types.AttributeValue) (*types.AttributeValueMemberN, bool) {
	x, ok := v.(*types.AttributeValueMemberN)
	return x, ok && x != nil
}

func asB(v types.AttributeValue) (*types.AttributeValueMemberB, bool) {
	x, ok := v.(*types.AttributeValueMemberB)
	return x, ok && x != nil
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
	out, err := parentio.GetItem(ctx, s.c, &dynamodb.GetItemInput{
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
// GetItem of the parent, eventually consistent unless
// Options.ConsistentRead. optFns change the Store's Options for this call.
// It returns an error wrapping ErrNotFound if there is no payload.
func (s *Store) Stat(ctx context.Context, key Key, optFns ...func(*Options)) (info Info, err error) {
	ctx, call := s.start(ctx, "chunk.Stat")
	defer func() { end(ctx, call, info, err) }()
	if call.Traced() {
		s.traceKey(call, key)
	}
	s, err = s.begin(ctx, "Stat", optFns)
	if err != nil {
		return Info{}, err
	}
	if _, err := s.keyPrefix(key); err != nil {
		return Info{}, err
	}
	p, err := s.readParent(ctx, key, s.opts.ConsistentRead)
	if err != nil {
		return Info{}, err
	}
	return p.Info, nil
}

// current is the parent's state a Put starts from, and what Delete and
// Sweep compare versions with.
type current struct {
	exists bool // the parent holds a payload
	placement
	value types.AttributeValue // version as stored (S, or N in the guide's layout); nil for none
	prev  string               // the version this one replaced
}

// readCurrent reads the parent's version and where its bytes are,
// consistently.
func (s *Store) readCurrent(ctx context.Context, key Key) (current, error) {
	proj, names := "#v, #c, #p, #o", map[string]string{"#v": attrVersion, "#c": attrCount, "#p": attrPrev, "#o": attrObject}
	if g := s.opts.Guide; g != nil {
		// The guide's short message may have no ChunkVersion: only its inline
		// attribute says the parent holds a payload.
		proj, names["#i"] = proj+", #i", g.InlineAttribute
	}
	out, err := parentio.GetItem(ctx, s.c, &dynamodb.GetItemInput{
		TableName:                &s.parents,
		Key:                      key.item(),
		ConsistentRead:           aws.Bool(true),
		ProjectionExpression:     &proj,
		ExpressionAttributeNames: names,
	})
	if err != nil {
		return current{}, fmt.Errorf("chunk: read parent %v: %w", key, err)
	}
	return s.parseCurrent(key, out.Item)
}

// parseCurrent decodes the projection readCurrent reads, in either layout.
func (s *Store) parseCurrent(key Key, item map[string]types.AttributeValue) (current, error) {
	var c current
	switch v := item[attrVersion].(type) {
	case *types.AttributeValueMemberS:
		c = current{exists: true, placement: placement{version: v.Value}, value: v}
	case *types.AttributeValueMemberN:
		if s.opts.Guide == nil {
			return current{}, &CorruptError{Key: key, Version: v.Value,
				Reason: "parent item: " + attrVersion + " is a number, as in the guide's layout: set Options.Guide to write it"}
		}
		version, err := canonicalNumber(v.Value)
		if err != nil {
			return current{}, &CorruptError{Key: key, Reason: fmt.Sprintf("parent item: %s = %q", attrVersion, v.Value)}
		}
		c = current{exists: true, placement: placement{version: version}, value: v}
	default:
		// The guide's short message: a payload with no version at all.
		if g := s.opts.Guide; g != nil && item[g.InlineAttribute] != nil {
			c.exists = true
		}
		return c, nil
	}
	if o, ok := asS(item[attrObject]); ok {
		c.object = o.Value
	} else if n, ok := asN(item[attrCount]); ok {
		c.chunks, _ = strconv.Atoi(n.Value)
	}
	switch p := item[attrPrev].(type) {
	case *types.AttributeValueMemberS:
		c.prev = p.Value
	case *types.AttributeValueMemberN:
		c.prev, _ = canonicalNumber(p.Value)
	}
	return c, nil
}

// holds reports whether the parent holds version.
func (c current) holds(version string) bool { return c.exists && c.version == version }

func describeVersion(c current) string {
	if !c.exists {
		return "no payload"
	}
	return "version " + c.version
}

// condition is what a flip requires of the parent: still this version (of
// its type), or still no version.
func (c current) condition() expression.ConditionBuilder {
	version := expression.NameNoDotSplit(attrVersion)
	if c.value == nil {
		return expression.AttributeNotExists(version)
	}
	return version.Equal(expression.Value(c.value))
}

// deleteCondition and deleteValues are condition for Delete's request,
// whose placeholder for ChunkVersion is #v.
func (c current) deleteCondition() string {
	if c.value == nil {
		return "attribute_not_exists(#v)"
	}
	return "#v = :v"
}

func (c current) deleteValues() map[string]types.AttributeValue {
	if c.value == nil {
		return nil
	}
	return map[string]types.AttributeValue{":v": c.value}
}
