package shard

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/dynashard/dynashard/internal/record"
)

// everyOther is a user's Strategy, told apart from the built-ins by its
// Go type.
type everyOther struct{ n int }

func (s everyOther) N() int             { return s.n }
func (s everyOther) Pick(id string) int { return len(id)%s.n + 1 }

// publicOf fills record.Public from l's public fields and methods alone,
// as package scatter does (scatter.describe).
func publicOf(l Layout) record.Public {
	return record.Public{
		Table: l.Table, PartitionKey: l.PartitionKey, SortKey: l.SortKey, SortKeyType: l.SortKeyType, Index: l.Index,
		N: l.N(), String: l.String(), HistoryTTL: l.HistoryTTL, DefaultHistoryTTL: DefaultHistoryTTL,
		Unchecked: l.Unchecked, Strategy: reflect.TypeOf(l.Strategy), CheckBase: l.Codec.Check,
		Mismatch: func(base, want, stored string, keys []string) error {
			return &LayoutError{Base: base, Want: want, Stored: stored, Keys: keys}
		},
	}
}

// TestRecordDescription: a Table's description of its Layout for the
// record (Layout.rec) is what record.Describe gives for the Layout's
// public values, as package scatter passes them: the same shape, key,
// HistoryTTL and cache entry, for every sort key type, separator,
// strategy, HistoryTTL and Unchecked. Only a base too long for its
// record differs: a *KeyError through shard, an error matching
// ErrKeyTooLong through the public values.
func TestRecordDescription(t *testing.T) {
	base := Layout{Table: "orders", PartitionKey: "pk", SortKey: "sk", Strategy: Hash(16)}
	var layouts []Layout
	for _, sk := range []struct {
		name string
		typ  types.ScalarAttributeType
	}{{"sk", ""}, {"sk", types.ScalarAttributeTypeS}, {"n", types.ScalarAttributeTypeN}, {"b", types.ScalarAttributeTypeB}, {"", ""}} {
		for _, sep := range []string{"", "#", " N= ", "|é"} {
			for _, s := range []Strategy{Hash(16), Random(4), CodePointProduct(200), everyOther{3}, nil} {
				for _, ttl := range []time.Duration{0, -1, 3 * time.Second, MaxHistoryTTL} {
					for _, unchecked := range []bool{false, true} {
						l := base
						l.SortKey, l.SortKeyType, l.Codec.Sep, l.Strategy, l.HistoryTTL, l.Unchecked = sk.name, sk.typ, sep, s, ttl, unchecked
						layouts = append(layouts, l)
					}
				}
			}
		}
	}
	index := base
	index.Index, index.TableKey, index.Unchecked = "by N=16", []string{"pk", "sk"}, true
	odd := base
	odd.Table, odd.PartitionKey = "a: b", "x N=16"
	layouts = append(layouts, index, odd)

	for _, l := range layouts {
		got, want := l.rec(), record.Describe(publicOf(l))
		if got.ID != want.ID || got.ID.Strategy != reflect.TypeOf(l.Strategy) {
			t.Errorf("%s: ID %v, public %v", l, got.ID, want.ID)
		}
		if got.Shape != l.shape() || got.Want != l.String() {
			t.Errorf("%s: shape %q, want %q; Want %q", l, got.Shape, l.shape(), got.Want)
		}
		ttl := l.HistoryTTL
		switch {
		case ttl == 0:
			ttl = DefaultHistoryTTL
		case ttl < 0:
			ttl = 0
		}
		if got.TTL != ttl || got.N != l.N() || got.SortType != l.sortType() {
			t.Errorf("%s: TTL %v, N %d, sort type %q; want %v, %d, %q", l, got.TTL, got.N, got.SortType, ttl, l.N(), l.sortType())
		}
		if diff := cmp.Diff(want, got, cmpopts.IgnoreUnexported(record.Layout{}), cmpopts.IgnoreFields(record.Layout{}, "ID")); diff != "" {
			t.Errorf("%s: description differs from the public one (-public +shard):\n%s", l, diff)
		}
		for _, b := range []string{"2014-07-09", "", "\xff", strings.Repeat("b", MaxKeyBytes-len("#dynashard"))} {
			gk, gerr := got.Key(b)
			wk, werr := want.Key(b)
			var gke, wke *KeyError
			if !cmp.Equal(gk, wk, cmpopts.IgnoreUnexported(types.AttributeValueMemberS{}, types.AttributeValueMemberN{}, types.AttributeValueMemberB{})) ||
				(gerr == nil) != (werr == nil) || gerr != nil && (!errors.As(gerr, &gke) || !errors.As(werr, &wke) || *gke != *wke) {
				t.Errorf("%s: Key(%.10q): %v, %v; public %v, %v", l, b, gk, gerr, wk, werr)
			}
		}
		long := strings.Repeat("b", MaxKeyBytes-len("#dynashard")+1)
		_, gerr := got.Key(long)
		_, werr := want.Key(long)
		var ke *KeyError
		if !errors.As(gerr, &ke) || !errors.Is(gerr, ErrKeyTooLong) {
			t.Errorf("%s: a base too long for its record: %v, want a *KeyError matching ErrKeyTooLong", l, gerr)
		}
		if !errors.Is(werr, ErrKeyTooLong) || !errors.Is(werr, ErrInvalidKey) || !errors.Is(werr, ErrInvalid) {
			t.Errorf("%s: public: a base too long for its record: %v, want ErrKeyTooLong, ErrInvalidKey and ErrInvalid", l, werr)
		}
		other := record.Record{Shape: "pk=other", Shards: []int{4}}
		_, gerr = got.Accept("test-db", "day", other)
		_, werr = want.Accept("test-db", "day", other)
		var gle, wle *LayoutError
		if !errors.As(gerr, &gle) || !errors.As(werr, &wle) || !cmp.Equal(gle, wle) || gle.Want != l.String() {
			t.Errorf("%s: a record of another shape: %v; public %v", l, gerr, werr)
		}
	}
}
