// Package sortid makes the ids of dynashard's example services: ids that
// carry their day, so a service can compute an item's base (its logical
// partition key) from the id alone, and that sort by creation time, so a
// day listed in id order is listed in time order.
package sortid

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"time"
)

// Len is the length of every id.
const Len = len("20261122-153012482917-9f3ac2e1")

// ErrInvalidID is matched by every error about a malformed id.
var ErrInvalidID = errors.New("sortid: malformed id")

// New returns an id for an event at t: its UTC day, time of day to the
// microsecond and 32 random bits, "20261122-153012482917-9f3ac2e1". Ids
// made in the same microsecond differ with probability 1 - 2^-32 per pair
// and then sort by chance.
func New(t time.Time) string {
	t = t.UTC()
	var r [4]byte
	rand.Read(r[:]) // never fails (crypto/rand)
	return fmt.Sprintf("%s-%s%06d-%08x", t.Format("20060102"), t.Format("150405"), t.Nanosecond()/1000, binary.BigEndian.Uint32(r[:]))
}

// Day returns the day an id was made, "2026-11-22", or an error matching
// ErrInvalidID naming the id.
func Day(id string) (string, error) {
	if len(id) != Len || id[8] != '-' || id[21] != '-' {
		return "", fmt.Errorf("%w: %q: want YYYYMMDD-HHMMSSuuuuuu-xxxxxxxx", ErrInvalidID, id)
	}
	for i, c := range []byte(id) {
		switch {
		case i == 8 || i == 21:
		case i < 21 && c >= '0' && c <= '9':
		case i > 21 && (c >= '0' && c <= '9' || c >= 'a' && c <= 'f'):
		default:
			return "", fmt.Errorf("%w: %q: unexpected %q at %d", ErrInvalidID, id, c, i)
		}
	}
	d, err := time.Parse("20060102", id[:8])
	if err != nil {
		return "", fmt.Errorf("%w: %q: no such day", ErrInvalidID, id)
	}
	if _, err := time.Parse("150405", id[9:15]); err != nil {
		return "", fmt.Errorf("%w: %q: no such time", ErrInvalidID, id)
	}
	return d.Format(DayLayout), nil
}

// DayLayout is the layout of a day as the services show it and use it as
// a base: "2006-01-02".
const DayLayout = time.DateOnly
