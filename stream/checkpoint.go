package stream

import (
	"encoding/json"
	"fmt"
	"io"
	"iter"
	"maps"
	"slices"
	"strings"
)

// Checkpoint is how far a Poller has read one stream. For each shard it
// holds the sequence number of the last record processed, and whether the
// shard is finished: closed and read to its end. Store its text form
// (String or MarshalText) and give it back through PollerOptions.Checkpoint
// to resume after the last record processed.
//
// The zero Checkpoint means nothing was read: every shard from its oldest
// record. Its text form is the empty string. A Checkpoint is immutable and
// safe for concurrent use.
type Checkpoint struct {
	stream string
	shards map[string]ShardPosition // never changed once in a Checkpoint
}

// ShardPosition is one shard's entry in a Checkpoint.
type ShardPosition struct {
	// After is the sequence number of the last record processed; empty if
	// none was.
	After string `json:"after,omitempty"`
	// Finished reports that the shard is closed and every record of it was
	// processed.
	Finished bool `json:"finished,omitempty"`
}

// checkpointVersion is the version of the text form.
const checkpointVersion = 1

// checkpointJSON is the text form: JSON, shards in ID order.
type checkpointJSON struct {
	V      int                      `json:"v"`
	Stream string                   `json:"stream"`
	Shards map[string]ShardPosition `json:"shards,omitempty"`
}

// StreamARN returns the stream the Checkpoint belongs to; empty for the
// zero Checkpoint.
func (c Checkpoint) StreamARN() string { return c.stream }

// Shards yields each shard's position, in shard ID order. Shards that
// nothing was read from are absent.
func (c Checkpoint) Shards() iter.Seq2[string, ShardPosition] {
	return func(yield func(string, ShardPosition) bool) {
		for _, id := range slices.Sorted(maps.Keys(c.shards)) {
			if !yield(id, c.shards[id]) {
				return
			}
		}
	}
}

// String returns the text form, as MarshalText does.
func (c Checkpoint) String() string {
	b, _ := c.MarshalText()
	return string(b)
}

// MarshalText returns the text form: "" for the zero Checkpoint, else a
// line of JSON. ParseCheckpoint reads it back. It never fails.
func (c Checkpoint) MarshalText() ([]byte, error) {
	if c.stream == "" {
		return []byte{}, nil
	}
	return json.Marshal(checkpointJSON{V: checkpointVersion, Stream: c.stream, Shards: c.shards})
}

// UnmarshalText sets c from its text form, as ParseCheckpoint does.
func (c *Checkpoint) UnmarshalText(b []byte) error {
	cp, err := ParseCheckpoint(string(b))
	if err != nil {
		return err
	}
	*c = cp
	return nil
}

// ParseCheckpoint reads the text form of a Checkpoint. The empty string is
// the zero Checkpoint. Anything else that String did not return fails with
// an error matching ErrInvalidCheckpoint and ErrInvalid.
func ParseCheckpoint(s string) (Checkpoint, error) {
	if s == "" {
		return Checkpoint{}, nil
	}
	dec := json.NewDecoder(strings.NewReader(s))
	dec.DisallowUnknownFields()
	var j checkpointJSON
	if err := dec.Decode(&j); err != nil {
		return Checkpoint{}, badCheckpoint(s, err.Error())
	}
	if _, err := dec.Token(); err != io.EOF {
		return Checkpoint{}, badCheckpoint(s, "data after the checkpoint")
	}
	if j.V != checkpointVersion {
		return Checkpoint{}, badCheckpoint(s, fmt.Sprintf("version %d, want %d", j.V, checkpointVersion))
	}
	if err := checkARN(j.Stream); err != nil {
		return Checkpoint{}, badCheckpoint(s, err.Error())
	}
	for id, pos := range j.Shards {
		if err := checkPosition(id, pos); err != nil {
			return Checkpoint{}, badCheckpoint(s, err.Error())
		}
	}
	if len(j.Shards) == 0 {
		j.Shards = nil
	}
	return Checkpoint{stream: j.Stream, shards: j.Shards}, nil
}

// checkPosition checks one shard's entry against the API's bounds: a shard
// ID of 28 to 65 bytes, a sequence number of 21 to 40 digits.
func checkPosition(id string, pos ShardPosition) error {
	if len(id) < 28 || len(id) > 65 || strings.ContainsFunc(id, func(r rune) bool { return r <= ' ' || r > '~' }) {
		return fmt.Errorf("shard ID %.80q: want 28 to 65 printable ASCII bytes", id)
	}
	if pos.After == "" && !pos.Finished {
		return fmt.Errorf("shard %s: neither a sequence number nor finished", id)
	}
	if pos.After != "" && !isSequenceNumber(pos.After) {
		return fmt.Errorf("shard %s: sequence number %.80q: want 21 to 40 digits", id, pos.After)
	}
	return nil
}

func isSequenceNumber(s string) bool {
	return len(s) >= 21 && len(s) <= 40 && strings.Trim(s, "0123456789") == ""
}

// seqAfter reports whether sequence number a comes after b; both are
// decimal, possibly of different lengths, "" before any.
func seqAfter(a, b string) bool {
	a, b = strings.TrimLeft(a, "0"), strings.TrimLeft(b, "0")
	if len(a) != len(b) {
		return len(a) > len(b)
	}
	return a > b
}

func badCheckpoint(s, why string) error {
	if len(s) > 64 {
		s = s[:64] + "…"
	}
	return fmt.Errorf("stream: checkpoint %q: %s: %w", s, why, ErrInvalidCheckpoint)
}

// position returns shard id's entry; the zero ShardPosition if it has none.
func (c Checkpoint) position(id string) ShardPosition { return c.shards[id] }

// with returns a copy of c with shard id at pos, for stream arn.
func (c Checkpoint) with(arn, id string, pos ShardPosition) Checkpoint {
	m := make(map[string]ShardPosition, len(c.shards)+1)
	maps.Copy(m, c.shards)
	m[id] = pos
	return Checkpoint{stream: arn, shards: m}
}

// without returns a copy of c without the shards drop names.
func (c Checkpoint) without(drop []string) Checkpoint {
	if len(drop) == 0 {
		return c
	}
	m := maps.Clone(c.shards)
	for _, id := range drop {
		delete(m, id)
	}
	if len(m) == 0 {
		m = nil
	}
	return Checkpoint{stream: c.stream, shards: m}
}
