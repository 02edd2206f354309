package stream

import (
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"

	"github.com/dynashard/dynashard/split"
)

// PartDecoder reads the stream of one part's table of a split.Layout: each
// record is a change of that part of a logical item. A part's item has one
// key (split's sharded parts are Unchecked: nothing moves them), so the
// records of one part of one item are in order, and a State only tells
// records delivered again.
type PartDecoder struct {
	part      split.Part
	pk, sk    string // the part table's key attributes
	logicalSK bool   // the logical key has a sort key
	sharded   bool
}

// PartChange is what a record does to one part of a logical item.
type PartChange struct {
	// Kind is Put (the part is now Attributes), Delete, or None (a record
	// delivered again, or older than one seen).
	Kind Kind
	Key  split.Key
	Part string
	// Attributes is the part's item after a Put, as stored: its key
	// attributes, the part's attributes and its version. Old is the item
	// before the record, where the stream's view holds it.
	Attributes, Old map[string]ddbtypes.AttributeValue
	// Sequence and At are the record's sequence number and approximate
	// creation time: its position in the stream.
	Sequence string
	At       time.Time
}

// NewPartDecoder returns the PartDecoder of l's part named part. It
// returns an error matching ErrInvalid for a Layout split.New refuses or
// an unknown part.
func NewPartDecoder(l split.Layout, part string) (*PartDecoder, error) {
	if err := l.Validate(); err != nil {
		return nil, fmt.Errorf("stream: NewPartDecoder: %w", err)
	}
	for _, p := range l.Parts {
		if p.Name != part {
			continue
		}
		d := &PartDecoder{part: p, pk: l.PartitionKey, sk: l.SortKey, logicalSK: l.SortKey != ""}
		if p.Shard != nil {
			d.pk, d.sk, d.sharded = p.Shard.PartitionKey, p.Shard.SortKey, true
		}
		return d, nil
	}
	return nil, fmt.Errorf("%w: stream: NewPartDecoder: the layout has no part %q", ErrInvalid, part)
}

// Apply returns what r does to the part of its logical item, given s, the
// State the consumer keeps for that part of that item (the zero State for
// one it never saw), and updates s. ok is false for a record of an item
// the part's keys do not read. The ordering rule is the Decoder's: apply
// a part's Changes in the order of its records, and store s with each.
func (d *PartDecoder) Apply(s *State, r types.Record) (ch PartChange, ok bool, err error) {
	ch.Part = d.part.Name
	sr := r.Dynamodb
	if s == nil || sr == nil || !digits(aws.ToString(sr.SequenceNumber)) {
		return ch, false, fmt.Errorf("%w: stream: PartDecoder.Apply: nil State, or a record without a sequence number", ErrInvalid)
	}
	keys, err := attributevalue.FromDynamoDBStreamsMap(sr.Keys)
	if err != nil {
		return ch, false, fmt.Errorf("%w: stream record %s: keys: %w", ErrInvalid, aws.ToString(r.EventID), err)
	}
	ch.Key, ok = d.key(keys)
	if !ok {
		return ch, false, nil
	}
	e := Event{Copy: fmt.Sprint(ch.Key), Sequence: aws.ToString(sr.SequenceNumber), At: aws.ToTime(sr.ApproximateCreationDateTime)}
	if r.EventName != types.OperationTypeRemove {
		if sr.StreamViewType != types.StreamViewTypeNewImage && sr.StreamViewType != types.StreamViewTypeNewAndOldImages {
			return ch, false, fmt.Errorf("%w: stream record %s has view %q; PartDecoder needs NEW_IMAGE or NEW_AND_OLD_IMAGES", ErrNoImages, aws.ToString(r.EventID), sr.StreamViewType)
		}
		if e.Item, err = attributevalue.FromDynamoDBStreamsMap(sr.NewImage); err != nil || e.Item == nil {
			return ch, false, fmt.Errorf("%w: stream record %s lacks a readable new image: %v", ErrInvalid, aws.ToString(r.EventID), err)
		}
	}
	ch.Sequence, ch.At = e.Sequence, e.At
	if sr.OldImage != nil {
		if ch.Old, err = attributevalue.FromDynamoDBStreamsMap(sr.OldImage); err != nil {
			return ch, false, fmt.Errorf("%w: stream record %s: old image: %w", ErrInvalid, aws.ToString(r.EventID), err)
		}
	}
	next := s.clone()
	if !next.see(e, d.pk) {
		return ch, true, nil
	}
	*s = next
	if e.Item == nil {
		ch.Kind = Delete
	} else {
		ch.Kind, ch.Attributes = Put, e.Item
	}
	return ch, true, nil
}

// key reads a part item's key as the logical key.
func (d *PartDecoder) key(keys map[string]ddbtypes.AttributeValue) (split.Key, bool) {
	str := func(v ddbtypes.AttributeValue) (string, bool) {
		switch v := v.(type) {
		case *ddbtypes.AttributeValueMemberS:
			return v.Value, true
		case *ddbtypes.AttributeValueMemberN:
			return v.Value, true
		}
		return "", false
	}
	pk, ok := str(keys[d.pk])
	if !ok {
		return split.Key{}, false
	}
	var k split.Key
	if d.sharded {
		base, _, err := d.part.Shard.Codec.Parse(pk)
		if err != nil {
			return split.Key{}, false
		}
		k.PK = base
	} else {
		k.PK = pk
	}
	if d.logicalSK {
		if k.SK, ok = str(keys[d.sk]); !ok {
			return split.Key{}, false
		}
	}
	return k, true
}
