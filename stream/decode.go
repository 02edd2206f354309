package stream

import (
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"

	"github.com/dynashard/dynashard/internal/record"
)

// recordSuffix ends the partition key of a base's layout record (see
// shard.IsRecord): no physical key ends so.
const recordSuffix = "#dynashard"

// hiddenPrefix starts the attributes package shard keeps on an item for
// itself (dynashard:w, the token of a transactional write). An Event
// never carries them: a move drops them, so they would make a copy's
// content differ from the item's.
const hiddenPrefix = "dynashard:"

// Event is one stream record read against a layout: which logical item it
// is about, which copy of it (the physical key), and what the copy is
// after the record. Decoder.Apply turns it into the item's Change.
type Event struct {
	// Base and ID name the logical item. A layout record's Event has the
	// base and no ID.
	Base, ID string
	// Copy is the copy's partition key: base, separator, suffix.
	Copy string
	// Sequence is the record's sequence number (decimal digits). Within
	// one copy a later record has a greater one.
	Sequence string
	// At is the record's ApproximateCreationDateTime.
	At time.Time
	// Item is the copy after the record, without the hidden dynashard:…
	// attributes; nil after a REMOVE. Old is the copy before it, where
	// the stream's view holds it.
	Item, Old map[string]ddbtypes.AttributeValue
	// History is set for the base's layout record: the shard-count
	// history it holds after the record, oldest first.
	History []int
}

// Event reads r. ok is false, with a nil error, for a record that is no
// logical item of the layout: a chunk of a large value, or an item whose
// key the layout's codec does not read (written by other code). The
// stream's view must hold new images (NEW_IMAGE or NEW_AND_OLD_IMAGES):
// a record of another view is an error matching ErrNoImages, naming it.
func (d *Decoder[T]) Event(r types.Record) (e Event, ok bool, err error) {
	sr := r.Dynamodb
	if sr == nil || sr.Keys == nil || aws.ToString(sr.SequenceNumber) == "" {
		return Event{}, false, fmt.Errorf("%w: stream record %s has no keys or sequence number", ErrInvalid, aws.ToString(r.EventID))
	}
	switch sr.StreamViewType {
	case types.StreamViewTypeNewImage, types.StreamViewTypeNewAndOldImages:
	default:
		return Event{}, false, fmt.Errorf("%w: stream record %s has view %q; Decoder needs NEW_IMAGE or NEW_AND_OLD_IMAGES", ErrNoImages, aws.ToString(r.EventID), sr.StreamViewType)
	}
	keys, err := attributevalue.FromDynamoDBStreamsMap(sr.Keys)
	if err != nil {
		return Event{}, false, fmt.Errorf("%w: stream record %s: keys: %w", ErrInvalid, aws.ToString(r.EventID), err)
	}
	pk, _ := keys[d.l.PartitionKey].(*ddbtypes.AttributeValueMemberS)
	if pk == nil {
		return Event{}, false, nil
	}
	e = Event{Copy: pk.Value, Sequence: aws.ToString(sr.SequenceNumber), At: aws.ToTime(sr.ApproximateCreationDateTime)}
	if !digits(e.Sequence) {
		return Event{}, false, fmt.Errorf("%w: stream record %s: sequence number %q is not decimal digits", ErrInvalid, aws.ToString(r.EventID), e.Sequence)
	}
	if r.EventName != types.OperationTypeRemove {
		if e.Item, err = attributevalue.FromDynamoDBStreamsMap(sr.NewImage); err != nil || e.Item == nil {
			return Event{}, false, fmt.Errorf("%w: stream record %s (%s) lacks a readable new image: %v", ErrInvalid, aws.ToString(r.EventID), r.EventName, err)
		}
	}
	if sr.OldImage != nil {
		if e.Old, err = attributevalue.FromDynamoDBStreamsMap(sr.OldImage); err != nil {
			return Event{}, false, fmt.Errorf("%w: stream record %s: old image: %w", ErrInvalid, aws.ToString(r.EventID), err)
		}
	}
	if base, isRecord := strings.CutSuffix(pk.Value, recordSuffix); isRecord {
		e.Base = base
		if e.Item == nil { // a record is never deleted through dynashard
			return Event{}, false, nil
		}
		rec, err := record.Parse(e.Item)
		if err != nil {
			return Event{}, false, fmt.Errorf("stream: layout record of base %q: %w", clip(base), err)
		}
		e.History = rec.Shards
		e.Item, e.Old = nil, nil
		return e, true, nil
	}
	base, _, err := d.l.Codec.Parse(pk.Value)
	if err != nil {
		return Event{}, false, nil // not a physical key: a chunk, or other code's item
	}
	id, _ := keys[d.l.SortKey].(*ddbtypes.AttributeValueMemberS)
	if id == nil {
		return Event{}, false, nil
	}
	if isChunk(e.Item) || isChunk(e.Old) {
		return Event{}, false, nil
	}
	e.Base, e.ID = base, id.Value
	e.Item, e.Old = visible(e.Item), visible(e.Old)
	return e, true, nil
}

// isChunk reports whether item is a chunk of a large value (package
// chunk's chunk items hold the payload's bytes and their parent's key).
func isChunk(item map[string]ddbtypes.AttributeValue) bool {
	_, data := item["Data"].(*ddbtypes.AttributeValueMemberB)
	_, parent := item["Parent"].(*ddbtypes.AttributeValueMemberM)
	return data && parent
}

// visible is item without the hidden attributes (item itself if it has
// none).
func visible(item map[string]ddbtypes.AttributeValue) map[string]ddbtypes.AttributeValue {
	hidden := false
	for name := range item {
		hidden = hidden || strings.HasPrefix(name, hiddenPrefix)
	}
	if !hidden {
		return item
	}
	out := make(map[string]ddbtypes.AttributeValue, len(item))
	for name, v := range item {
		if !strings.HasPrefix(name, hiddenPrefix) {
			out[name] = v
		}
	}
	return out
}

func digits(s string) bool {
	for _, c := range []byte(s) {
		if c < '0' || c > '9' {
			return false
		}
	}
	return s != ""
}

// clip bounds what an error quotes of a value read from the stream.
func clip(s string) string {
	if len(s) <= 64 {
		return s
	}
	return s[:64] + "…"
}
