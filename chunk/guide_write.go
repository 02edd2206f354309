package chunk

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"strconv"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynashard/dynashard/internal/observe"
)

// chunkSource is what Put reads a payload from: a source, or a runeSource over
// one for text chunks.
type chunkSource interface {
	next() ([]byte, error)
	encoding() Compression
	checksum() (int64, [sha256.Size]byte)
	storedBytes() int64
}

// storedBytes returns the stored bytes next has returned so far.
func (s *source) storedBytes() int64 { return s.stored }

// payloadOf returns what Put reads src through: src itself, or for text
// chunks a runeSource cutting it on rune boundaries.
func (s *Store) payloadOf(src *source) chunkSource {
	if s.textWrites() {
		return &runeSource{source: src, size: s.opts.ChunkSize}
	}
	return src
}

// errNotText reports a payload that an S attribute cannot hold.
var errNotText = fmt.Errorf("%w: payload is not valid UTF-8, which Options.Guide's S attributes require", ErrInvalid)

// checkText rejects, before any request, a payload Put cannot store as
// text.
func (s *Store) checkText(key Key, data []byte) error {
	if s.textWrites() && !utf8.Valid(data) {
		return fmt.Errorf("%w: key %v", errNotText, key)
	}
	return nil
}

// runeSource re-cuts a source's chunks on rune boundaries: each chunk is
// valid UTF-8 of at most size bytes, and every chunk but the last holds
// more than size-utf8.UTFMax bytes. Each is freshly allocated.
type runeSource struct {
	*source
	size int
	buf  []byte // read from the source, not yet returned
	eof  bool
}

func (r *runeSource) next() ([]byte, error) {
	for !r.eof && len(r.buf) <= r.size {
		c, err := r.source.next()
		if err == io.EOF {
			r.eof = true
			break
		}
		if err != nil {
			return nil, err
		}
		r.buf = append(r.buf, c...)
	}
	if len(r.buf) == 0 {
		return nil, io.EOF
	}
	n := len(r.buf)
	if n > r.size {
		n = r.size
		for n > 0 && !utf8.RuneStart(r.buf[n]) {
			n--
		}
	}
	c := r.buf[:n:n]
	if n == 0 || !utf8.Valid(c) {
		return nil, errNotText
	}
	r.buf = append([]byte(nil), r.buf[n:]...)
	return c, nil
}

// reserve takes this write's version number in the guide's layout from a
// counter in the chunk table, before any chunk is written. Two attempts
// that read the same version never get the same number, so they never
// write the same chunk keys: BatchWriteItem has no conditions, and
// attempts that both wrote "the next version" would overwrite each
// other's chunks before one lost the flip. The number exceeds the version
// read, which the flip requires to be still current, so it names no chunk
// a reader may follow. The counter item (key "<parent>#ChunkVersion") is
// never deleted, so numbers are not reused after a Delete either.
func (w *write) reserve(ctx context.Context) error {
	s := w.s
	var base int64
	if n, ok := w.cur.value.(*types.AttributeValueMemberN); ok {
		f, err := strconv.ParseFloat(n.Value, 64)
		if err != nil || f < 0 || f >= 1<<62 {
			return &CorruptError{Key: w.key, Version: w.cur.version, Reason: "parent item: " + attrVersion + " is not a counter"}
		}
		base = int64(f)
	}
	key := map[string]types.AttributeValue{s.opts.ChunkKeyAttribute: &types.AttributeValueMemberS{Value: w.prefix + "#" + attrVersion}}
	names := map[string]string{"#n": attrVersion}
	v := number(base)
	for range 3 {
		out, err := observe.Do(ctx, s.c.UpdateItem, &dynamodb.UpdateItemInput{
			TableName:                 &s.chunks,
			Key:                       key,
			UpdateExpression:          aws.String("SET #n = if_not_exists(#n, :v) + :one"),
			ConditionExpression:       aws.String("attribute_not_exists(#n) OR #n >= :v"),
			ExpressionAttributeNames:  names,
			ExpressionAttributeValues: map[string]types.AttributeValue{":v": v, ":one": number(1)},
			ReturnValues:              types.ReturnValueUpdatedNew,
		})
		var ccf *types.ConditionalCheckFailedException
		switch {
		case err == nil:
			n, ok := asN(out.Attributes[attrVersion])
			if !ok {
				return fmt.Errorf("chunk: put %v: reserving a version: no %s returned", w.key, attrVersion)
			}
			w.version, err = canonicalNumber(n.Value)
			return err
		case !errors.As(err, &ccf):
			return fmt.Errorf("chunk: put %v: reserving a version: %w", w.key, err)
		}
		// The counter is behind the parent (a writer that knows only the
		// guide moved it): raise it, never lower it, and take the next.
		_, err = observe.Do(ctx, s.c.UpdateItem, &dynamodb.UpdateItemInput{
			TableName:                 &s.chunks,
			Key:                       key,
			UpdateExpression:          aws.String("SET #n = :v"),
			ConditionExpression:       aws.String("#n < :v"),
			ExpressionAttributeNames:  names,
			ExpressionAttributeValues: map[string]types.AttributeValue{":v": v},
		})
		if err != nil && !errors.As(err, &ccf) {
			return fmt.Errorf("chunk: put %v: reserving a version: %w", w.key, err)
		}
	}
	return fmt.Errorf("%w: put %v: could not reserve a version above %d", ErrConflict, w.key, base)
}

// guideUpdate is parentUpdate for the guide's layout: ChunkVersion as a
// number, ChunkCount only for a chunked payload, the payload inline in
// Options.Guide's attribute otherwise, and ChunkPrevious (which readers of
// the guide ignore) to decide the outcome of a lost flip response. This
// package's other attributes go, unless Guide.Checksum keeps length and
// checksum.
func (w *write) guideUpdate() (set map[string]types.AttributeValue, remove []string) {
	g := w.s.opts.Guide
	version := types.AttributeValue(&types.AttributeValueMemberN{Value: w.version})
	if _, err := strconv.ParseInt(w.version, 10, 64); err != nil {
		// Before reserve (checkParentSize): a placeholder at least as long.
		version = &types.AttributeValueMemberN{Value: "9223372036854775807"}
	}
	set = map[string]types.AttributeValue{attrVersion: version}
	remove = []string{attrStored, attrEncoding, attrChunk}
	if g.InlineAttribute != attrInline {
		remove = append(remove, attrInline)
	}
	setOrRemove := func(name string, v types.AttributeValue) {
		if v == nil {
			remove = append(remove, name)
			return
		}
		set[name] = v
	}
	if w.inline != nil || w.chunks == 0 {
		// No chunks: the guide's short message, never ChunkCount 0 (a
		// reader of the guide would ask BatchGetItem for no keys).
		setOrRemove(g.InlineAttribute, typed(g.InlineType, append([]byte{}, w.inline...)))
		setOrRemove(attrCount, nil)
	} else {
		setOrRemove(g.InlineAttribute, nil)
		setOrRemove(attrCount, number(int64(w.chunks)))
	}
	setOrRemove(attrPrev, w.cur.value)
	if g.Checksum {
		setOrRemove(attrSize, number(w.size))
		setOrRemove(attrSHA, &types.AttributeValueMemberB{Value: w.sum[:]})
	} else {
		setOrRemove(attrSize, nil)
		setOrRemove(attrSHA, nil)
	}
	for name, v := range w.attrs {
		setOrRemove(name, v)
	}
	return set, remove
}

// Migrate rewrites the payload stored under key in the layout this Store's
// Put writes, if it is stored in the other one: with Options.Guide set and
// Guide.Write false, a payload in the guide's layout moves to this
// package's checksummed layout (and with Guide.Write, the other way). The
// parent's other attributes stay. It reads the payload whole (a
// consistent Get) and writes it back with Put, on condition that the
// version read is still current: if another write replaced it meanwhile,
// Migrate returns an error wrapping ErrConflict and changes nothing. It
// returns what is stored afterwards, and ErrNotFound if key holds no
// payload. Without Options.Guide it changes nothing.
func (s *Store) Migrate(ctx context.Context, key Key) (info Info, err error) {
	ctx, call := s.start(ctx, "chunk.Migrate")
	defer func() { end(ctx, call, info, err) }()
	if call.Traced() {
		s.traceKey(call, key)
	}
	s, err = s.begin(ctx, "Migrate", nil)
	if err != nil {
		return Info{}, err
	}
	data, info, err := s.Get(ctx, key, func(o *Options) { o.ConsistentRead = true })
	if err != nil || info.Guide == s.guideWrites() {
		return info, err
	}
	version := expression.NameNoDotSplit(attrVersion)
	cond := expression.AttributeNotExists(version)
	switch {
	case info.Guide && info.Version != "":
		cond = version.Equal(expression.Value(&types.AttributeValueMemberN{Value: info.Version}))
	case !info.Guide:
		cond = version.Equal(expression.Value(&types.AttributeValueMemberS{Value: info.Version}))
	}
	return s.Put(ctx, key, data, func(o *PutOptions) { o.Condition = cond })
}
