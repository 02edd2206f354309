package stream

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynashard/dynashard/internal/avmap"
	"github.com/dynashard/dynashard/internal/errs"
	"github.com/dynashard/dynashard/shard"
)

// ErrNoImages reports a stream record whose view holds no new image
// (KEYS_ONLY or OLD_IMAGE): a Decoder cannot tell what a copy holds.
var ErrNoImages = errs.New("stream: the stream's view has no new images", errs.Invalid)

// Kind says what a Change does to a logical item.
type Kind uint8

const (
	// None: the consumer's item stays as it is. A Rebalance move, a
	// record delivered again, and a record older than what the consumer
	// saw are None.
	None Kind = iota
	// Put: the item is now Change.Item.
	Put
	// Delete: the item is gone.
	Delete
	// Reshard: the base's shard-count history is now Change.History.
	Reshard
)

func (k Kind) String() string {
	switch k {
	case None:
		return "None"
	case Put:
		return "Put"
	case Delete:
		return "Delete"
	case Reshard:
		return "Reshard"
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

// Change is what an Event does to the consumer's copy of a logical item.
type Change[T any] struct {
	Kind     Kind
	Base, ID string
	// Item is the item after a Put, as shard.Table.Get returns it.
	Item T
	// Attributes is Item's stored form, without the hidden attributes.
	Attributes map[string]ddbtypes.AttributeValue
	// Old is the item before the record, where the stream's view holds it
	// and the Change comes from the record's own copy; nil otherwise (the
	// consumer's copy is the item before).
	Old *T
	// History is the base's history after a Reshard.
	History []int
	// Sequence and At are the record's sequence number and approximate
	// creation time: its position in the stream.
	Sequence string
	At       time.Time
}

// DecoderOptions configure a Decoder.
type DecoderOptions struct {
	// Decoder sets how items are unmarshalled into T, as
	// shard.Options.Decoder does for a Table. Default nil: the
	// attributevalue package's defaults.
	Decoder func(*attributevalue.DecoderOptions)
}

// Decoder reads the stream of a table written through package shard as
// changes of its logical items. It keeps no state between calls: what a
// consumer must keep per item is its State. It is safe for concurrent use.
type Decoder[T any] struct {
	l    shard.Layout
	read *shard.Table[map[string]ddbtypes.AttributeValue]
	o    DecoderOptions
}

// NewDecoder returns a Decoder for the table l describes. c reads an
// item when a record leaves a consumer unsure of it (see Apply). It
// returns an error matching ErrInvalid for a nil client, a Layout
// shard.NewTable refuses, or a strategy that is not calculated (Random).
// It sends no request.
func NewDecoder[T any](c shard.Client, l shard.Layout, optFns ...func(*DecoderOptions)) (*Decoder[T], error) {
	read, err := shard.NewTable[map[string]ddbtypes.AttributeValue](c, l)
	if err != nil {
		return nil, fmt.Errorf("stream: NewDecoder: %w", err)
	}
	if !shard.Calculated(l.Strategy) {
		return nil, fmt.Errorf("%w: stream: NewDecoder: table %s: strategy %v does not derive the suffix from the id, so an id may have several copies", ErrInvalid, l.Table, l.Strategy)
	}
	var o DecoderOptions
	for _, fn := range optFns {
		fn(&o)
	}
	return &Decoder[T]{l: l, read: read, o: o}, nil
}

// Apply returns what e does to the consumer's copy of its item, given s,
// the item's State as the consumer stored it (the zero State for an item
// it never saw), and updates s. The consumer applies the Change and
// stores s, both or neither, before it applies the item's next Event.
//
// Apply follows each copy of the item: the item is the one copy present.
// A record of a copy that shows nothing new (delivered again, or older
// than one seen) is None. While the records seen leave it unclear which
// copy holds the item (none, or two: a move seen half, or a delete and a
// re-creation seen out of order), Apply reads the item (a consistent Get
// through shard.Table) and returns what it holds now. That read is the
// only request Apply sends.
func (d *Decoder[T]) Apply(ctx context.Context, s *State, e Event) (Change[T], error) {
	ch := Change[T]{Base: e.Base, ID: e.ID, Sequence: e.Sequence, At: e.At}
	if e.History != nil {
		ch.Kind, ch.History = Reshard, e.History
		return ch, nil
	}
	if s == nil || e.Copy == "" || e.ID == "" || !digits(e.Sequence) {
		return ch, fmt.Errorf("%w: stream: Apply: nil State or an Event that Decoder.Event did not return", ErrInvalid)
	}
	next := s.clone()
	if !next.see(e, d.l.PartitionKey) {
		return ch, nil
	}
	ch, err := d.settle(ctx, &next, ch, e)
	if err == nil {
		*s = next
	}
	return ch, err
}

// settle decides e's Change on s, which holds e's copy already.
func (d *Decoder[T]) settle(ctx context.Context, s *State, ch Change[T], e Event) (Change[T], error) {
	present := s.present()
	switch {
	case len(present) == 1 && present[0].Key == e.Copy:
		if e.Old != nil {
			old, err := d.unmarshal(e.Old)
			if err != nil {
				return ch, err
			}
			ch.Old = &old
		}
		return d.held(s, ch, e.Item, present[0].Digest)
	case len(present) == 1 && sameDigest(present[0].Digest, s.Held):
		return ch, nil // the other copy is the one the consumer holds
	case len(present) == 0 && s.Held == nil:
		return ch, nil // nothing held, nothing present
	case len(present) > 1 && e.Item != nil && sameDigest(digest(e.Item, d.l.PartitionKey), s.Held):
		return ch, nil // a move's new copy, or the same content again
	}
	return d.readBack(ctx, s, ch)
}

// held makes item, whose digest is dg, the consumer's: a Put, unless the
// consumer holds it already.
func (d *Decoder[T]) held(s *State, ch Change[T], item map[string]ddbtypes.AttributeValue, dg []byte) (Change[T], error) {
	if sameDigest(dg, s.Held) {
		return ch, nil
	}
	v, err := d.unmarshal(item)
	if err != nil {
		return ch, err
	}
	s.Held = dg
	ch.Kind, ch.Item, ch.Attributes = Put, v, item
	return ch, nil
}

// readBack settles what the item is by reading it now.
func (d *Decoder[T]) readBack(ctx context.Context, s *State, ch Change[T]) (Change[T], error) {
	item, err := d.read.Get(ctx, ch.Base, ch.ID, func(o *shard.Options) { o.ConsistentRead = true })
	switch {
	case errors.Is(err, shard.ErrNotFound):
		if s.Held == nil {
			return ch, nil
		}
		s.Held = nil
		ch.Kind = Delete
		return ch, nil
	case err != nil:
		return ch, fmt.Errorf("stream: base %q id %q: read the item: %w", clip(ch.Base), clip(ch.ID), err)
	}
	item = visible(item)
	return d.held(s, ch, item, digest(item, d.l.PartitionKey))
}

func (d *Decoder[T]) unmarshal(item map[string]ddbtypes.AttributeValue) (T, error) {
	var v T
	opt := d.o.Decoder
	if opt == nil {
		opt = func(*attributevalue.DecoderOptions) {}
	}
	if err := avmap.Unmarshal(item, &v, opt); err != nil {
		return v, fmt.Errorf("stream: table %s: unmarshal into %T: %w", d.l.Table, v, err)
	}
	return v, nil
}
