package stream

import (
	"bytes"
	"crypto/sha256"
	"slices"
	"strings"
	"time"

	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynashard/dynashard/internal/itemhash"
)

// State is what a consumer keeps per logical item, beside its own copy of
// the item, for Decoder.Apply: the last record seen of each copy of the
// item, and the digest of what the consumer holds. It is small (as JSON
// about 180 bytes for an item of one copy, 130 more per other copy) and
// its fields are exported so that it can be stored with the consumer's
// item, as JSON or as DynamoDB attributes (attributevalue.MarshalMap).
//
// A copy seen removed stays in Copies, so that its records delivered
// again are known: Expire drops those older than Streams keeps records.
type State struct {
	Copies []Copy `json:"copies,omitempty" dynamodbav:"copies,omitempty"`
	// Held is the digest of the item the consumer holds; nil: none.
	Held []byte `json:"held,omitempty" dynamodbav:"held,omitempty"`
}

// Copy is the last record seen of one copy of an item.
type Copy struct {
	Key      string    `json:"key" dynamodbav:"key"`            // its partition key
	Sequence string    `json:"seq" dynamodbav:"seq"`            // the record's sequence number
	At       time.Time `json:"at" dynamodbav:"at"`              // the record's approximate creation time
	Present  bool      `json:"present" dynamodbav:"present"`    // false after a REMOVE
	Digest   []byte    `json:"digest,omitempty" dynamodbav:"d"` // its content's digest, if present
}

// Expire drops the removed copies last seen before t. Streams keeps
// records for 24 hours, so a copy removed earlier than that can show no
// more records: Expire(time.Now().Add(-24 * time.Hour)).
func (s *State) Expire(t time.Time) {
	s.Copies = slices.DeleteFunc(s.Copies, func(c Copy) bool { return !c.Present && c.At.Before(t) })
}

// see records e's copy, and reports whether e is news: false for a record
// of a copy whose later (or same) record was seen.
func (s *State) see(e Event, pk string) bool {
	i := slices.IndexFunc(s.Copies, func(c Copy) bool { return c.Key == e.Copy })
	if i >= 0 && !seqAfter(e.Sequence, s.Copies[i].Sequence) {
		return false
	}
	c := Copy{Key: e.Copy, Sequence: e.Sequence, At: e.At, Present: e.Item != nil}
	if c.Present {
		c.Digest = digest(e.Item, pk)
	}
	if i < 0 {
		s.Copies = append(s.Copies, c)
	} else {
		s.Copies[i] = c
	}
	return true
}

func (s *State) present() []Copy {
	var p []Copy
	for _, c := range s.Copies {
		if c.Present {
			p = append(p, c)
		}
	}
	return p
}

func (s *State) clone() State {
	return State{Copies: slices.Clone(s.Copies), Held: s.Held}
}

// digest identifies a copy's content: its attributes but the partition
// key (a move changes it) and the hidden ones (a move drops them), in
// itemhash's canonical form, SHA-256 cut to 16 bytes.
func digest(item map[string]ddbtypes.AttributeValue, pk string) []byte {
	h := sha256.New()
	itemhash.Write(h, item, func(name string) bool { return name == pk || strings.HasPrefix(name, hiddenPrefix) })
	return h.Sum(nil)[:16]
}

func sameDigest(a, b []byte) bool { return a != nil && bytes.Equal(a, b) }
