package chunk

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynashard/dynashard/internal/ddbsize"
	"github.com/dynashard/dynashard/internal/errs"
)

// PutOptions are per-call settings of Put and PutReader. The zero value
// stores no caller attributes.
type PutOptions struct {
	// Attributes are stored on the parent item next to the payload,
	// replacing attributes of the same names; the parent's other
	// attributes are left as they are. Either a map[string]types.AttributeValue
	// or any value attributevalue.MarshalMap accepts (a struct with
	// dynamodbav tags). Key attributes may be included if they equal the
	// Key; the store's own attribute names are rejected with ErrReserved.
	Attributes any

	// Condition, if set, must also hold on the parent for the Put to take
	// effect, e.g. an optimistic-locking check on a caller attribute. It is
	// checked in the same conditional update that switches the payload, so
	// a Put whose condition fails stores nothing and returns an error
	// wrapping ErrConflict. Its placeholders come from the expression
	// builder and cannot collide with the store's own.
	Condition expression.ConditionBuilder
}

// Put stores data under key, replacing what was there, and returns what it
// stored (Info.Attributes: the attributes it set). It writes the chunks
// first and then switches the parent to them in one conditional update, so
// readers see either the old payload or the new one, never a mix. If
// another write switches the parent first, Put removes its chunks and
// returns an error wrapping ErrConflict. A payload above Options.MaxSize
// fails with ErrTooLarge before any request, and so does a parent item that
// caller attributes would take over DynamoDB's item limit whatever it held
// before (and, once the parent is read, before any chunk is written).
// Input no Put can take (a nil ctx, an invalid key, a reserved, nil or
// malformed attribute or condition value) fails with an error matching
// ErrInvalid before any request.
//
// Errors other than ErrConflict and those matching ErrInvalid leave the
// outcome unknown, as with any DynamoDB write: the new payload may or may
// not have been stored. Leftover chunks of such a Put are removed by Sweep.
//
// Put does not keep data after it returns and never writes to it.
func (s *Store) Put(ctx context.Context, key Key, data []byte, optFns ...func(*PutOptions)) (info Info, err error) {
	ctx, call := s.start(ctx, "chunk.Put")
	defer func() { end(ctx, call, info, err) }()
	if call.Traced() {
		s.traceKey(call, key)
	}
	s, err = s.begin(ctx, "Put", nil)
	if err != nil {
		return Info{}, err
	}
	if int64(len(data)) > s.opts.MaxSize {
		return Info{}, fmt.Errorf("%w: key %v: payload of %d bytes, MaxSize %d", ErrTooLarge, key, len(data), s.opts.MaxSize)
	}
	if err := s.checkText(key, data); err != nil {
		return Info{}, err
	}
	return s.put(ctx, "Put", key, newBytesSource(data, s.opts), s.offloads(int64(len(data))), optFns)
}

// PutReader is Put for a payload of unknown length, read from r until
// io.EOF. Memory stays bounded by the batches in flight, whatever the
// payload's size; with Options.Objects, plus the object store's parts in
// flight and up to ObjectThreshold bytes read first to choose between
// chunks and an object (unless r has a Len method). If r has a Len method (bytes.Reader, strings.Reader) a
// payload above Options.MaxSize is rejected before anything is written;
// otherwise Put stops reading one byte past MaxSize, removes the chunks it
// wrote and returns ErrTooLarge. An error from r is returned, wrapped, after
// the same clean-up; nothing becomes visible. A nil r, also a typed nil
// such as (*bytes.Reader)(nil), fails with ErrInvalid.
func (s *Store) PutReader(ctx context.Context, key Key, r io.Reader, optFns ...func(*PutOptions)) (info Info, err error) {
	ctx, call := s.start(ctx, "chunk.PutReader")
	defer func() { end(ctx, call, info, err) }()
	if call.Traced() {
		s.traceKey(call, key)
	}
	s, err = s.begin(ctx, "PutReader", nil)
	if err != nil {
		return Info{}, err
	}
	if errs.IsNil(r) {
		return Info{}, invalid("PutReader", "key %v: nil io.Reader %T", key, r)
	}
	if l, ok := r.(interface{ Len() int }); ok && int64(l.Len()) > s.opts.MaxSize {
		return Info{}, fmt.Errorf("%w: key %v: payload of %d bytes, MaxSize %d", ErrTooLarge, key, l.Len(), s.opts.MaxSize)
	}
	src, offload, err := s.readerSource(key, r)
	if err != nil {
		return Info{}, err
	}
	return s.put(ctx, "PutReader", key, src, offload, optFns)
}

// readerSource returns PutReader's source, and whether the payload goes to
// Options.Objects: with Objects, PutReader reads up to ObjectThreshold
// bytes to learn that, unless r tells its length.
func (s *Store) readerSource(key Key, r io.Reader) (src *source, offload bool, err error) {
	l, hasLen := r.(interface{ Len() int })
	switch {
	case s.opts.Objects == nil:
		return newReaderSource(r, s.opts, s.opts.MaxSize), false, nil
	case hasLen:
		return newReaderSource(r, s.opts, s.opts.MaxSize), s.offloads(int64(l.Len())), nil
	case s.opts.ObjectThreshold < 0:
		return newReaderSource(r, s.opts, s.opts.MaxSize), true, nil
	}
	head, err := io.ReadAll(io.LimitReader(r, min(s.opts.ObjectThreshold, s.opts.MaxSize+1)))
	switch {
	case err != nil:
		return nil, false, fmt.Errorf("chunk: put %v: reading payload: %w", key, err)
	case int64(len(head)) > s.opts.MaxSize:
		return nil, false, fmt.Errorf("%w: key %v: payload above MaxSize %d", ErrTooLarge, key, s.opts.MaxSize)
	case !s.offloads(int64(len(head))):
		return newBytesSource(head, s.opts), false, nil
	}
	return newReaderSource(io.MultiReader(bytes.NewReader(head), r), s.opts, s.opts.MaxSize), true, nil
}

// callerAttributes validates and converts PutOptions.Attributes.
func callerAttributes(method string, key Key, v any, reservedName func(string) bool) (map[string]types.AttributeValue, error) {
	var m map[string]types.AttributeValue
	switch v := v.(type) {
	case nil:
		return nil, nil
	case map[string]types.AttributeValue:
		m = v
	default:
		var err error
		if m, err = attributevalue.MarshalMap(v); err != nil {
			return nil, invalid(method, "key %v: PutOptions.Attributes: %v", key, err)
		}
	}
	out := make(map[string]types.AttributeValue, len(m))
	for name, av := range m {
		if path, ok := nilValue(name, av); ok {
			return nil, invalid(method, "key %v: PutOptions.Attributes: nil value at %s", key, path)
		}
		switch {
		case reservedName(name) || name == "":
			return nil, fmt.Errorf("%w: key %v: attribute %q", ErrReserved, key, name)
		case name == key.PartitionName || (key.SortName != "" && name == key.SortName):
			kv := key.Partition
			if name == key.SortName {
				kv = key.Sort
			}
			if !sameKeyValue(av, kv) {
				return nil, fmt.Errorf("%w: key %v: attribute %q differs from the key", ErrReserved, key, name)
			}
			continue
		}
		out[name] = av
	}
	return out, nil
}

// nilValue returns the path of the first nil value in v (v itself, or an
// element of a list or map in it), if there is one: DynamoDB cannot take
// one, and a typed nil such as (*types.AttributeValueMemberS)(nil) would
// otherwise panic where it is read.
func nilValue(path string, v types.AttributeValue) (string, bool) {
	if errs.IsNil(v) {
		return path, true
	}
	switch v := v.(type) {
	case *types.AttributeValueMemberL:
		for i, e := range v.Value {
			if p, ok := nilValue(path+"["+strconv.Itoa(i)+"]", e); ok {
				return p, true
			}
		}
	case *types.AttributeValueMemberM:
		for name, e := range v.Value {
			if p, ok := nilValue(path+"."+name, e); ok {
				return p, true
			}
		}
	}
	return "", false
}

func sameKeyValue(a, b types.AttributeValue) bool {
	switch a := a.(type) {
	case *types.AttributeValueMemberS:
		b, ok := b.(*types.AttributeValueMemberS)
		return ok && a.Value == b.Value
	case *types.AttributeValueMemberB:
		b, ok := b.(*types.AttributeValueMemberB)
		return ok && string(a.Value) == string(b.Value)
	case *types.AttributeValueMemberN:
		b, ok := b.(*types.AttributeValueMemberN)
		if !ok {
			return false
		}
		x, err1 := canonicalNumber(a.Value)
		y, err2 := canonicalNumber(b.Value)
		return err1 == nil && err2 == nil && x == y
	}
	return false
}

// chunkTemplate returns the Parent attribute of key's chunk items and the
// most bytes any chunk item of key can take beyond its data. If chunks of
// ChunkSize bytes would not fit the item limit, the error comes with the
// overhead.
func (s *Store) chunkTemplate(key Key, prefix string) (parentKey types.AttributeValue, overhead int, err error) {
	parentKey = &types.AttributeValueMemberM{Value: key.item()}
	item := map[string]types.AttributeValue{
		s.opts.ChunkKeyAttribute: &types.AttributeValueMemberS{Value: chunkKey(prefix, newVersion(time.Time{}), s.maxChunks)},
		s.dataAttribute():        &types.AttributeValueMemberB{Value: []byte{}},
		attrParent:               parentKey,
	}
	overhead, err = ddbsize.ItemSize(item)
	if err != nil {
		return nil, 0, fmt.Errorf("%w: key %v: %w", ErrInvalidKey, key, err)
	}
	if overhead+s.opts.ChunkSize > ddbsize.MaxItemSize {
		return nil, overhead, fmt.Errorf("%w: key %v: chunk items would be %d bytes, limit %d (lower ChunkSize)",
			ErrInvalidKey, key, overhead+s.opts.ChunkSize, ddbsize.MaxItemSize)
	}
	return parentKey, overhead, nil
}

// put stores a payload read from raw: in Options.Objects if offload, else
// inline if its first chunk is short enough to be all of it, else in chunk
// items; then flips the parent to it, the same way for every medium.
func (s *Store) put(ctx context.Context, method string, key Key, raw *source, offload bool, optFns []func(*PutOptions)) (Info, error) {
	w, err := s.newWrite(method, key, optFns)
	if err != nil {
		return Info{}, err
	}
	src := s.payloadOf(raw)
	var first []byte
	if offload {
		err = w.toObject()
	} else {
		first, err = w.readFirst(src)
	}
	if err != nil {
		return Info{}, err
	}
	// A parent DynamoDB would refuse must cost no request, and once the
	// parent is read (its version becomes ChunkPrevious) no write of the
	// payload.
	if err := w.checkParentSize(); err != nil {
		return Info{}, err
	}
	if w.cur, err = s.readCurrent(ctx, key); err != nil {
		return Info{}, err
	}
	if err := w.checkParentSize(); err != nil {
		return Info{}, err
	}
	if s.guideWrites() {
		// Before any chunk: no two attempts may write the same chunk keys.
		if err := w.reserve(ctx); err != nil {
			return Info{}, err
		}
	}
	if err := w.medium().store(ctx, w, src, first); err != nil {
		w.abandon(ctx)
		return Info{}, err
	}
	w.enc = src.encoding()
	w.size, w.sum = src.checksum()
	w.stored = src.storedBytes()
	return w.commit(ctx)
}

// newWrite checks a Put's key and options and starts a write of a new
// version. It makes no request.
func (s *Store) newWrite(method string, key Key, optFns []func(*PutOptions)) (*write, error) {
	var po PutOptions
	for _, f := range optFns {
		if f != nil {
			f(&po)
		}
	}
	prefix, err := s.keyPrefix(key)
	if err != nil {
		return nil, err
	}
	attrs, err := callerAttributes(method, key, po.Attributes, s.reservedName)
	if err != nil {
		return nil, err
	}
	parentKey, _, err := s.chunkTemplate(key, prefix)
	if err != nil {
		return nil, err
	}
	if po.Condition.IsSet() {
		e, err := expression.NewBuilder().WithCondition(po.Condition).Build()
		if err != nil {
			return nil, invalid(method, "key %v: PutOptions.Condition: %v", key, err)
		}
		for name, v := range e.Values() {
			if path, ok := nilValue(name, v); ok {
				return nil, invalid(method, "key %v: PutOptions.Condition: nil value at %s", key, path)
			}
		}
	}
	start := s.clock()
	return &write{
		s: s, method: method, key: key, prefix: prefix, parentKey: parentKey, attrs: attrs,
		cond: po.Condition, start: start, version: newVersion(start),
	}, nil
}

// write is one Put attempt in progress.
type write struct {
	s         *Store
	method    string // Put or PutReader, for messages
	key       Key
	prefix    string
	parentKey types.AttributeValue
	attrs     map[string]types.AttributeValue
	cond      expression.ConditionBuilder // the caller's extra condition, if set
	start     time.Time
	version   string
	cur       current // the parent as read before writing; zero until then

	inline []byte            // the stored payload when kept in the parent; nil otherwise
	object string            // the object holding the payload when offloaded
	meta   map[string]string // the object's metadata
	enc    Compression       // how the payload is stored, known after the first chunk
	chunks int               // chunks handed to the batch engine
	size   int64
	stored int64
	sum    [32]byte
}

// readFirst reads the payload's first chunk and keeps the payload inline
// if that chunk is short enough, which makes it the whole payload: only the
// last chunk can be shorter than ChunkSize, and InlineLimit is below it.
func (w *write) readFirst(src chunkSource) ([]byte, error) {
	first, err := src.next()
	if err != nil && err != io.EOF {
		return nil, w.sourceError(err)
	}
	w.enc = src.encoding()
	if limit := w.s.opts.InlineLimit; limit < 0 || len(first) > limit {
		return first, nil
	}
	w.inline = first
	if w.inline == nil {
		w.inline = []byte{}
	}
	w.size, w.sum = src.checksum()
	w.stored = src.storedBytes()
	return first, nil
}

func (w *write) sourceError(err error) error {
	if errors.Is(err, errPayloadTooLarge) {
		return fmt.Errorf("%w: key %v: payload above MaxSize %d", ErrTooLarge, w.key, w.s.opts.MaxSize)
	}
	return fmt.Errorf("chunk: put %v: reading payload: %w", w.key, err)
}

// toObject makes this write's payload go to Options.Objects, under a key
// of its own. A key whose metadata S3 cannot take fails before any
// request.
func (w *write) toObject() error {
	meta, err := w.s.objectMetadata(w.key)
	if err != nil {
		return err
	}
	w.meta, w.object = meta, w.s.objectKey(w.key, w.prefix, w.version)
	w.enc = w.s.opts.Compression // for the size check; known once uploaded
	return nil
}

// medium is where this write stores its payload.
func (w *write) medium() medium {
	switch {
	case w.object != "":
		return objects{}
	case w.inline != nil:
		return inline{}
	}
	return chunkItems{}
}

// abandon removes what this write stored, unless ctx is done: a cancelled
// Put writes nothing more and leaves its invisible chunks (or object) to
// Sweep.
func (w *write) abandon(ctx context.Context) {
	w.s.drop(ctx, w.prefix, placement{version: w.version, chunks: w.chunks, object: w.object})
}

// parentUpdate returns what the flip does to the parent: the attributes it
// sets and the names it removes (the store's optional attributes when
// unused, and caller attributes given a nil value).
func (w *write) parentUpdate() (set map[string]types.AttributeValue, remove []string) {
	if w.s.guideWrites() {
		return w.guideUpdate()
	}
	set = map[string]types.AttributeValue{
		attrVersion: &types.AttributeValueMemberS{Value: w.version},
		attrCount:   number(int64(w.chunks)),
		attrSize:    number(w.size),
		attrStored:  number(w.stored),
		attrSHA:     &types.AttributeValueMemberB{Value: w.sum[:]},
	}
	setOrRemove := func(name string, v types.AttributeValue) {
		if v == nil {
			remove = append(remove, name)
			return
		}
		set[name] = v
	}
	setOrRemove(attrPrev, optionalString(w.cur.version))
	setOrRemove(attrEncoding, optionalString(string(w.enc)))
	if w.inline != nil {
		setOrRemove(attrInline, &types.AttributeValueMemberB{Value: w.inline})
	} else {
		setOrRemove(attrInline, nil)
	}
	setOrRemove(attrObject, optionalString(w.object))
	if w.chunks > 0 && w.inline == nil && w.object == "" {
		set[attrChunk] = number(int64(w.s.opts.ChunkSize))
	} else {
		setOrRemove(attrChunk, nil)
	}
	if w.object != "" {
		set[attrCount] = &types.AttributeValueMemberN{Value: objectCount}
	}
	if g := w.s.opts.Guide; g != nil && g.InlineAttribute != attrInline {
		remove = append(remove, g.InlineAttribute) // a guide-layout parent's short message
	}
	for name, v := range w.attrs {
		setOrRemove(name, v)
	}
	return set, remove
}

func number(x int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(x, 10)}
}

// optionalString is s as an S value, nil (no attribute) for "".
func optionalString(s string) types.AttributeValue {
	if s == "" {
		return nil
	}
	return &types.AttributeValueMemberS{Value: s}
}

// checkParentSize rejects a parent item that would exceed the item limit
// with what Put sets on it. Until the parent is read, w.cur is zero and
// ChunkPrevious is not counted; attributes others keep on the parent are
// never counted (DynamoDB has the last word on those).
func (w *write) checkParentSize() error {
	set, _ := w.parentUpdate()
	item := w.key.item()
	maps.Copy(item, set)
	n, err := ddbsize.ItemSize(item)
	if err != nil {
		return invalid(w.method, "key %v: PutOptions.Attributes: %v", w.key, err)
	}
	if n > ddbsize.MaxItemSize {
		return fmt.Errorf("%w: key %v: parent item of %d bytes, limit %d", ErrTooLarge, w.key, n, ddbsize.MaxItemSize)
	}
	return nil
}

// dropPrevious deletes the stored bytes of the version this write
// replaced, unless they are to stay for Sweep. Failures leave them to
// Sweep too.
func (w *write) dropPrevious(ctx context.Context) {
	if w.s.opts.RetainOld || !w.cur.exists {
		return
	}
	w.s.drop(ctx, w.prefix, w.cur.placement)
}
