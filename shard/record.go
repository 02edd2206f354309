package shard

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/dynashard/dynashard/internal/errs"
	"github.com/dynashard/dynashard/internal/history"
	"github.com/dynashard/dynashard/internal/observe"
)

// The record of a base's layout is an ordinary item of the table, under
// the partition key base + recordSuffix. A physical key always ends in a
// decimal digit (the suffix), so no codec can make that key a physical
// one, and the record never shows up in a read of data; a reader with any
// layout, whatever its separator, finds the record where the writer put it.
// Each base has its own record, which is where a later change of the
// base's shard count is kept. Its key, attributes and the rules for
// writing it are a stable format, documented at [IsRecord] (doc_record.go)
// for programs in other languages that share a base.
const (
	recordSuffix  = "#dynashard"
	recordMarker  = "dynashard#layout"
	attrLayout    = "dynashard:layout"
	attrShards    = "dynashard:shards"
	attrRev       = "dynashard:rev"
	attrCreated   = "dynashard:created"
	attrChanged   = "dynashard:changed"
	attrPending   = "dynashard:pending"
	attrTTL       = "dynashard:ttl"
	attrWait      = "dynashard:fence"
	recordVersion = "v1 "
)

// recordReader is what a read of a base's record needs. A client that
// also has DescribeTable (as *dynamodb.Client does) gets a *LayoutError
// naming the key attributes when the Layout's key attributes are not the
// table's: DynamoDB refuses the record read with a ValidationException,
// and one DescribeTable then says which key differs. Without
// DescribeTable (or the permission for it) that case is the SDK's error,
// wrapped.
type recordReader interface {
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
}

// tableDescriber is the optional part of a recordReader that explains a
// refused record read.
type tableDescriber interface {
	DescribeTable(ctx context.Context, in *dynamodb.DescribeTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error)
}

// recordClient is what writing a base's record needs.
type recordClient interface {
	recordReader
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
}

var _ recordClient = (*dynamodb.Client)(nil)

// LayoutError reports a layout that disagrees with the one recorded for a
// base, or with the table's own key schema. It matches ErrLayoutMismatch.
// Stored, and so the message, quotes at most 256 bytes of each value
// read from the table (then "…" and the value's full length), so that a
// record written by other code cannot make a message of any size; the
// base is quoted up to 64 bytes.
type LayoutError struct {
	Base   string
	Want   string // the caller's layout (Layout.String)
	Stored string // the recorded one, in the same form; or the table's key schema (Keys set)
	// Keys is set when the Layout's key attributes are not the table's
	// (DynamoDB refused the record read, and DescribeTable told why: a
	// client without a DescribeTable method gets the SDK's
	// ValidationException instead): one entry per differing key attribute, in Want's
	// notation, such as "sk=tag:S, the table's sk=sk:S" or "pk=gpk, the
	// table's pk=pk". Stored is then the table's key schema, such as
	// "orders: pk=pk sk=sk:S".
	Keys []string
}

// maxQuoted bounds what a LayoutError quotes of each value read from the
// table: more than clip's 64 bytes, because a layout written with key
// names of ordinary length is longer than that, and cutting it would hide
// the part that differs (often the strategy, at its end).
const maxQuoted = 256

func (e *LayoutError) Error() string {
	if len(e.Keys) > 0 {
		return fmt.Sprintf("shard: layout mismatch for base %q: this code uses %s; the table's key schema is %s (%s)", clip(e.Base), e.Want, e.Stored, strings.Join(e.Keys, "; "))
	}
	return fmt.Sprintf("shard: layout mismatch for base %q: this code uses %s; the table records %s", clip(e.Base), e.Want, e.Stored)
}

func (e *LayoutError) Is(target error) bool { return target == ErrLayoutMismatch }

func init() {
	history.Shards = func(ctx context.Context, c history.Reader, layout any, base string) ([]int, bool, error) {
		return layout.(Layout).shardsDue(ctx, c, base)
	}
	history.Refresh = func(ctx context.Context, c history.Reader, layout any, base string) error {
		_, err := layout.(Layout).history(ctx, c, base, 0)
		return err
	}
	history.Record = func(ctx context.Context, c history.Writer, layout any, base string) error {
		l := layout.(Layout)
		_, err := l.recorded(ctx, c, base, l.historyTTL())
		return err
	}
}

// shardsOf is Table.Shards for any reader of the record.
func (l Layout) shardsOf(ctx context.Context, c recordReader, base string) ([]int, error) {
	h, _, err := l.shardsDue(ctx, c, base)
	return h, err
}

// shardsDue is shardsOf reporting too whether the view came from a cache
// entry past half the HistoryTTL, which scatter, through
// internal/history, reads again beside its requests.
func (l Layout) shardsDue(ctx context.Context, c recordReader, base string) ([]int, bool, error) {
	v, err := l.history(ctx, c, base, l.historyTTL())
	ttl := v.trust(l)
	due := err == nil && !l.Unchecked && ttl > 0 && time.Since(v.at) >= ttl/2
	return v.shards, due, err
}

// history is shardsOf returning the view, with a bound on the cached
// entry's age; maxAge 0 reads the record.
func (l Layout) history(ctx context.Context, c recordReader, base string, maxAge time.Duration) (view, error) {
	return l.cachedView(ctx, c, base, maxAge, "verify", func() (view, error) {
		at := time.Now()
		rec, ok, err := l.readRecord(ctx, c, base)
		if err != nil {
			return view{}, err
		}
		if !ok {
			return view{shards: []int{l.N()}, at: at}, nil
		}
		return l.accept(databaseOf(ctx, c), base, rec)
	})
}

// recorded checks l against the record of base before a write, and
// writes the record if there is none, with a conditional put so that
// processes racing with different layouts agree: exactly one record is
// written, and every layout that differs from it in anything but N then
// fails with a *LayoutError. A new base's history starts as [l.N()]. It
// returns the base's view, from the cache if no older than maxAge.
func (l Layout) recorded(ctx context.Context, c recordClient, base string, maxAge time.Duration) (view, error) {
	return l.cachedView(ctx, c, base, maxAge, "record", func() (view, error) { return l.record(ctx, c, base) })
}

// cachedView is base's view from the process's cache if no older than
// maxAge, else from load, one load per (layout shape, base, what) at a
// time; an Unchecked layout's view is [l.N()] without a request. c is the
// client load uses, checked here.
func (l Layout) cachedView(ctx context.Context, c recordReader, base string, maxAge time.Duration, what string, load func() (view, error)) (view, error) {
	if ctx == nil || errs.IsNil(c) {
		return view{}, fmt.Errorf("%w: table %s: nil ctx or client", ErrInvalid, l.Table)
	}
	if l.Unchecked {
		return view{shards: []int{l.N()}, at: time.Now()}, nil
	}
	db := databaseOf(ctx, c)
	if v, ok := views.get(db, l, base, maxAge); ok {
		return v, nil
	}
	return views.once(ctx, db, l, base, what, load)
}

func (l Layout) record(ctx context.Context, c recordClient, base string) (view, error) {
	for range 2 {
		at := time.Now()
		rec, ok, err := l.readRecord(ctx, c, base)
		if err != nil {
			return view{}, err
		}
		if ok {
			return l.accept(databaseOf(ctx, c), base, rec)
		}
		err = l.writeRecord(ctx, c, base)
		var ccf *types.ConditionalCheckFailedException
		if !errors.As(err, &ccf) {
			if err != nil {
				return view{}, err
			}
			v := l.created(l.N(), at)
			views.add(databaseOf(ctx, c), l, base, v)
			return v, nil
		}
		// Another writer recorded the base first: compare with its record.
	}
	return view{}, fmt.Errorf("shard: table %s base %q: layout record kept changing", l.Table, clip(base))
}

type record struct {
	shape   string
	shards  []int
	pending bool
	rev     int
	// ttl and wait are the record's dynashard:ttl and dynashard:fence,
	// if recorded is set (a record written before they existed has
	// neither).
	ttl, wait time.Duration
	recorded  bool
	// at is when the read that returned the record was sent, got when its
	// answer came: the record was as read at some moment between.
	at, got time.Time
}

// accept checks rec against l and caches its view in db's entry.
func (l Layout) accept(db, base string, rec record) (view, error) {
	if rec.shape != l.shape() {
		return view{}, &LayoutError{Base: base, Want: l.String(), Stored: rec.String(l.Table)}
	}
	v := view{shards: rec.shards, pending: rec.pending, rev: rec.rev, at: rec.at, got: rec.got,
		ttl: rec.ttl, wait: rec.wait, recorded: rec.recorded}
	views.add(db, l, base, v)
	return v, nil
}

// created is the view of a record l writes with the history [n], sent
// at at.
func (l Layout) created(n int, at time.Time) view {
	ttl := l.historyTTL()
	return view{shards: []int{n}, rev: 1, at: at, ttl: ttl, wait: fenceOf(ttl), recorded: true}
}

func (r record) String(table string) string {
	n := "?"
	if len(r.shards) > 0 {
		n = strconv.Itoa(r.shards[len(r.shards)-1])
	}
	return fmt.Sprintf("%s: %s N=%s (history %v)", table, clipTo(r.shape, maxQuoted), n, r.shards)
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

func (l Layout) readRecord(ctx context.Context, c recordReader, base string) (record, bool, error) {
	key, err := l.recordKey(base)
	if err != nil {
		return record{}, false, err
	}
	at := time.Now()
	observe.ScopeOf(ctx).RecordRead(ctx, l.Table)
	out, err := observe.Do(ctx, c.GetItem, &dynamodb.GetItemInput{
		TableName: aws.String(l.Table), Key: key, ConsistentRead: aws.Bool(true),
		ProjectionExpression: aws.String("#l, #s, #r, #p, #t, #f"),
		ExpressionAttributeNames: map[string]string{"#l": attrLayout, "#s": attrShards, "#r": attrRev, "#p": attrPending,
			"#t": attrTTL, "#f": attrWait},
	})
	if err != nil {
		if le := l.keyMismatch(ctx, c, base, err); le != nil {
			return record{}, false, le
		}
		return record{}, false, fmt.Errorf("shard: read layout record of table %s base %q: %w", l.Table, clip(base), err)
	}
	if out.Item == nil {
		return record{}, false, nil
	}
	got := time.Now()
	rec, err := parseRecord(out.Item)
	if err != nil {
		return record{}, false, fmt.Errorf("shard: table %s base %q: %w", l.Table, clip(base), err)
	}
	rec.at, rec.got = at, got
	return rec, true, nil
}

// keyMismatch explains a record read that DynamoDB refused as invalid
// (err): if the table's key schema is not l's, it returns a *LayoutError
// naming each differing key attribute; otherwise nil, and the caller
// keeps err.
//
// Why DescribeTable, and only after a refusal, rather than recognising
// the refusal's text: the servers word it differently (DynamoDB and
// dynalite: "The provided key element does not match the schema";
// DynamoDB Local: "One of the required keys was not given a value", "The
// number of conditions on the keys is invalid", "Type mismatch for
// key"), the same ValidationException covers other bad input (a table
// name DynamoDB refuses), and no text says which attribute is wrong. The
// table's description does, and asking for it only on this failure costs
// nothing on the path that works. It is not a data request.
func (l Layout) keyMismatch(ctx context.Context, c recordReader, base string, err error) *LayoutError {
	var ae smithy.APIError
	d, ok := c.(tableDescriber)
	if !ok || !errors.As(err, &ae) || ae.ErrorCode() != "ValidationException" {
		return nil
	}
	out, derr := observe.Do(ctx, d.DescribeTable, &dynamodb.DescribeTableInput{TableName: aws.String(l.Table)})
	if derr != nil || out == nil || out.Table == nil {
		return nil
	}
	t := tableKeyOf(out.Table)
	diffs := t.diffs(l)
	if len(diffs) == 0 {
		return nil
	}
	return &LayoutError{Base: base, Want: l.String(), Stored: l.Table + ": " + t.String(), Keys: diffs}
}

// tableKey is a table's key schema as DescribeTable gives it.
type tableKey struct {
	pk, sk         string
	pkType, skType types.ScalarAttributeType
}

func tableKeyOf(d *types.TableDescription) tableKey {
	var k tableKey
	for _, e := range d.KeySchema {
		switch e.KeyType {
		case types.KeyTypeHash:
			k.pk = aws.ToString(e.AttributeName)
		case types.KeyTypeRange:
			k.sk = aws.ToString(e.AttributeName)
		}
	}
	for _, a := range d.AttributeDefinitions {
		switch aws.ToString(a.AttributeName) {
		case k.pk:
			k.pkType = a.AttributeType
		case k.sk:
			k.skType = a.AttributeType
		}
	}
	return k
}

// partition and sort are the key's parts in Layout.String's notation; a
// partition key of a type other than S shows it.
func (k tableKey) partition() string {
	s := "pk=" + clipTo(k.pk, maxQuoted)
	if k.pkType != types.ScalarAttributeTypeS {
		s += ":" + clipTo(string(k.pkType), maxQuoted)
	}
	return s
}

func (k tableKey) sort() string {
	return "sk=" + clipTo(k.sk, maxQuoted) + ":" + clipTo(string(k.skType), maxQuoted)
}

func (k tableKey) String() string {
	if k.sk == "" {
		return k.partition()
	}
	return k.partition() + " " + k.sort()
}

// diffs lists each key attribute on which l differs from k.
func (k tableKey) diffs(l Layout) []string {
	var d []string
	if k.pk != l.PartitionKey || k.pkType != types.ScalarAttributeTypeS {
		d = append(d, fmt.Sprintf("pk=%s, the table's %s", l.PartitionKey, k.partition()))
	}
	mine := fmt.Sprintf("sk=%s:%s", l.SortKey, l.sortType())
	switch {
	case l.SortKey == "" && k.sk == "":
	case l.SortKey == "":
		d = append(d, "no sk, the table's "+k.sort())
	case k.sk == "":
		d = append(d, mine+", the table has no sort key")
	case k.sk != l.SortKey || k.skType != l.sortType():
		d = append(d, mine+", the table's "+k.sort())
	}
	return d
}

// parseRecord reads a record item, checking every bound a writer relies
// on: a history of 1..MaxHistory counts, each in 1..MaxN and none twice,
// and a revision below maxRev, so that a record written by other code
// can cost neither a request per count nor a revision that wraps.
func parseRecord(item map[string]types.AttributeValue) (record, error) {
	bad := func(format string, a ...any) (record, error) {
		return record{}, fmt.Errorf("%w: "+format, append([]any{ErrMalformedRecord}, a...)...)
	}
	shape, ok := item[attrLayout].(*types.AttributeValueMemberS)
	if !ok || len(shape.Value) < len(recordVersion) || shape.Value[:len(recordVersion)] != recordVersion {
		return bad("%s is not a %q string", attrLayout, recordVersion)
	}
	list, ok := item[attrShards].(*types.AttributeValueMemberL)
	if !ok || len(list.Value) == 0 || len(list.Value) > MaxHistory {
		return bad("%s is not a list of 1..%d counts", attrShards, MaxHistory)
	}
	rec := record{shape: shape.Value[len(recordVersion):]}
	for _, v := range list.Value {
		num, ok := v.(*types.AttributeValueMemberN)
		if !ok {
			return bad("%s holds a %T", attrShards, v)
		}
		n, err := strconv.Atoi(num.Value)
		if err != nil || CheckN(n) != nil || slices.Contains(rec.shards, n) {
			return bad("%s holds %q", attrShards, clip(num.Value))
		}
		rec.shards = append(rec.shards, n)
	}
	if v, ok := item[attrRev]; ok {
		num, ok := v.(*types.AttributeValueMemberN)
		rev, err := 0, error(nil)
		if ok {
			rev, err = strconv.Atoi(num.Value)
		}
		if !ok || err != nil || rev < 0 || rev >= maxRev {
			return bad("%s is not a revision below %d", attrRev, maxRev)
		}
		rec.rev = rev
	}
	if v, ok := item[attrPending]; ok {
		b, ok := v.(*types.AttributeValueMemberBOOL)
		if !ok || b.Value && len(rec.shards) < 2 {
			return bad("%s is not a boolean after two counts or more", attrPending)
		}
		rec.pending = b.Value
	}
	ttl, hasTTL, err := parseMillis(item, attrTTL, MaxHistoryTTL)
	if err != nil {
		return bad("%w", err)
	}
	wait, hasWait, err := parseMillis(item, attrWait, fenceOf(MaxHistoryTTL))
	if err != nil {
		return bad("%w", err)
	}
	if hasTTL != hasWait || hasTTL && wait < fenceOf(ttl) {
		return bad("%s and %s: a fence of %v is shorter than the fence of a HistoryTTL of %v", attrTTL, attrWait, wait, ttl)
	}
	rec.ttl, rec.wait, rec.recorded = ttl, wait, hasTTL
	return rec, nil
}

// parseMillis reads item's attribute name as a whole number of
// milliseconds in 0..bound; absent is (0, false).
func parseMillis(item map[string]types.AttributeValue, name string, bound time.Duration) (time.Duration, bool, error) {
	v, ok := item[name]
	if !ok {
		return 0, false, nil
	}
	num, ok := v.(*types.AttributeValueMemberN)
	ms, err := int64(0), error(nil)
	if ok {
		ms, err = strconv.ParseInt(num.Value, 10, 64)
	}
	if !ok || err != nil || ms < 0 || ms > bound.Milliseconds() {
		return 0, false, fmt.Errorf("%s is not a number of milliseconds in 0..%d", name, bound.Milliseconds())
	}
	return time.Duration(ms) * time.Millisecond, true, nil
}

// millis is d as the record stores it.
func millis(d time.Duration) *types.AttributeValueMemberN {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(d.Milliseconds(), 10)}
}

// maxRev bounds a record's revision, far below where an int64 wraps.
const maxRev = 1 << 53

func (l Layout) writeRecord(ctx context.Context, c recordClient, base string) error {
	return l.writeRecordN(ctx, c, base, l.N())
}

// writeRecordN writes a new record with the history [n].
func (l Layout) writeRecordN(ctx context.Context, c recordClient, base string, n int) error {
	item, err := l.recordKey(base)
	if err != nil {
		return err
	}
	now := &types.AttributeValueMemberS{Value: time.Now().UTC().Format(time.RFC3339)}
	item[attrLayout] = &types.AttributeValueMemberS{Value: recordVersion + l.shape()}
	item[attrShards] = shardList([]int{n})
	item[attrRev] = &types.AttributeValueMemberN{Value: "1"}
	item[attrCreated], item[attrChanged] = now, now
	item[attrTTL], item[attrWait] = millis(l.historyTTL()), millis(l.fence())
	_, err = observe.Do(ctx, c.PutItem, &dynamodb.PutItemInput{
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
