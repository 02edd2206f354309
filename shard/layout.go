package shard

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynashard/dynashard/internal/record"
)

// Layout describes one sharded table: where its items live and how their
// physical partition keys are made. Every dynashard entry point is built
// from a Layout (NewTable, scatter.New, repo.New, the CLI), so no caller
// restates any part of it, and each entry point checks it against the
// layout recorded in the table before its first data request for a base
// (see [Table.Shards]). A Layout is a value, safe to copy and to share.
type Layout struct {
	// Table is the table name.
	Table string
	// PartitionKey names the partition-key attribute, of type S, whose
	// values are physical keys base<sep>suffix.
	PartitionKey string
	// SortKey names the sort-key attribute; empty means the table (or
	// index) has none.
	SortKey string
	// SortKeyType is the sort key's type: S (when empty), N or B.
	SortKeyType types.ScalarAttributeType
	// Index, when set, names a secondary index whose partition key is the
	// sharded attribute; PartitionKey, SortKey and SortKeyType are then the
	// index's, and TableKey names the table's own key attributes (partition
	// key first), which resuming a read part-way needs. Such a layout can
	// only be read (package scatter) and must be Unchecked, because the
	// record lives in the table's own key space.
	Index    string
	TableKey []string
	// Strategy picks the suffix 1..N for an item's id. Required.
	Strategy Strategy
	// Codec joins base and suffix; the zero Codec uses "." as the guide
	// does ("2014-07-09.7").
	Codec Codec
	// Unchecked trusts this Layout without a record: nothing is read or
	// written to check it. It is the path for tables written by other code
	// (for example in the guide's own layout) and for index layouts; a
	// wrong Unchecked Layout reads partial results silently. An Unchecked
	// layout has no shard-count history: it always uses Strategy's N.
	Unchecked bool
	// HistoryTTL bounds how long a process trusts its cached copy of a
	// base's shard-count history (see [Table.Shards]) before reading the
	// record again. With it comes the fence, HistoryTTL plus
	// max(HistoryTTL, 1 s). Every request made from a cached history must
	// be done within the fence of reading it, or it fails with ErrTooLate.
	// A Reshard's new count becomes the writers' a fence after it is
	// announced. Rebalance waits a fence before it sweeps.
	//
	// The base's record holds a HistoryTTL too: the one of the process
	// that wrote the record first, or of the last Reshard (see "Across
	// processes" in the package doc). A process trusts a history for the
	// shorter of its own and the record's, and waits the longer fence.
	// So processes may set different values. Zero means
	// [DefaultHistoryTTL]; negative means no caching (one consistent
	// GetItem per call and base, and a fence of 1 s). At most
	// [MaxHistoryTTL].
	HistoryTTL time.Duration
}

// DefaultHistoryTTL is the staleness bound of a cached shard-count history
// when Layout.HistoryTTL is zero: short enough that a Reshard reaches every
// process within seconds, long enough that the record costs one read per
// base and client every 10 s at most.
const DefaultHistoryTTL = 10 * time.Second

// MaxHistoryTTL bounds Layout.HistoryTTL, and the one a base's record
// holds: a day. Every Reshard waits at least twice the HistoryTTL.
const MaxHistoryTTL = record.MaxHistoryTTL

// Validate reports whether l can describe a table: names present and
// distinct, a known sort-key type, a valid strategy and codec, and the
// index fields consistent. The error matches ErrInvalidLayout (and
// ErrInvalid) and names the field.
func (l Layout) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: table %q: %s", ErrInvalidLayout, l.Table, fmt.Sprintf(format, args...))
	}
	switch {
	case l.Table == "":
		return bad("empty table name")
	case l.PartitionKey == "":
		return bad("empty partition key name")
	case l.SortKey == l.PartitionKey:
		return bad("sort key %q is the partition key", l.SortKey)
	case l.SortKey == "" && l.SortKeyType != "":
		return bad("sort key type %q without a sort key", l.SortKeyType)
	case !validSortType(l.SortKeyType):
		return bad("sort key type %q, want S, N or B", l.SortKeyType)
	case l.Index == "" && len(l.TableKey) > 0:
		return bad("TableKey is only for an index layout")
	case l.Index != "" && (len(l.TableKey) < 1 || len(l.TableKey) > 2 || slices.Contains(l.TableKey, "")):
		return bad("index %q needs TableKey: the table's 1 or 2 key attribute names", l.Index)
	case l.Index != "" && !l.Unchecked:
		return bad("index %q: an index layout is not recorded and must be Unchecked", l.Index)
	case l.HistoryTTL > MaxHistoryTTL:
		return bad("HistoryTTL %v is above MaxHistoryTTL (%v)", l.HistoryTTL, MaxHistoryTTL)
	}
	if err := checkStrategy(l.Strategy); err != nil {
		return fmt.Errorf("%w: table %q: %w", ErrInvalidLayout, l.Table, err)
	}
	if err := l.Codec.checkSep(); err != nil {
		return fmt.Errorf("%w: table %q: %w", ErrInvalidLayout, l.Table, err)
	}
	return nil
}

func validSortType(t types.ScalarAttributeType) bool {
	switch t {
	case "", types.ScalarAttributeTypeS, types.ScalarAttributeTypeN, types.ScalarAttributeTypeB:
		return true
	}
	return false
}

// sortType is SortKeyType with its default applied.
func (l Layout) sortType() types.ScalarAttributeType {
	if l.SortKeyType == "" {
		return types.ScalarAttributeTypeS
	}
	return l.SortKeyType
}

// N returns the Strategy's shard count, or 0 without a strategy: the N of
// bases written for the first time, and of every base of an Unchecked
// layout. A base already written keeps its own recorded history
// ([Table.Shards]).
func (l Layout) N() int {
	if l.Strategy == nil {
		return 0
	}
	return l.Strategy.N()
}

// shape is the layout's fixed part as the record stores it: everything but
// the table name (the record is in the table) and N (a later change of N
// is recorded as history, not as another layout).
func (l Layout) shape() string {
	var b strings.Builder
	fmt.Fprintf(&b, "pk=%s", l.PartitionKey)
	if l.SortKey != "" {
		fmt.Fprintf(&b, " sk=%s:%s", l.SortKey, l.sortType())
	}
	fmt.Fprintf(&b, " sep=%q strategy=%s", l.Codec.sep(), strategyKind(l.Strategy))
	return b.String()
}

// String describes the layout for error messages:
// `orders: pk=pk sk=sk:S sep="." strategy=hash N=16`, followed by
// ` index=<name>` for an index layout. Names are not quoted; the part
// between the table name and N is what the layout record stores (see
// [IsRecord]).
func (l Layout) String() string {
	s := fmt.Sprintf("%s: %s N=%d", l.Table, l.shape(), l.N())
	if l.Index != "" {
		s += " index=" + l.Index
	}
	return s
}

// strategyKind names a strategy without its N: the built-ins by name, a
// user's by its Go type.
func strategyKind(s Strategy) string {
	switch s.(type) {
	case hashStrategy:
		return "hash"
	case randomStrategy:
		return "random"
	case codePointStrategy:
		return "codepoint"
	case nil:
		return "none"
	}
	return fmt.Sprintf("%T", s)
}

// CreateTableInput returns the CreateTable request for a table (without
// Index) of this layout, billed on demand; set ProvisionedThroughput and
// BillingMode on the result for a provisioned table.
func (l Layout) CreateTableInput() (*dynamodb.CreateTableInput, error) {
	if err := l.Validate(); err != nil {
		return nil, err
	}
	if l.Index != "" {
		return nil, fmt.Errorf("%w: table %q: CreateTableInput describes the table, not index %q", ErrInvalidLayout, l.Table, l.Index)
	}
	in := &dynamodb.CreateTableInput{
		TableName:   aws.String(l.Table),
		BillingMode: types.BillingModePayPerRequest,
		KeySchema:   []types.KeySchemaElement{{AttributeName: aws.String(l.PartitionKey), KeyType: types.KeyTypeHash}},
		AttributeDefinitions: []types.AttributeDefinition{
			{AttributeName: aws.String(l.PartitionKey), AttributeType: types.ScalarAttributeTypeS},
		},
	}
	if l.SortKey != "" {
		in.KeySchema = append(in.KeySchema, types.KeySchemaElement{AttributeName: aws.String(l.SortKey), KeyType: types.KeyTypeRange})
		in.AttributeDefinitions = append(in.AttributeDefinitions, types.AttributeDefinition{AttributeName: aws.String(l.SortKey), AttributeType: l.sortType()})
	}
	return in, nil
}
