package scatter

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynashard/dynashard/shard"
)

// RecordAlwaysDue makes every cached layout record count as past half its
// HistoryTTL until t ends, so that every checked call reads it again
// beside its requests: what a call does some time after the last read,
// without waiting for it.
func RecordAlwaysDue(t testing.TB) {
	recordAlwaysDue.Store(true)
	t.Cleanup(func() { recordAlwaysDue.Store(false) })
}

// ForgeCursor returns the unsigned cursor a client could forge for a read
// of base under l with the options optFns set: its position is the item of
// shard suffix whose key attributes (those of a resume key besides the
// partition key, in name order) are key.
func ForgeCursor(l shard.Layout, base string, suffix int, key []types.AttributeValue, optFns ...func(*Options)) (Cursor, error) {
	if err := l.Validate(); err != nil {
		return "", err
	}
	p, err := newPlan(l, base, Options{}.apply(optFns))
	if err != nil {
		return "", err
	}
	ord, _ := ordinal(p.suffixes, uint64(suffix))
	return encodeCursor(p, resume{def: &position{ord: ord, key: key}}, nil)
}

// GrowPage and PageCap export the page sizes All asks for (see growPage).
func GrowPage(sent, n int) int32 { return growPage(sent, n) }
func PageCap(n int) int          { return pageCap(n) }
