package chunk

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynashard/dynashard/internal/attempts"
	"github.com/dynashard/dynashard/internal/backoff"
	"github.com/dynashard/dynashard/internal/ddbsize"
	"github.com/dynashard/dynashard/internal/errs"
	"github.com/dynashard/dynashard/internal/parentio"
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
func (s *Store) Put(ctx context.Context, key Key, data []byte, optFns ...func(*PutOptions)) (Info, error) {
	s, err := s.begin(ctx, "Put", nil)
	if err != nil {
		return Info{}, err
	}
	if int64(len(data)) > s.opts.MaxSize {
		return Info{}, fmt.Errorf("%w: key %v: payload of %d bytes, MaxSize %d", ErrTooLarge, key, len(data), s.opts.MaxSize)
	}
	if err := s.checkText(key, data); err != nil {
		return Info{}, err
	}
	if s.offloads(int64(len(data))) {
		return s.putObject(ctx, "Put", key, newBytesSource(data, s.opts), optFns)
	}
	return s.put(ctx, "Put", key, newBytesSource(data, s.opts), optFns)
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
func (s *Store) PutReader(ctx context.Context, key Key, r io.Reader, optFns ...func(*PutOptions)) (Info, error) {
	s, err := s.begin(ctx, "PutReader", nil)
	if err != nil {
		return Info{}, err
	}
	if errs.IsNil(r) {
		return Info{}, invalid("PutReader", "key %v: nil io.Reader %T", key, r)
	}
	if l, ok := r.(interface{ Len() int }); ok && int64(l.Len()) > s.opts.MaxSize {
		return Info{}, fmt.Errorf("%w: key %v: payload of %d bytes, MaxSize %d", ErrTooLarge, key, l.Len(), s.opts.MaxSize)
	}
	if s.opts.Objects != nil {
		return s.putReaderObject(ctx, key, r, optFns)
	}
	return s.put(ctx, "PutReader", key, newReaderSource(r, s.opts, s.opts.MaxSize), optFns)
}

// current is the parent's state a Put starts from.
type current struct {
	exists  bool // the parent holds a payload
	version string
	value   types.AttributeValue // version as stored (S, or N in the guide's layout); nil for none
	chunks  int
	prev    string // the version this one replaced
	object  string // the object holding the payload, if offloaded
}

// readCurrent reads the parent's version and chunk count consistently.
func (s *Store) readCurrent(ctx context.Context, key Key) (current, error) {
	proj, names := "#v, #c, #p, #o", map[string]string{"#v": attrVersion, "#c": attrCount, "#p": attrPrev, "#o": attrObject}
	if g := s.opts.Guide; g != nil {
		// The guide's short message may have no ChunkVersion: only its inline
		// attribute says the parent holds a payload.
		proj, names["#i"] = proj+", #i", g.InlineAttribute
	}
	out, err := parentio.From(ctx, s.c).GetItem(ctx, &dynamodb.GetItemInput{
		TableName:                &s.parents,
		Key:                      key.item(),
		ConsistentRead:           aws.Bool(true),
		ProjectionExpression:     &proj,
		ExpressionAttributeNames: names,
	})
	if err != nil {
		return current{}, fmt.Errorf("chunk: read parent %v: %w", key, err)
	}
	c, err := s.parseCurrent(key, out.Item)
	if o, ok := asS(out.Item[attrObject]); ok && c.exists {
		c.object, c.chunks = o.Value, 0
	}
	return c, err
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

func (s *Store) put(ctx context.Context, method string, key Key, raw *source, optFns []func(*PutOptions)) (Info, error) {
	w, err := s.newWrite(method, key, optFns)
	if err != nil {
		return Info{}, err
	}
	src := s.payloadOf(raw)
	first, err := w.readFirst(src)
	if err != nil {
		return Info{}, err
	}
	// A parent DynamoDB would refuse must cost no request, and once the
	// parent is read (its version becomes ChunkPrevious) no chunk write.
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
	if w.inline == nil {
		if err := w.writeChunks(ctx, src, first); err != nil {
			return Info{}, err
		}
		w.size, w.sum = src.checksum()
		w.stored = src.storedBytes()
	}
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

	inline []byte      // the stored payload when kept in the parent; nil when chunked
	object string      // the object holding the payload when offloaded
	enc    Compression // how the payload is stored, known after the first chunk
	chunks int         // chunks handed to the batch engine
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

// writeChunks streams the chunks into the chunk table, first being the
// first one.
func (w *write) writeChunks(ctx context.Context, src chunkSource, first []byte) error {
	var srcErr error
	seq := func(yield func(chunkWrite) bool) {
		c := first
		for {
			if len(c) == 0 {
				return
			}
			if w.chunks == w.s.maxChunks {
				srcErr = errPayloadTooLarge
				return
			}
			w.chunks++
			if !yield(chunkWrite{key: chunkKey(w.prefix, w.version, w.chunks), data: c}) {
				return
			}
			var err error
			c, err = src.next()
			if err == io.EOF {
				return
			}
			if err != nil {
				srcErr = err
				return
			}
		}
	}
	err := w.s.writeChunkItems(ctx, w.parentKey, seq)
	if srcErr != nil {
		w.abandon(ctx)
		return w.sourceError(srcErr)
	}
	if err != nil {
		w.abandon(ctx)
		return fmt.Errorf("chunk: put %v: writing chunks of version %s: %w", w.key, w.version, err)
	}
	return nil
}

// abandon removes this write's chunks, unless ctx is done: a cancelled Put
// writes nothing more and leaves its invisible chunks to Sweep.
func (w *write) abandon(ctx context.Context) {
	if w.object != "" {
		w.s.deleteObject(ctx, w.object)
		return
	}
	if ctx.Err() != nil || w.chunks == 0 {
		return
	}
	w.s.deleteChunks(ctx, w.prefix, w.version, w.chunks)
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

// updateInput builds the parent update that makes this version current if
// the parent still holds the version read at the start (and the caller's
// condition holds). One expression builder names every placeholder.
func (w *write) updateInput() (*dynamodb.UpdateItemInput, error) {
	set, remove := w.parentUpdate()
	var update expression.UpdateBuilder
	for name, v := range set {
		update = update.Set(expression.NameNoDotSplit(name), expression.Value(v))
	}
	for _, name := range remove {
		update = update.Remove(expression.NameNoDotSplit(name))
	}
	cond := w.cur.condition()
	if w.cond.IsSet() {
		cond = cond.And(w.cond)
	}
	e, err := expression.NewBuilder().WithUpdate(update).WithCondition(cond).Build()
	if err != nil {
		return nil, err
	}
	return &dynamodb.UpdateItemInput{
		TableName:                 &w.s.parents,
		Key:                       w.key.item(),
		UpdateExpression:          e.Update(),
		ConditionExpression:       e.Condition(),
		ExpressionAttributeNames:  e.Names(),
		ExpressionAttributeValues: e.Values(),
	}, nil
}

// Retry policy of the parent update, which runs with the SDK's retries off
// (see commit).
const (
	flipAttempts  = 10
	flipBaseDelay = 25 * time.Millisecond
	flipMaxDelay  = time.Second
)

// info describes this write as committed.
func (w *write) info() Info {
	attrs := w.attrs
	if attrs == nil {
		attrs = map[string]types.AttributeValue{}
	}
	i := Info{
		Version: w.version, Size: w.size, StoredSize: w.stored, Chunks: w.chunks, SHA256: w.sum,
		Compression: w.enc, Created: w.start, Attributes: attrs, Object: w.object,
	}
	if w.s.guideWrites() {
		i.Guide, i.NoChecksum, i.Created = true, !w.s.opts.Guide.Checksum, time.Time{}
		if i.NoChecksum {
			i.SHA256 = [32]byte{}
		}
	}
	return i
}

// commit switches the parent to this version and settles every outcome.
//
// The update runs with the SDK's retries off, because after a lost
// response a retry fails its condition whether the first attempt applied or
// someone else won. Here every attempt is known: a condition failure with
// no attempt before it that may have applied is a clean loss (ErrConflict);
// after such an attempt (reset, 500, timeout) the parent is read to settle
// the outcome (see unsettled).
func (w *write) commit(ctx context.Context) (Info, error) {
	in, err := w.updateInput()
	if err == nil {
		err = w.readable()
	}
	if err == nil && w.s.beforeFlip != nil {
		err = w.s.beforeFlip(ctx)
	}
	if err != nil {
		w.abandon(ctx)
		return Info{}, fmt.Errorf("chunk: put %v: %w", w.key, err)
	}
	var unknown error // the last attempt that may have applied, if any
	for attempt := 0; ; attempt++ {
		if w.s.clock().After(w.deadline()) {
			return w.unsettled(ctx, unknown, fmt.Errorf("version %s is older than Grace/2 (%v): not committing it", w.version, w.s.opts.Grace/2))
		}
		err := w.flip(ctx, in)
		switch classifyFlip(err) {
		case flipApplied:
			w.dropPrevious(ctx)
			return w.info(), nil
		case flipRefused:
			return w.refused(ctx, unknown, err)
		case flipRejected:
			return w.unsettled(ctx, unknown, err)
		case flipUnknown:
			unknown = err
		}
		if err := w.wait(ctx, attempt, err); err != nil {
			return w.unsettled(ctx, unknown, err)
		}
	}
}

// readable refuses a flip to a parent that its readers would refuse as
// corrupt (sizes that contradict each other or the chunk count): a last
// check against a fault in how the payload was cut or compressed, which
// would otherwise replace a readable payload by an unreadable one.
func (w *write) readable() error {
	p := parent{Info: Info{Size: w.size, StoredSize: w.stored, Chunks: w.chunks, Compression: w.enc, Object: w.object}, inline: w.inline}
	if !w.s.guideWrites() && w.chunks > 0 && w.inline == nil && w.object == "" {
		p.chunkSize = int64(w.s.opts.ChunkSize)
	}
	if why := p.contradiction(); why != "" {
		return fmt.Errorf("not storing version %s, which readers would refuse: %s", w.version, why)
	}
	return nil
}

// deadline is when the version turns Grace/2 old. No attempt may start
// after it: Sweep deletes versions older than Grace that are not current,
// and must never race a late switch to one.
func (w *write) deadline() time.Time { return w.start.Add(w.s.opts.Grace / 2) }

// flip sends the parent update once, with the SDK's retries off, cut off at
// the deadline.
func (w *write) flip(ctx context.Context, in *dynamodb.UpdateItemInput) error {
	ctx, cancel := context.WithTimeout(ctx, w.deadline().Sub(w.s.clock()))
	defer cancel()
	_, err := parentio.From(ctx, w.s.c).UpdateItem(ctx, in, func(o *dynamodb.Options) { o.RetryMaxAttempts = 1 })
	return err
}

// flipResult is what one parent update's error says about its effect.
type flipResult int

const (
	flipApplied   flipResult = iota // success
	flipRefused                     // the condition failed: not applied
	flipRejected                    // another refusal (validation, permissions): not applied, never will be
	flipThrottled                   // throttled: not applied, worth retrying
	flipUnknown                     // no answer or a server fault: may have applied
)

func classifyFlip(err error) flipResult {
	var ccf *types.ConditionalCheckFailedException
	switch {
	case err == nil:
		return flipApplied
	case errors.As(err, &ccf):
		return flipRefused
	case backoff.IsThrottle(err):
		return flipThrottled
	case attempts.Refused(err):
		return flipRejected
	}
	return flipUnknown
}

// retryables is the SDK's own test of whether a failed request is worth
// sending again (a reset connection, a 5xx, a throttle); throttles are told
// apart by backoff.IsThrottle.
var retryables = retry.IsErrorRetryables(retry.DefaultRetryables)

// wait waits before the attempt after attempt, which failed with err:
// full jitter over a capped exponential delay (package backoff, as the
// batch engine waits). It returns the error to give up with instead: err
// if ctx is done, err is not worth retrying (the SDK's
// retry.DefaultRetryables) or the attempts are spent; ctx's error if ctx
// ends while waiting.
func (w *write) wait(ctx context.Context, attempt int, err error) error {
	if ctx.Err() != nil || retryables.IsErrorRetryable(err) != aws.TrueTernary || attempt+1 == flipAttempts {
		return err
	}
	d := backoff.Jitter(backoff.Cap(cmp.Or(w.s.flipDelay, flipBaseDelay), flipMaxDelay, attempt)) + time.Millisecond
	if !backoff.Sleep(ctx, nil, d) {
		return ctx.Err()
	}
	return nil
}

// refused ends a commit whose condition failed. If no earlier attempt may
// have applied, we never won and the condition cannot hold again: the
// chunks are garbage and the Put lost.
func (w *write) refused(ctx context.Context, unknown, err error) (Info, error) {
	if unknown != nil {
		return w.unsettled(ctx, unknown, err)
	}
	w.abandon(ctx)
	switch {
	case w.cond.IsSet():
		return Info{}, fmt.Errorf("%w: put %v: the parent changed first or the caller's condition failed", ErrConflict, w.key)
	case w.cur.exists:
		return Info{}, fmt.Errorf("%w: put %v: version %s was replaced first", ErrConflict, w.key, w.cur.version)
	}
	return Info{}, fmt.Errorf("%w: put %v: another write stored a payload first", ErrConflict, w.key)
}

// unsettled ends a commit without a success response, err being the last
// failure. If no attempt may have applied (unknown is nil), the chunks go
// and err is returned. Otherwise the parent is read to settle the outcome.
func (w *write) unsettled(ctx context.Context, unknown, err error) (Info, error) {
	if unknown == nil {
		w.abandon(ctx)
		return Info{}, fmt.Errorf("chunk: put %v: updating parent: %w", w.key, err)
	}
	if ctx.Err() != nil {
		return Info{}, fmt.Errorf("chunk: put %v: outcome unknown: %w", w.key, ctx.Err())
	}
	now, rerr := w.settleRead(ctx)
	if rerr != nil {
		return Info{}, fmt.Errorf("chunk: put %v: outcome unknown: %w", w.key, errors.Join(unknown, rerr))
	}
	return w.settle(ctx, now, unknown)
}

// settle decides an outcome from the parent as read after an attempt that
// may have applied: our version there, or recorded as the one its successor
// replaced (ChunkPrevious), means we won.
func (w *write) settle(ctx context.Context, now current, unknown error) (Info, error) {
	switch {
	case now.holds(w.version):
		w.dropPrevious(ctx)
		return w.info(), nil
	case now.exists && now.prev == w.version:
		// A later write has already replaced ours: just a later write.
		return w.info(), nil
	case w.cur.exists && !now.holds(w.cur.version):
		// The parent moved past the version we started from, which never
		// comes back, so no attempt of ours can still apply. (An absent
		// parent can become absent again after a Delete, so that case
		// leaves the chunks to Sweep.)
		w.abandon(ctx)
	}
	return Info{}, fmt.Errorf("chunk: put %v: outcome unknown (the parent holds %s): %w", w.key, describeVersion(now), unknown)
}

// holds reports whether the parent holds version.
func (c current) holds(version string) bool { return c.exists && c.version == version }

func describeVersion(c current) string {
	if !c.exists {
		return "no payload"
	}
	return "version " + c.version
}

// settleRead reads the parent consistently, retrying a little, to settle an
// ambiguous outcome.
func (w *write) settleRead(ctx context.Context) (current, error) {
	var err error
	for range 3 {
		var c current
		if c, err = w.s.readCurrent(ctx, w.key); err == nil || ctx.Err() != nil {
			return c, err
		}
	}
	return current{}, err
}

// dropPrevious deletes the chunks (or the object) of the version this
// write replaced, unless they are to stay for Sweep. Failures leave them to
// Sweep too.
func (w *write) dropPrevious(ctx context.Context) {
	if w.s.opts.RetainOld || !w.cur.exists {
		return
	}
	if w.cur.object != "" {
		w.s.deleteObject(ctx, w.cur.object)
	}
	if w.cur.chunks <= 0 {
		return
	}
	w.s.deleteChunks(ctx, w.prefix, w.cur.version, w.cur.chunks)
}

// chunkWrite is one chunk to store.
type chunkWrite struct {
	key  string
	data []byte
}
