package record

import (
	"errors"
	"maps"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynashard/dynashard/internal/errs"
	"github.com/dynashard/dynashard/internal/skew"
)

// TestParseRecordMalformed: every way a record can break its format is an
// error of one family, ErrMalformedRecord (neither ErrInvalid nor a layout
// mismatch), whose message stays short whatever the record holds.
func TestParseRecordMalformed(t *testing.T) {
	S := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	N := func(v string) types.AttributeValue { return &types.AttributeValueMemberN{Value: v} }
	L := func(v ...types.AttributeValue) types.AttributeValue { return &types.AttributeValueMemberL{Value: v} }
	huge := strings.Repeat("x", 300_000)
	good := map[string]types.AttributeValue{
		attrLayout: S(recordVersion + `pk=pk sk=sk:S sep="." strategy=hash`),
		attrShards: L(N("4"), N("8")),
		attrRev:    N("3"),
		attrTTL:    N("10000"),
		attrWait:   N("20000"),
	}
	if rec, err := Parse(good); err != nil || !rec.Recorded || rec.TTL != 10*time.Second || rec.Wait != 20*time.Second {
		t.Fatalf("a well-formed record: %+v, %v", rec, err)
	}
	legacy := maps.Clone(good)
	delete(legacy, attrTTL)
	delete(legacy, attrWait)
	if rec, err := Parse(legacy); err != nil || rec.Recorded {
		t.Fatalf("a record without HistoryTTL: %+v, %v, want it read as not recorded", rec, err)
	}
	counts := func(n int) types.AttributeValue {
		l := &types.AttributeValueMemberL{}
		for i := range n {
			l.Value = append(l.Value, N(strconv.Itoa(i+1)))
		}
		return l
	}
	for name, change := range map[string]map[string]types.AttributeValue{
		"no layout":              {attrLayout: nil},
		"layout not S":           {attrLayout: N("1")},
		"layout of another form": {attrLayout: S("v2 " + huge)},
		"layout without form":    {attrLayout: S(huge)},
		"no history":             {attrShards: nil},
		"history not a list":     {attrShards: S(huge)},
		"empty history":          {attrShards: L()},
		"history too long":       {attrShards: counts(MaxHistory + 1)},
		"count not a number":     {attrShards: L(S(huge))},
		"count zero":             {attrShards: L(N("0"))},
		"count above MaxN":       {attrShards: L(N(strconv.Itoa(skew.MaxN + 1)))},
		"count of 38 digits":     {attrShards: L(N(strings.Repeat("9", 38)))},
		"count twice":            {attrShards: L(N("4"), N("4"))},
		"revision not a number":  {attrRev: S(huge)},
		"negative revision":      {attrRev: N("-1")},
		"revision at its bound":  {attrRev: N(strconv.Itoa(maxRev))},
		"pending not a boolean":  {attrPending: S(huge)},
		"pending with one count": {attrShards: L(N("4")), attrPending: &types.AttributeValueMemberBOOL{Value: true}},
		"ttl not a number":       {attrTTL: S(huge)},
		"ttl negative":           {attrTTL: N("-1")},
		"ttl above its bound":    {attrTTL: N(strconv.FormatInt(MaxHistoryTTL.Milliseconds()+1, 10))},
		"ttl of 38 digits":       {attrTTL: N(strings.Repeat("9", 38))},
		"ttl without fence":      {attrWait: nil},
		"fence without ttl":      {attrTTL: nil},
		"fence shorter than ttl": {attrWait: N("19999")},
		"fence not a number":     {attrWait: L()},
	} {
		item := maps.Clone(good)
		for k, v := range change {
			if v == nil {
				delete(item, k)
			} else {
				item[k] = v
			}
		}
		_, err := Parse(item)
		switch {
		case !errors.Is(err, errs.MalformedRecord):
			t.Errorf("%s: %v, want ErrMalformedRecord", name, err)
		case errors.Is(err, errs.Invalid) || errors.Is(err, errs.LayoutMismatch):
			t.Errorf("%s: %v matches ErrInvalid or ErrLayoutMismatch", name, err)
		case len(err.Error()) > 200:
			t.Errorf("%s: a message of %d bytes, want at most 200", name, len(err.Error()))
		}
	}
}
