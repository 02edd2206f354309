package record

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynashard/dynashard/internal/ddbsize"
	"github.com/dynashard/dynashard/internal/errs"
	"github.com/dynashard/dynashard/internal/skew"
)

// The record of a base's layout is an ordinary item of the table, under
// the partition key base + recordSuffix. A physical key always ends in a
// decimal digit (the suffix), so no codec can make that key a physical
// one, and the record never shows up in a read of data; a reader with any
// layout, whatever its separator, finds the record where the writer put it.
// Each base has its own record, which is where a later change of the
// base's shard count is kept. Its key, attributes and the rules for
// writing it are a stable format, documented at shard.IsRecord
// (shard/doc_record.go) for programs in other languages that share a
// base.
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

// MaxHistory is shard.MaxHistory (shard declares it from this one), the
// most counts a record's history holds: every count in it may cost a Get
// one more request.
const MaxHistory = 8

// MaxHistoryTTL is shard.MaxHistoryTTL (shard declares it from this one),
// the longest HistoryTTL a record holds: a day.
const MaxHistoryTTL = 24 * time.Hour

// maxRev bounds a record's revision, far below where an int64 wraps.
const maxRev = 1 << 53

// Record is a base's record as read.
type Record struct {
	Shape   string
	Shards  []int
	Pending bool
	Rev     int
	// TTL and Wait are the record's dynashard:ttl and dynashard:fence,
	// if Recorded is set (a record written before they existed has
	// neither).
	TTL, Wait time.Duration
	Recorded  bool
	// At is when the read that returned the record was sent, Got when its
	// answer came: the record was as read at some moment between.
	At, Got time.Time
}

func (r Record) String(table string) string {
	n := "?"
	if len(r.Shards) > 0 {
		n = strconv.Itoa(r.Shards[len(r.Shards)-1])
	}
	return fmt.Sprintf("%s: %s N=%s (history %v)", table, clipTo(r.Shape, maxQuoted), n, r.Shards)
}

// Key returns the primary key of base's record. It refuses a base that
// makes no valid physical key, or one too long for the record's key,
// before any request.
func (d Layout) Key(base string) (map[string]types.AttributeValue, error) {
	if d.checkBase == nil {
		return nil, fmt.Errorf("%w: table %s: a layout description not made by record.Describe", errs.Invalid, d.Table)
	}
	if err := d.checkBase(base, 1); err != nil {
		return nil, err
	}
	if len(base)+len(recordSuffix) > ddbsize.MaxPartitionKeyBytes {
		return nil, d.tooLongErr(base)
	}
	key := map[string]types.AttributeValue{d.PartitionKey: &types.AttributeValueMemberS{Value: base + recordSuffix}}
	switch {
	case d.SortKey == "":
	case d.SortType == types.ScalarAttributeTypeN:
		key[d.SortKey] = &types.AttributeValueMemberN{Value: "0"}
	case d.SortType == types.ScalarAttributeTypeB:
		key[d.SortKey] = &types.AttributeValueMemberB{Value: []byte(recordMarker)}
	default:
		key[d.SortKey] = &types.AttributeValueMemberS{Value: recordMarker}
	}
	return key, nil
}

func (d Layout) tooLongErr(base string) error {
	if d.tooLong != nil {
		return d.tooLong(base)
	}
	return fmt.Errorf("%w: base %q is longer than %d bytes, too long for a checked layout: its layout record's partition key, base + %q, would exceed %d bytes (%w)",
		errs.KeyTooLong, clip(base), ddbsize.MaxPartitionKeyBytes-len(recordSuffix), recordSuffix, ddbsize.MaxPartitionKeyBytes, errs.InvalidKey)
}

// Is reports whether item is a base's layout record, by its key: see
// shard.IsRecord, which documents it.
func Is(item map[string]types.AttributeValue) bool {
	key := false
	for name, v := range item {
		if strings.HasPrefix(name, "dynashard:") {
			continue
		}
		switch {
		case !key && isRecordPK(v):
			key = true
		case !isRecordSK(v):
			return false
		}
	}
	return key
}

// isRecordPK reports whether v is a record's partition-key value.
func isRecordPK(v types.AttributeValue) bool {
	s, ok := v.(*types.AttributeValueMemberS)
	return ok && len(s.Value) > len(recordSuffix) && strings.HasSuffix(s.Value, recordSuffix)
}

// isRecordSK reports whether v is a record's sort-key value (Key).
func isRecordSK(v types.AttributeValue) bool {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return v.Value == recordMarker
	case *types.AttributeValueMemberB:
		return string(v.Value) == recordMarker
	case *types.AttributeValueMemberN:
		return v.Value == "0"
	}
	return false
}

// Parse reads a record item, checking every bound a writer relies
// on: a history of 1..MaxHistory counts, each in 1..MaxN and none twice,
// and a revision below maxRev, so that a record written by other code
// can cost neither a request per count nor a revision that wraps.
func Parse(item map[string]types.AttributeValue) (Record, error) {
	bad := func(format string, a ...any) (Record, error) {
		return Record{}, fmt.Errorf("%w: "+format, append([]any{errs.MalformedRecord}, a...)...)
	}
	shape, ok := item[attrLayout].(*types.AttributeValueMemberS)
	if !ok || len(shape.Value) < len(recordVersion) || shape.Value[:len(recordVersion)] != recordVersion {
		return bad("%s is not a %q string", attrLayout, recordVersion)
	}
	list, ok := item[attrShards].(*types.AttributeValueMemberL)
	if !ok || len(list.Value) == 0 || len(list.Value) > MaxHistory {
		return bad("%s is not a list of 1..%d counts", attrShards, MaxHistory)
	}
	rec := Record{Shape: shape.Value[len(recordVersion):]}
	for _, v := range list.Value {
		num, ok := v.(*types.AttributeValueMemberN)
		if !ok {
			return bad("%s holds a %T", attrShards, v)
		}
		n, err := strconv.Atoi(num.Value)
		if err != nil || n < 1 || n > skew.MaxN || slices.Contains(rec.Shards, n) {
			return bad("%s holds %q", attrShards, clip(num.Value))
		}
		rec.Shards = append(rec.Shards, n)
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
		rec.Rev = rev
	}
	if v, ok := item[attrPending]; ok {
		b, ok := v.(*types.AttributeValueMemberBOOL)
		if !ok || b.Value && len(rec.Shards) < 2 {
			return bad("%s is not a boolean after two counts or more", attrPending)
		}
		rec.Pending = b.Value
	}
	ttl, hasTTL, err := parseMillis(item, attrTTL, MaxHistoryTTL)
	if err != nil {
		return bad("%w", err)
	}
	wait, hasWait, err := parseMillis(item, attrWait, Fence(MaxHistoryTTL))
	if err != nil {
		return bad("%w", err)
	}
	if hasTTL != hasWait || hasTTL && wait < Fence(ttl) {
		return bad("%s and %s: a fence of %v is shorter than the fence of a HistoryTTL of %v", attrTTL, attrWait, wait, ttl)
	}
	rec.TTL, rec.Wait, rec.Recorded = ttl, wait, hasTTL
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

func shardList(h []int) *types.AttributeValueMemberL {
	l := &types.AttributeValueMemberL{Value: make([]types.AttributeValue, len(h))}
	for i, n := range h {
		l.Value[i] = &types.AttributeValueMemberN{Value: strconv.Itoa(n)}
	}
	return l
}

// maxQuoted bounds what a *shard.LayoutError quotes of each value read
// from the table: more than clip's 64 bytes, because a layout written
// with key names of ordinary length is longer than that, and cutting it
// would hide the part that differs (often the strategy, at its end).
const maxQuoted = 256

// clip shortens s for an error message, as shard's clip does: the first
// 64 bytes (cut back to a rune boundary), then "…" and the full length
// in bytes.
func clip(s string) string { return clipTo(s, 64) }

// clipTo is clip with a bound of show bytes.
func clipTo(s string, show int) string { return errs.Clip(s, show) }
