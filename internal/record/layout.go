package record

import (
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Layout is what the record code needs of a shard.Layout. Make it with
// Describe: the zero Layout describes no table, and every request
// through it fails with an error matching errs.Invalid. A Layout is a
// value, safe for concurrent use.
type Layout struct {
	Table, PartitionKey, SortKey string
	// SortType is the sort key's type with its default, S, applied.
	SortType types.ScalarAttributeType
	// Shape is what the record's dynashard:layout holds after "v1 ": the
	// layout without its table name and N. A record of another shape is
	// a layout mismatch.
	Shape string
	// Want is the layout as shard.Layout.String writes it, for errors.
	Want string
	// N is the Strategy's shard count: a new base's history is [N].
	N int
	// TTL is the Layout's HistoryTTL with its default applied; 0 caches
	// nothing.
	TTL time.Duration
	// Unchecked layouts have no record: their history is [N], without a
	// request.
	Unchecked bool
	// ID keys the layout's entries in the process's cache.
	ID ID

	checkBase func(base string, suffix int) error
	tooLong   func(base string) error
	mismatch  func(base, want, stored string, keys []string) error
}

// ID identifies a layout's entries in the cache, built without
// allocating: every Put, Update, Get and Delete looks the cache up. Two
// layouts that store the same record share them. A user's Strategy
// counts by its dynamic type, since two types of one name write the same
// shape.
type ID struct {
	Table, Shape string
	Strategy     reflect.Type
}

// Public is what Describe takes: a shard.Layout's public values. Package
// shard and package scatter both fill it from a shard.Layout, so that
// the two describe a layout the same way.
type Public struct {
	Table, PartitionKey, SortKey string
	SortKeyType                  types.ScalarAttributeType
	Index                        string
	// N is Layout.N(). String is Layout.String(), which holds the
	// record's shape between "<Table>: " and " N=<N>".
	N      int
	String string
	// HistoryTTL is the Layout's; DefaultHistoryTTL is what zero means.
	// A negative HistoryTTL caches nothing.
	HistoryTTL, DefaultHistoryTTL time.Duration
	Unchecked                     bool
	// Strategy is the dynamic type of the Layout's Strategy.
	Strategy reflect.Type
	// CheckBase is the Layout's Codec.Check: a record's base must make a
	// valid physical key with suffix 1.
	CheckBase func(base string, suffix int) error
	// Mismatch makes the *shard.LayoutError for base: the layout want
	// differs from the record stored, or from the table's key schema
	// (then keys names each differing key attribute).
	Mismatch func(base, want, stored string, keys []string) error
	// TooLong, if set, makes the error for a base too long for its
	// record's key. Without it that error matches errs.KeyTooLong and
	// errs.InvalidKey.
	TooLong func(base string) error
}

// Describe returns the Layout that p describes. It is the one conversion
// from a shard.Layout: a Table's record checks and a Scatter's agree
// because both come through it.
func Describe(p Public) Layout {
	d := Layout{
		Table: p.Table, PartitionKey: p.PartitionKey, SortKey: p.SortKey, SortType: p.SortKeyType,
		Shape: shapeOf(p), Want: p.String, N: p.N, TTL: p.HistoryTTL, Unchecked: p.Unchecked,
		checkBase: p.CheckBase, tooLong: p.TooLong, mismatch: p.Mismatch,
	}
	if d.SortType == "" {
		d.SortType = types.ScalarAttributeTypeS
	}
	switch {
	case p.HistoryTTL == 0:
		d.TTL = p.DefaultHistoryTTL
	case p.HistoryTTL < 0:
		d.TTL = 0
	}
	d.ID = ID{Table: p.Table, Shape: d.Shape, Strategy: p.Strategy}
	return d
}

// shapeOf cuts the shape out of p.String: "<Table>: <shape> N=<N>",
// then " index=<Index>" for an index layout. A String of another form is
// taken whole, so that it matches no record written through this form.
func shapeOf(p Public) string {
	s, ok := strings.CutPrefix(p.String, p.Table+": ")
	if !ok {
		return p.String
	}
	if p.Index != "" {
		if s, ok = strings.CutSuffix(s, " index="+p.Index); !ok {
			return p.String
		}
	}
	if s, ok = strings.CutSuffix(s, " N="+strconv.Itoa(p.N)); !ok {
		return p.String
	}
	return s
}
