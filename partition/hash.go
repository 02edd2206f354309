package partition

import (
	"crypto/md5"
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynashard/dynashard/internal/ddbsize"
	"github.com/dynashard/dynashard/internal/errs"
)

// Range is the part of the 64-bit key-hash space one partition holds: the
// hashes h with Start <= h <= End. Both ends are inclusive, so that one
// Range can hold the whole space, 0 to math.MaxUint64. The zero Range holds
// the single hash 0.
type Range struct {
	Start, End uint64
}

// Contains reports whether h falls in r.
func (r Range) Contains(h uint64) bool { return r.Start <= h && h <= r.End }

// Fraction is the share of the whole key-hash space r holds, in (0, 1].
func (r Range) Fraction() float64 {
	return (float64(r.End-r.Start) + 1) / (math.MaxUint64 + 1.0)
}

// halves returns r's lower and upper halves, the lower one taking the
// middle hash when r holds an odd number; ok is false for a range of one
// hash, which cannot split.
func (r Range) halves() (lo, hi Range, ok bool) {
	if r.Start == r.End {
		return r, r, false
	}
	mid := r.Start + (r.End-r.Start)/2
	return Range{r.Start, mid}, Range{mid + 1, r.End}, true
}

// evenRanges splits the space into n ranges of (nearly) equal width: range i
// starts at floor(i·2⁶⁴/n). n must be at least 1.
func evenRanges(n int) []Range {
	r := make([]Range, n)
	for i := 1; i < n; i++ {
		r[i].Start, _ = bits.Div64(uint64(i), 0, uint64(n)) // i·2⁶⁴ / n; i < n
		r[i-1].End = r[i].Start - 1
	}
	r[n-1].End = math.MaxUint64
	return r
}

// halveAll splits every range in two, partition i's halves at 2i and 2i+1.
func halveAll(rs []Range) ([]Range, error) {
	out := make([]Range, 0, 2*len(rs))
	for i, r := range rs {
		lo, hi, ok := r.halves()
		if !ok {
			return nil, fmt.Errorf("%w: partition %d holds the single hash %d", ErrWorkload, i, r.Start)
		}
		out = append(out, lo, hi)
	}
	return out, nil
}

// ranges returns l's ranges, or an even split for a Layout built without
// one range per partition.
func (l Layout) ranges() []Range {
	if len(l.Ranges) == len(l.Partitions) && len(l.Ranges) > 0 {
		return l.Ranges
	}
	return evenRanges(max(1, len(l.Partitions)))
}

// Find returns the index of the partition whose range holds h, or -1 for a
// Layout without partitions (or whose hand-built Ranges leave h out). It
// scans the ranges, so it costs O(partitions).
func (l Layout) Find(h uint64) int {
	if len(l.Partitions) == 0 {
		return -1
	}
	for i, r := range l.ranges() {
		if r.Contains(h) {
			return i
		}
	}
	return -1
}

// ErrKey is returned (wrapped) by [KeyHash] for a value that cannot be a
// partition key: not S, N or B, or an N DynamoDB would refuse. It is in the
// invalid-input family (errors.Is(err, dynashard.ErrInvalid)).
var ErrKey = errs.New("partition: invalid partition-key value", errs.Invalid)

// KeyHash returns where a partition-key value falls in the key-hash space:
// the first 8 bytes, big-endian, of the MD5 digest of the value's canonical
// bytes. Those are an S value's UTF-8 bytes, a B value's raw bytes, and an N
// value's canonical decimal form as ddbsize.Number.String prints it
// ("1.25E+2" for 125, 125.0 and 1.25e2 alike, as DynamoDB treats them as
// one key). The type is not hashed: a table's partition key has one type.
//
// It is dynashard's own fixed hash, not DynamoDB's (which is not published):
// the proxy, the planner and tests agree on which keys share a model
// partition; a real table spreads keys just as evenly but differently.
func KeyHash(v types.AttributeValue) (uint64, error) {
	var b []byte
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		b = []byte(v.Value)
	case *types.AttributeValueMemberB:
		b = v.Value
	case *types.AttributeValueMemberN:
		n, err := ddbsize.ParseNumber(v.Value)
		if err != nil {
			return 0, fmt.Errorf("%w: %w", ErrKey, err)
		}
		b = []byte(n.String())
	default:
		return 0, fmt.Errorf("%w: %T, want S, N or B", ErrKey, v)
	}
	sum := md5.Sum(b)
	return binary.BigEndian.Uint64(sum[:8]), nil
}
