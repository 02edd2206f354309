package chunk

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynashard/dynashard/internal/ddbsize"
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
// stored (Info.Attributes: the attributes it set). It writes the chunks first and then switches the parent to them
// in one conditional update, so readers see either the old payload or the
// new one, never a mix. If another write switches the parent first, Put
// removes its chunks and returns an error wrapping ErrConflict. A payload
// above Options.MaxSize fails with ErrTooLarge before anything is written.
//
// Errors other than ErrConflict, ErrTooLarge, ErrInvalidKey and ErrReserved
// leave the outcome unknown, as with any DynamoDB write: the new payload may
// or may not have been stored. Leftover chunks of such a Put are removed by
// Sweep.
//
// Put does not keep data after it returns and never writes to it.
func (s *Store) Put(ctx context.Context, key Key, data []byte, optFns ...func(*PutOptions)) (Info, error) {
	if int64(len(data)) > s.opts.MaxSize {
		return Info{}, fmt.Errorf("%w: key %v: payload of %d bytes, MaxSize %d", ErrTooLarge, key, len(data), s.opts.MaxSize)
	}
	return s.put(ctx, key, newBytesSource(data, s.opts.ChunkSize, s.opts.Compression), optFns)
}

// PutReader is Put for a payload of unknown length, read from r until
// io.EOF. Memory stays bounded by the batches in flight, whatever the
// payload's size. If r has a Len method (bytes.Reader, strings.Reader) a
// payload above Options.MaxSize is rejected before anything is written;
// otherwise Put stops reading one byte past MaxSize, removes the chunks it
// wrote and returns ErrTooLarge. An error from r is returned, wrapped, after
// the same clean-up; nothing becomes visible.
func (s *Store) PutReader(ctx context.Context, key Key, r io.Reader, optFns ...func(*PutOptions)) (Info, error) {
	if l, ok := r.(interface{ Len() int }); ok && int64(l.Len()) > s.opts.MaxSize {
		return Info{}, fmt.Errorf("%w: key %v: payload of %d bytes, MaxSize %d", ErrTooLarge, key, l.Len(), s.opts.MaxSize)
	}
	return s.put(ctx, key, newReaderSource(r, s.opts.ChunkSize, s.opts.Compression, s.opts.MaxSize), optFns)
}

// current is the parent's state a Put starts from.
type current struct {
	exists  bool // the parent holds a payload
	version string
	chunks  int
	prev    string // the version this one replaced
}

// readCurrent reads the parent's version and chunk count consistently.
func (s *Store) readCurrent(ctx context.Context, key Key) (current, error) {
	out, err := s.c.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:                &s.parents,
		Key:                      key.item(),
		ConsistentRead:           aws.Bool(true),
		ProjectionExpression:     aws.String("#v, #c, #p"),
		ExpressionAttributeNames: map[string]string{"#v": attrVersion, "#c": attrCount, "#p": attrPrev},
	})
	if err != nil {
		return current{}, fmt.Errorf("chunk: read parent %v: %w", key, err)
	}
	v, ok := out.Item[attrVersion].(*types.AttributeValueMemberS)
	if !ok {
		return current{}, nil
	}
	c := current{exists: true, version: v.Value}
	if n, ok := out.Item[attrCount].(*types.AttributeValueMemberN); ok {
		c.chunks, _ = strconv.Atoi(n.Value)
	}
	if p, ok := out.Item[attrPrev].(*types.AttributeValueMemberS); ok {
		c.prev = p.Value
	}
	return c, nil
}

// callerAttributes validates and converts PutOptions.Attributes.
func callerAttributes(key Key, v any) (map[string]types.AttributeValue, error) {
	var m map[string]types.AttributeValue
	switch v := v.(type) {
	case nil:
		return nil, nil
	case map[string]types.AttributeValue:
		m = v
	default:
		var err error
		if m, err = attributevalue.MarshalMap(v); err != nil {
			return nil, fmt.Errorf("chunk: key %v: attributes: %w", key, err)
		}
	}
	out := make(map[string]types.AttributeValue, len(m))
	for name, av := range m {
		switch {
		case isReserved(name) || name == "":
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

// chunkTemplate returns a chunk item for key with an empty Data attribute,
// and the most bytes any chunk item of key can take beyond its data.
func (s *Store) chunkTemplate(key Key, prefix string) (parentKey types.AttributeValue, overhead int, err error) {
	parentKey = &types.AttributeValueMemberM{Value: key.item()}
	item := map[string]types.AttributeValue{
		s.opts.ChunkKeyAttribute: &types.AttributeValueMemberS{Value: chunkKey(prefix, newVersion(time.Time{}), s.maxChunks)},
		attrData:                 &types.AttributeValueMemberB{Value: []byte{}},
		attrParent:               parentKey,
	}
	overhead, err = ddbsize.ItemSize(item)
	if err != nil {
		return nil, 0, fmt.Errorf("%w: key %v: %w", ErrInvalidKey, key, err)
	}
	if overhead+s.opts.ChunkSize > ddbsize.MaxItemSize {
		return nil, 0, fmt.Errorf("%w: key %v: chunk items would be %d bytes, limit %d (lower ChunkSize)",
			ErrInvalidKey, key, overhead+s.opts.ChunkSize, ddbsize.MaxItemSize)
	}
	return parentKey, overhead, nil
}

func (s *Store) put(ctx context.Context, key Key, src *source, optFns []func(*PutOptions)) (Info, error) {
	var po PutOptions
	for _, f := range optFns {
		f(&po)
	}
	prefix, err := s.keyPrefix(key)
	if err != nil {
		return Info{}, err
	}
	attrs, err := callerAttributes(key, po.Attributes)
	if err != nil {
		return Info{}, err
	}
	parentKey, _, err := s.chunkTemplate(key, prefix)
	if err != nil {
		return Info{}, err
	}
	var cond *expression.Expression
	if po.Condition.IsSet() {
		e, err := expression.NewBuilder().WithCondition(po.Condition).Build()
		if err != nil {
			return Info{}, fmt.Errorf("chunk: put %v: condition: %w", key, err)
		}
		cond = &e
	}
	cur, err := s.readCurrent(ctx, key)
	if err != nil {
		return Info{}, err
	}
	start := s.clock()
	w := &write{
		s: s, key: key, prefix: prefix, parentKey: parentKey, attrs: attrs, cur: cur, start: start,
		version: newVersion(start), cond: cond,
	}

	first, err := src.next()
	if err != nil && err != io.EOF {
		return Info{}, w.sourceError(err)
	}
	inline := s.opts.InlineLimit >= 0 && len(first) <= s.opts.InlineLimit
	if inline {
		if len(first) > 0 || s.opts.InlineLimit > 0 {
			w.inline = first
			if w.inline == nil {
				w.inline = []byte{}
			}
		}
		w.size, w.sum = src.checksum()
	}
	w.stored = src.stored
	// Check the parent before the first chunk: a parent DynamoDB would
	// refuse must not cost a payload's worth of writes first.
	if err := w.checkParentSize(); err != nil {
		return Info{}, err
	}
	if !inline {
		if err := w.writeChunks(ctx, src, first); err != nil {
			return Info{}, err
		}
		w.size, w.sum = src.checksum()
		w.stored = src.stored
	}
	return w.commit(ctx)
}

// write is one Put attempt in progress.
type write struct {
	s         *Store
	key       Key
	prefix    string
	parentKey types.AttributeValue
	attrs     map[string]types.AttributeValue
	cur       current
	start     time.Time
	version   string
	cond      *expression.Expression // the caller's extra condition, if any

	inline []byte // nil when chunked (or empty with inlining off)
	chunks int    // chunks handed to the batch engine
	size   int64
	stored int64
	sum    [32]byte
}

func (w *write) sourceError(err error) error {
	if errors.Is(err, errPayloadTooLarge) {
		return fmt.Errorf("%w: key %v: payload above MaxSize %d", ErrTooLarge, w.key, w.s.opts.MaxSize)
	}
	return fmt.Errorf("chunk: put %v: reading payload: %w", w.key, err)
}

// writeChunks streams the chunks into the chunk table, first being the
// first one.
func (w *write) writeChunks(ctx context.Context, src *source, first []byte) error {
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
	err := w.s.putChunks(ctx, w.parentKey, seq)
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
	if ctx.Err() != nil || w.chunks == 0 {
		return
	}
	w.s.deleteChunks(ctx, w.prefix, w.version, w.chunks)
}

// updateInput builds the parent update that makes this version current.
func (w *write) updateInput() *dynamodb.UpdateItemInput {
	names := map[string]string{}
	values := map[string]types.AttributeValue{}
	var set, remove []string
	n := 0
	add := func(name string, v types.AttributeValue) {
		n++
		nk, vk := "#n"+strconv.Itoa(n), ":v"+strconv.Itoa(n)
		names[nk] = name
		if v == nil {
			remove = append(remove, nk)
			return
		}
		values[vk] = v
		set = append(set, nk+" = "+vk)
	}
	num := func(x int64) types.AttributeValue {
		return &types.AttributeValueMemberN{Value: strconv.FormatInt(x, 10)}
	}
	str := func(s string) types.AttributeValue {
		if s == "" {
			return nil
		}
		return &types.AttributeValueMemberS{Value: s}
	}
	add(attrVersion, str(w.version))
	add(attrCount, num(int64(w.chunks)))
	add(attrSize, num(w.size))
	add(attrStored, num(w.stored))
	add(attrSHA, &types.AttributeValueMemberB{Value: w.sum[:]})
	add(attrPrev, str(w.cur.version))
	add(attrEncoding, str(string(w.s.opts.Compression)))
	if w.inline != nil {
		add(attrInline, &types.AttributeValueMemberB{Value: w.inline})
	} else {
		add(attrInline, nil)
	}
	for name, v := range w.attrs {
		add(name, v)
	}
	expr := "SET " + strings.Join(set, ", ")
	if len(remove) > 0 {
		expr += " REMOVE " + strings.Join(remove, ", ")
	}
	in := &dynamodb.UpdateItemInput{
		TableName:                 &w.s.parents,
		Key:                       w.key.item(),
		UpdateExpression:          &expr,
		ExpressionAttributeNames:  names,
		ExpressionAttributeValues: values,
	}
	// #n1 is ChunkVersion.
	if w.cur.exists {
		values[":old"] = &types.AttributeValueMemberS{Value: w.cur.version}
		in.ConditionExpression = aws.String("#n1 = :old")
	} else {
		in.ConditionExpression = aws.String("attribute_not_exists(#n1)")
	}
	if c := w.cond; c != nil {
		// The builder's placeholders (#0, :0) never look like ours (#nK, :vK, :old).
		in.ConditionExpression = aws.String("(" + *in.ConditionExpression + ") AND (" + *c.Condition() + ")")
		maps.Copy(names, c.Names())
		maps.Copy(values, c.Values())
	}
	return in
}

// checkParentSize rejects a parent item that would exceed the item limit
// with what Put sets on it (other attributes already there also count, and
// DynamoDB has the last word on those).
func (w *write) checkParentSize() error {
	in := w.updateInput()
	item := w.key.item()
	for nk, name := range in.ExpressionAttributeNames {
		if v, ok := in.ExpressionAttributeValues[":v"+nk[2:]]; ok {
			item[name] = v
		}
	}
	n, err := ddbsize.ItemSize(item)
	if err != nil {
		return fmt.Errorf("%w: key %v: attributes: %w", ErrReserved, w.key, err)
	}
	if n > ddbsize.MaxItemSize {
		return fmt.Errorf("%w: key %v: parent item of %d bytes, limit %d", ErrTooLarge, w.key, n, ddbsize.MaxItemSize)
	}
	return nil
}

// Retry policy of the parent update, which runs with the SDK's retries off
// (see commit).
const (
	flipAttempts  = 10
	flipBaseDelay = 25 * time.Millisecond
	flipMaxDelay  = time.Second
)

var (
	retryables = retry.IsErrorRetryables(retry.DefaultRetryables)
	throttles  = retry.IsErrorThrottles(retry.DefaultThrottles)
)

// info describes this write as committed.
func (w *write) info() Info {
	attrs := w.attrs
	if attrs == nil {
		attrs = map[string]types.AttributeValue{}
	}
	return Info{
		Version: w.version, Size: w.size, StoredSize: w.stored, Chunks: w.chunks, SHA256: w.sum,
		Compression: w.s.opts.Compression, Created: w.start, Attributes: attrs,
	}
}

// commit switches the parent to this version and settles every outcome.
//
// The update runs with the SDK's retries off, because after a lost
// response a retry fails its condition whether the first attempt applied or
// someone else won. Here every attempt is known: a condition failure with
// no ambiguous attempt before it is a clean loss (ErrConflict); after an
// ambiguous attempt (reset, 500, timeout) the parent is read: our version
// there, or recorded as the one its successor replaced (ChunkPrevious),
// means we won.
func (w *write) commit(ctx context.Context) (Info, error) {
	s := w.s
	// No attempt may start once the version is Grace/2 old: Sweep deletes
	// versions older than Grace that are not current, and must never race
	// a late switch to one.
	deadline := w.start.Add(s.opts.Grace / 2)
	if s.beforeFlip != nil {
		if err := s.beforeFlip(ctx); err != nil {
			w.abandon(ctx)
			return Info{}, fmt.Errorf("chunk: put %v: %w", w.key, err)
		}
	}
	in := w.updateInput()
	var ambiguous error // the last attempt whose outcome is unknown, if any
	for attempt := 0; ; attempt++ {
		if s.clock().After(deadline) {
			return w.unsettled(ctx, ambiguous, fmt.Errorf("version %s is older than Grace/2 (%v): not committing it", w.version, s.opts.Grace/2))
		}
		actx, cancel := context.WithTimeout(ctx, deadline.Sub(s.clock()))
		_, err := s.c.UpdateItem(actx, in, func(o *dynamodb.Options) { o.RetryMaxAttempts = 1 })
		cancel()
		var ccf *types.ConditionalCheckFailedException
		switch {
		case err == nil:
			w.dropPrevious(ctx)
			return w.info(), nil
		case errors.As(err, &ccf):
			if ambiguous == nil {
				// Every attempt was refused, so we never won, and the
				// condition cannot hold again: our chunks are garbage.
				w.abandon(ctx)
				if w.cond != nil {
					return Info{}, fmt.Errorf("%w: put %v: the parent changed first or the caller's condition failed", ErrConflict, w.key)
				}
				if w.cur.exists {
					return Info{}, fmt.Errorf("%w: put %v: version %s was replaced first", ErrConflict, w.key, w.cur.version)
				}
				return Info{}, fmt.Errorf("%w: put %v: another write stored a payload first", ErrConflict, w.key)
			}
			return w.unsettled(ctx, ambiguous, err)
		case isDefinite(err) && throttles.IsErrorThrottle(err) != aws.TrueTernary:
			// Refused (validation, permissions): never applied, never will be.
			return w.unsettled(ctx, ambiguous, err)
		}
		if throttles.IsErrorThrottle(err) != aws.TrueTernary {
			ambiguous = err
		}
		if ctx.Err() != nil || retryables.IsErrorRetryable(err) != aws.TrueTernary || attempt+1 == flipAttempts {
			return w.unsettled(ctx, ambiguous, err)
		}
		base := flipBaseDelay
		if s.flipDelay > 0 {
			base = s.flipDelay
		}
		select {
		case <-time.After(rand.N(min(flipMaxDelay, base<<attempt)) + time.Millisecond):
		case <-ctx.Done():
		}
	}
}

// isDefinite reports whether err proves the request was not applied: a
// throttle, or an error response other than a server fault.
func isDefinite(err error) bool {
	if throttles.IsErrorThrottle(err) == aws.TrueTernary {
		return true
	}
	var re interface{ HTTPStatusCode() int }
	if errors.As(err, &re) {
		code := re.HTTPStatusCode()
		return code >= 400 && code < 500
	}
	return false
}

// unsettled ends a commit without a success response. With no ambiguous
// attempt, nothing was applied: the chunks go and err is returned. Else the
// parent is read to settle the outcome.
func (w *write) unsettled(ctx context.Context, ambiguous, err error) (Info, error) {
	if ambiguous == nil {
		w.abandon(ctx)
		return Info{}, fmt.Errorf("chunk: put %v: updating parent: %w", w.key, err)
	}
	if ctx.Err() != nil {
		return Info{}, fmt.Errorf("chunk: put %v: outcome unknown: %w", w.key, ctx.Err())
	}
	cur, rerr := w.settleRead(ctx)
	if rerr != nil {
		return Info{}, fmt.Errorf("chunk: put %v: outcome unknown: %w", w.key, errors.Join(ambiguous, rerr))
	}
	if cur.exists && (cur.version == w.version || cur.prev == w.version) {
		// An ambiguous attempt applied; a later writer may already have
		// replaced it, which is just a later write.
		if cur.version == w.version {
			w.dropPrevious(ctx)
		}
		return w.info(), nil
	}
	// If the parent has moved past the version we started from, which
	// never comes back, no attempt of ours can still apply, and our chunks
	// are garbage. (An absent parent can become absent again after a
	// Delete, so that case leaves them to Sweep.)
	if w.cur.exists && (!cur.exists || cur.version != w.cur.version) {
		w.abandon(ctx)
	}
	return Info{}, fmt.Errorf("chunk: put %v: outcome unknown (the parent holds %s): %w", w.key, describeVersion(cur), ambiguous)
}

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

// dropPrevious deletes the chunks of the version this write replaced,
// unless they are to stay for Sweep. Failures leave them to Sweep too.
func (w *write) dropPrevious(ctx context.Context) {
	if w.s.opts.RetainOld || !w.cur.exists || w.cur.chunks == 0 {
		return
	}
	w.s.deleteChunks(ctx, w.prefix, w.cur.version, w.cur.chunks)
}

// chunkWrite is one chunk to store.
type chunkWrite struct {
	key  string
	data []byte
}
