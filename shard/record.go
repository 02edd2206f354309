package shard

import (
	"fmt"
	"reflect"
	"strings"

	"github.com/dynashard/dynashard/internal/record"
)

// The record of a base's layout is an ordinary item of the table, under
// the partition key base + "#dynashard". Package record
// (internal/record) reads, writes and caches it; its key, attributes and
// the rules for writing it are a stable format, documented at [IsRecord]
// (doc_record.go) for programs in other languages that share a base.
// This file describes a Layout to that package, with the two errors only
// this package makes: a *LayoutError and a base's *KeyError.

// LayoutError reports a layout that disagrees with the one recorded for a
// base, or with the table's own key schema. It matches ErrLayoutMismatch.
// Stored, and so the message, quotes at most 256 bytes of each value
// read from the table (then "…" and the value's full length), so that a
// record written by other code cannot make a message of any size; the
// base is quoted up to 64 bytes.
type LayoutError struct {
	Base   string
	Want   string // the caller's layout (Layout.String)
	Stored string // the recorded one, in the same form; or the table's key schema (Keys set)
	// Keys is set when the Layout's key attributes are not the table's
	// (DynamoDB refused the record read, and DescribeTable told why: a
	// client without a DescribeTable method gets the SDK's
	// ValidationException instead): one entry per differing key attribute, in Want's
	// notation, such as "sk=tag:S, the table's sk=sk:S" or "pk=gpk, the
	// table's pk=pk". Stored is then the table's key schema, such as
	// "orders: pk=pk sk=sk:S".
	Keys []string
}

func (e *LayoutError) Error() string {
	if len(e.Keys) > 0 {
		return fmt.Sprintf("shard: layout mismatch for base %q: this code uses %s; the table's key schema is %s (%s)", clip(e.Base), e.Want, e.Stored, strings.Join(e.Keys, "; "))
	}
	return fmt.Sprintf("shard: layout mismatch for base %q: this code uses %s; the table records %s", clip(e.Base), e.Want, e.Stored)
}

func (e *LayoutError) Is(target error) bool { return target == ErrLayoutMismatch }

// rec describes l to package record from l's public values, as package
// scatter describes its Layout, through the one conversion
// record.Describe: a Table and a Scatter of one layout then check and
// cache each base's record alike. A Table keeps its description from
// NewTable, so that a write builds no string to find its cache entry.
// Only this package adds the *KeyError of a base too long for its
// record.
func (l Layout) rec() record.Layout {
	p := l.public()
	p.TooLong = recordTooLong
	return record.Describe(p)
}

// public is l's values as record.Describe takes them, as package scatter
// fills them from the same public fields and methods.
func (l Layout) public() record.Public {
	return record.Public{
		Table: l.Table, PartitionKey: l.PartitionKey, SortKey: l.SortKey, SortKeyType: l.SortKeyType, Index: l.Index,
		N: l.N(), String: l.String(), HistoryTTL: l.HistoryTTL, DefaultHistoryTTL: DefaultHistoryTTL,
		Unchecked: l.Unchecked, Strategy: reflect.TypeOf(l.Strategy), CheckBase: l.Codec.Check, Mismatch: layoutMismatch,
	}
}

// layoutMismatch is the *LayoutError of base: the layout want differs
// from the record stored, or from the table's key schema (keys set).
func layoutMismatch(base, want, stored string, keys []string) error {
	return &LayoutError{Base: base, Want: want, Stored: stored, Keys: keys}
}

// recordTooLong is the *KeyError of a base whose record's partition key,
// base + "#dynashard", would exceed MaxKeyBytes.
func recordTooLong(base string) error { return &KeyError{Key: base, Reason: reasonNoRecord} }
