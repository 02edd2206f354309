package shard

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynashard/dynashard/internal/errs"
)

// The record of a base's layout is an ordinary item of the table, under
// the partition key base + recordSuffix. A physical key always ends in a
// decimal digit (the suffix), so no codec can make that key a physical
// one, and the record never shows up in a read of data; a reader with any
// layout, whatever its separator, finds the record where the writer put it.
// Each base has its own record, which is where a later change of the
// base's shard count is kept. With a sort key, the record's sort-key value
// is recordMarker (S, B) or 0 (N). Its attributes:
//
//	dynashard:layout  S  "v1 " + the layout without table and N
//	dynashard:shards  L  the base's shard-count history, oldest first: the
//	                     last is the N writers use, and reads cover
//	                     suffixes 1..max of the list
//	dynashard:rev     N  bumped by every change of the history, which is
//	                     made with a conditional update on it (absent: 0)
//	dynashard:created S  when the record was written, RFC 3339
//	dynashard:changed S  when the history last changed, RFC 3339
const (
	recordSuffix  = "#dynashard"
	recordMarker  = "dynashard#layout"
	attrLayout    = "dynashard:layout"
	attrShards    = "dynashard:shards"
	attrRev       = "dynashard:rev"
	attrCreated   = "dynashard:created"
	attrChanged   = "dynashard:changed"
	recordVersion = "v1 "
)

// RecordReader is the part of *dynamodb.Client that [Layout.Verify] uses.
type RecordReader interface {
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
}

// RecordClient is the part of *dynamodb.Client that [Layout.Record] uses.
type RecordClient interface {
	RecordReader
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
}

var _ RecordClient = (*dynamodb.Client)(nil)

// LayoutError reports a layout that disagrees with the one recorded for a
// base. It matches ErrLayoutMismatch.
type LayoutError struct {
	Base   string
	Want   string // the caller's layout (Layout.String)
	Stored string // the recorded one, in the same form
}

func (e *LayoutError) Error() string {
	return fmt.Sprintf("shard: layout mismatch for base %q: this code uses %s; the table records %s", clip(e.Base), e.Want, e.Stored)
}

func (e *LayoutError) Is(target error) bool { return target == ErrLayoutMismatch }

// Verify checks l against the record of base before a read. A base
// without a record (nothing written through dynashard yet) passes; one
// whose record differs in anything but N is a *LayoutError (N is the
// base's own: see [Layout.Shards]). A match is cached with the base's
// shard-count history for [Layout.HistoryTTL], so a process pays one
// consistent GetItem (one read unit) per base and client at most that
// often; a base without a record costs that read on every call. An
// Unchecked layout sends nothing.
func (l Layout) Verify(ctx context.Context, c RecordReader, base string) error {
	_, err := l.Shards(ctx, c, base)
	return err
}

// Shards returns the shard-count history of base, oldest first, after
// checking l against the base's record as Verify does: the last count is
// the N writers use, and a read covers suffixes 1..max of the history. A
// base without a record (and an Unchecked layout, which reads nothing)
// has the history [l.N()]. The result comes from a cache no older than
// [Layout.HistoryTTL]; the caller may keep it but not change it. A nil ctx
// or client is an error matching ErrInvalid.
func (l Layout) Shards(ctx context.Context, c RecordReader, base string) ([]int, error) {
	return l.history(ctx, c, base, l.historyTTL())
}

// history is Shards with a bound on the cached entry's age; maxAge 0
// reads the record.
func (l Layout) history(ctx context.Context, c RecordReader, base string, maxAge time.Duration) ([]int, error) {
	if ctx == nil || errs.IsNil(c) {
		return nil, fmt.Errorf("%w: table %s: nil ctx or client", ErrInvalid, l.Table)
	}
	if l.Unchecked {
		return []int{l.N()}, nil
	}
	if h, ok := verified.get(c, l, base, maxAge); ok {
		return h, nil
	}
	return verified.once(ctx, c, l, base, "verify", func() ([]int, error) {
		rec, ok, err := l.readRecord(ctx, c, base)
		if err != nil {
			return nil, err
		}
		if !ok {
			return []int{l.N()}, nil
		}
		return l.accept(c, base, rec)
	})
}

// Record checks l against the record of base before a write, and writes
// the record if there is none, with a conditional put so that processes
// racing with different layouts agree: exactly one record is written, and
// every layout that differs from it in anything but N then fails with a
// *LayoutError. A new base's history starts as [l.N()], so l's N is the
// default for bases not yet written; a base written before keeps its own
// history (see [Layout.Reshard]). It costs one consistent GetItem per base
// and client per [Layout.HistoryTTL], plus one PutItem the first time a
// base is written. An Unchecked layout sends nothing.
func (l Layout) Record(ctx context.Context, c RecordClient, base string) error {
	_, err := l.recorded(ctx, c, base, l.historyTTL())
	return err
}

// recorded is Record returning the base's history.
func (l Layout) recorded(ctx context.Context, c RecordClient, base string, maxAge time.Duration) ([]int, error) {
	if ctx == nil || errs.IsNil(c) {
		return nil, fmt.Errorf("%w: table %s: nil ctx or client", ErrInvalid, l.Table)
	}
	if l.Unchecked {
		return []int{l.N()}, nil
	}
	if h, ok := verified.get(c, l, base, maxAge); ok {
		return h, nil
	}
	return verified.once(ctx, c, l, base, "record", func() ([]int, error) { return l.record(ctx, c, base) })
}

func (l Layout) record(ctx context.Context, c RecordClient, base string) ([]int, error) {
	for range 2 {
		rec, ok, err := l.readRecord(ctx, c, base)
		if err != nil {
			return nil, err
		}
		if ok {
			return l.accept(c, base, rec)
		}
		err = l.writeRecord(ctx, c, base)
		var ccf *types.ConditionalCheckFailedException
		if !errors.As(err, &ccf) {
			if err != nil {
				return nil, err
			}
			h := []int{l.N()}
			verified.add(c, l, base, h)
			return h, nil
		}
		// Another writer recorded the base first: compare with its record.
	}
	return nil, fmt.Errorf("shard: table %s base %q: layout record kept changing", l.Table, clip(base))
}

type record struct {
	shape  string
	shards []int
	rev    int
}

func (l Layout) accept(c RecordReader, base string, rec record) ([]int, error) {
	if rec.shape != l.shape() {
		return nil, &LayoutError{Base: base, Want: l.String(), Stored: rec.String(l.Table)}
	}
	verified.add(c, l, base, rec.shards)
	return rec.shards, nil
}

func (r record) String(table string) string {
	n := "?"
	if len(r.shards) > 0 {
		n = strconv.Itoa(r.shards[len(r.shards)-1])
	}
	return fmt.Sprintf("%s: %s N=%s (history %v)", table, r.shape, n, r.shards)
}

func (l Layout) recordKey(base string) (map[string]types.AttributeValue, error) {
	if err := l.Codec.Check(base, 1); err != nil {
		return nil, err
	}
	if len(base)+len(recordSuffix) > MaxKeyBytes {
		return nil, &KeyError{Key: base, Reason: reasonNoRecord}
	}
	key := map[string]types.AttributeValue{l.PartitionKey: &types.AttributeValueMemberS{Value: base + recordSuffix}}
	switch {
	case l.SortKey == "":
	case l.sortType() == types.ScalarAttributeTypeN:
		key[l.SortKey] = &types.AttributeValueMemberN{Value: "0"}
	case l.sortType() == types.ScalarAttributeTypeB:
		key[l.SortKey] = &types.AttributeValueMemberB{Value: []byte(recordMarker)}
	default:
		key[l.SortKey] = &types.AttributeValueMemberS{Value: recordMarker}
	}
	return key, nil
}

func (l Layout) readRecord(ctx context.Context, c RecordReader, base string) (record, bool, error) {
	key, err := l.recordKey(base)
	if err != nil {
		return record{}, false, err
	}
	out, err := c.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(l.Table), Key: key, ConsistentRead: aws.Bool(true),
		ProjectionExpression:     aws.String("#l, #s, #r"),
		ExpressionAttributeNames: map[string]string{"#l": attrLayout, "#s": attrShards, "#r": attrRev},
	})
	if err != nil {
		return record{}, false, fmt.Errorf("shard: read layout record of table %s base %q: %w", l.Table, clip(base), err)
	}
	if out.Item == nil {
		return record{}, false, nil
	}
	rec, err := parseRecord(out.Item)
	if err != nil {
		return record{}, false, fmt.Errorf("shard: table %s base %q: %w", l.Table, clip(base), err)
	}
	return rec, true, nil
}

// errBadRecord wraps a record item that is not one dynashard wrote.
var errBadRecord = errors.New("malformed layout record")

func parseRecord(item map[string]types.AttributeValue) (record, error) {
	shape, ok := item[attrLayout].(*types.AttributeValueMemberS)
	if !ok || len(shape.Value) < len(recordVersion) || shape.Value[:len(recordVersion)] != recordVersion {
		return record{}, fmt.Errorf("%w: %s is not a %q string", errBadRecord, attrLayout, recordVersion)
	}
	list, ok := item[attrShards].(*types.AttributeValueMemberL)
	if !ok || len(list.Value) == 0 {
		return record{}, fmt.Errorf("%w: %s is not a non-empty list", errBadRecord, attrShards)
	}
	rec := record{shape: shape.Value[len(recordVersion):]}
	for _, v := range list.Value {
		num, ok := v.(*types.AttributeValueMemberN)
		if !ok {
			return record{}, fmt.Errorf("%w: %s holds a %T", errBadRecord, attrShards, v)
		}
		n, err := strconv.Atoi(num.Value)
		if err != nil || CheckN(n) != nil {
			return record{}, fmt.Errorf("%w: %s holds %q", errBadRecord, attrShards, num.Value)
		}
		rec.shards = append(rec.shards, n)
	}
	if v, ok := item[attrRev]; ok {
		num, ok := v.(*types.AttributeValueMemberN)
		rev, err := 0, error(nil)
		if ok {
			rev, err = strconv.Atoi(num.Value)
		}
		if !ok || err != nil || rev < 0 {
			return record{}, fmt.Errorf("%w: %s is not a revision number", errBadRecord, attrRev)
		}
		rec.rev = rev
	}
	return rec, nil
}

func (l Layout) writeRecord(ctx context.Context, c RecordClient, base string) error {
	return l.writeRecordN(ctx, c, base, l.N())
}

// writeRecordN writes a new record with the history [n].
func (l Layout) writeRecordN(ctx context.Context, c RecordClient, base string, n int) error {
	item, err := l.recordKey(base)
	if err != nil {
		return err
	}
	now := &types.AttributeValueMemberS{Value: time.Now().UTC().Format(time.RFC3339)}
	item[attrLayout] = &types.AttributeValueMemberS{Value: recordVersion + l.shape()}
	item[attrShards] = shardList([]int{n})
	item[attrRev] = &types.AttributeValueMemberN{Value: "1"}
	item[attrCreated], item[attrChanged] = now, now
	_, err = c.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: aws.String(l.Table), Item: item,
		ConditionExpression:      aws.String("attribute_not_exists(#pk)"),
		ExpressionAttributeNames: map[string]string{"#pk": l.PartitionKey},
	})
	if err != nil {
		var ccf *types.ConditionalCheckFailedException
		if errors.As(err, &ccf) {
			return err
		}
		return fmt.Errorf("shard: write layout record of table %s base %q: %w", l.Table, clip(base), err)
	}
	return nil
}

func shardList(h []int) *types.AttributeValueMemberL {
	l := &types.AttributeValueMemberL{Value: make([]types.AttributeValue, len(h))}
	for i, n := range h {
		l.Value[i] = &types.AttributeValueMemberN{Value: strconv.Itoa(n)}
	}
	return l
}

// verifiedCache remembers, per (client, table, base, layout without N),
// the shard-count history of a record that matched, with when it was read.
// An entry is used while younger than the caller's bound (the Layout's
// HistoryTTL), which is what bounds how stale a process's view of another
// process's Reshard can be. Concurrent first checks of one key share one
// check (and its requests). A client whose dynamic type is not comparable
// cannot be a map key and is neither cached nor shared. The cache holds at
// most maxVerified entries and starts over when full.
type verifiedCache struct {
	mu       sync.Mutex
	m        map[verifiedKey]cached
	inflight map[inflightKey]*flight
}

type cached struct {
	shards []int
	at     time.Time
}

type inflightKey struct {
	verifiedKey
	op string
}

// flight is one check in progress; done is closed when err is set.
type flight struct {
	done   chan struct{}
	shards []int
	err    error
}

type verifiedKey struct {
	client      RecordReader
	table, base string
	shape       shapeID
}

// shapeID identifies a layout's shape as Layout.shape writes it, built
// without allocating: every Put, Update, Get and Delete looks up the cache,
// and formatting a layout there allocated on every call (Layout.String, the
// key before, made 12 allocations per Put, about 1.3 µs). A user's
// Strategy counts by its dynamic type, as strategyKind names it.
type shapeID struct {
	pk, sk   string
	sortType types.ScalarAttributeType
	sep      string
	strategy reflect.Type
}

func (l Layout) shapeID() shapeID {
	id := shapeID{pk: l.PartitionKey, sep: l.Codec.sep(), strategy: reflect.TypeOf(l.Strategy)}
	if l.SortKey != "" {
		id.sk, id.sortType = l.SortKey, l.sortType()
	}
	return id
}

const maxVerified = 1 << 16

var verified = &verifiedCache{m: map[verifiedKey]cached{}, inflight: map[inflightKey]*flight{}}

// once runs check, or waits for the same check already running for the
// key and shares its result. A waiter's own ctx bounds its wait; a
// shared result that is the running caller's cancellation is not taken:
// the waiter then checks for itself.
func (v *verifiedCache) once(ctx context.Context, c RecordReader, l Layout, base, op string, check func() ([]int, error)) ([]int, error) {
	k, ok := v.key(c, l, base)
	if !ok {
		return check()
	}
	ik := inflightKey{k, op}
	for {
		v.mu.Lock()
		f, running := v.inflight[ik]
		if !running {
			f = &flight{done: make(chan struct{}), err: errCheckAbandoned}
			v.inflight[ik] = f
			v.mu.Unlock()
			return v.lead(ik, f, check)
		}
		v.mu.Unlock()
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-f.done:
		}
		if !errors.Is(f.err, context.Canceled) && !errors.Is(f.err, context.DeadlineExceeded) && f.err != errCheckAbandoned {
			return f.shards, f.err
		}
	}
}

// errCheckAbandoned is a flight's result until its check returns, so that
// waiters of a check that panicked check for themselves.
var errCheckAbandoned = errors.New("shard: layout check abandoned")

func (v *verifiedCache) lead(ik inflightKey, f *flight, check func() ([]int, error)) ([]int, error) {
	defer func() {
		v.mu.Lock()
		delete(v.inflight, ik)
		v.mu.Unlock()
		close(f.done)
	}()
	f.shards, f.err = check()
	return f.shards, f.err
}

func (v *verifiedCache) key(c RecordReader, l Layout, base string) (verifiedKey, bool) {
	if c == nil || !reflect.TypeOf(c).Comparable() {
		return verifiedKey{}, false
	}
	return verifiedKey{client: c, table: l.Table, base: base, shape: l.shapeID()}, true
}

// get returns the cached history of base if it is younger than maxAge.
func (v *verifiedCache) get(c RecordReader, l Layout, base string, maxAge time.Duration) ([]int, bool) {
	k, ok := v.key(c, l, base)
	if !ok || maxAge <= 0 {
		return nil, false
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	e, hit := v.m[k]
	if !hit || time.Since(e.at) >= maxAge {
		return nil, false
	}
	return e.shards, true
}

// newest returns the cached history of base whatever its age.
func (v *verifiedCache) newest(c RecordReader, l Layout, base string) ([]int, bool) {
	k, ok := v.key(c, l, base)
	if !ok {
		return nil, false
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	e, hit := v.m[k]
	return e.shards, hit
}

func (v *verifiedCache) add(c RecordReader, l Layout, base string, shards []int) {
	k, ok := v.key(c, l, base)
	if !ok {
		return
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if len(v.m) >= maxVerified {
		clear(v.m)
	}
	v.m[k] = cached{shards: shards, at: time.Now()}
}

// IsRecord reports whether item is a layout record rather than data: a
// Scan of a sharded table returns one record per base written, and code
// that scans should skip them.
func IsRecord(item map[string]types.AttributeValue) bool {
	_, ok := item[attrLayout]
	return ok
}
