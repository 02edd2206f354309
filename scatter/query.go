package scatter

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynashard/dynashard/shard"
)

// Query describes one logical query: every item under the physical keys
// Base<Sep>1 … Base<Sep>N of PartitionKey, optionally narrowed by a
// sort-key condition and a filter, read as if it were one Query. The zero
// value is not a valid query: Table, PartitionKey, Base and one of
// Strategy or Suffixes are required.
type Query struct {
	// Table is the table name.
	Table string
	// Index names a global or local secondary index to query; empty
	// queries the table.
	Index string
	// PartitionKey is the name of the sharded partition-key attribute (the
	// index's partition key for an index query). Its values are strings
	// Base<Sep>suffix.
	PartitionKey string
	// SortKey is the name of the sort-key attribute (the index's for an
	// index query), which orders the merge. Empty means the table or index
	// has no sort key: items then come in suffix order.
	SortKey string
	// TableKey names the table's own key attributes (partition key, then
	// sort key if any). Required for an index query, because resuming a
	// shard part-way needs the table key as well as the index key; ignored
	// otherwise.
	TableKey []string

	// Base is the logical partition-key value, e.g. "2014-07-09".
	Base string
	// Strategy gives the shard count: suffixes 1..Strategy.N(). Set exactly
	// one of Strategy and Suffixes.
	Strategy shard.Strategy
	// Suffixes lists the suffixes to read, each in 1..shard.MaxN, when
	// only some shards are wanted. Order does not matter.
	Suffixes []int
	// Codec formats the physical keys; the zero Codec uses "." as in the
	// guide ("2014-07-09.7").
	Codec shard.Codec

	// KeyCondition is a condition on the sort key alone, such as
	// "#sk BETWEEN :lo AND :hi"; the library adds the partition-key part.
	// Empty means every item of each shard.
	KeyCondition string
	// Filter is a filter expression, applied by DynamoDB after reading.
	Filter string
	// Projection is a projection expression. Empty returns all attributes.
	Projection string
	// Names and Values are the placeholders the expressions use. Names
	// starting with "#dynashard_" and values starting with ":dynashard_"
	// are reserved for the library and rejected.
	Names  map[string]string
	Values map[string]types.AttributeValue

	// ConsistentRead asks for strongly consistent reads (not on a global
	// secondary index).
	ConsistentRead bool
	// Descending returns items in descending sort-key order.
	Descending bool
	// Unordered streams items as shards deliver them, in no particular
	// order across shards (each shard's own items stay in order). It saves
	// the merge's waiting for the slowest shard.
	Unordered bool
	// PageSize is the Limit of each Query request: the items DynamoDB
	// reads per page, before filtering. Zero means DynamoDB's 1 MB page.
	// A smaller page bounds memory (N × two pages at most) and, for Page,
	// over-reading.
	PageSize int32
}

// WithExpression returns a copy of q that takes its key condition, filter,
// projection, names and values from e, as built by the SDK's expression
// package. The key condition, if any, must be on the sort key only. It
// replaces q's Names and Values.
func (q Query) WithExpression(e expression.Expression) Query {
	if s := e.KeyCondition(); s != nil {
		q.KeyCondition = *s
	}
	if s := e.Filter(); s != nil {
		q.Filter = *s
	}
	if s := e.Projection(); s != nil {
		q.Projection = *s
	}
	q.Names = e.Names()
	q.Values = e.Values()
	return q
}

// The library's own placeholders. The caller may not use the prefixes.
const (
	reservedName  = "#dynashard_"
	reservedValue = ":dynashard_"
	pkName        = reservedName + "pk"
	pkValue       = reservedValue + "pk"
)

// plan is a validated Query turned into what the requests need.
type plan struct {
	q        Query
	pkAttr   string
	skAttr   string
	keyAttrs []string // attributes of a resume key besides pkAttr, sorted
	suffixes []int    // ascending; the index into it is a shard's ordinal
	pks      []string // physical keys, by ordinal
	desc     bool
	ordered  bool

	keyCond, filter, projection string
	names                       map[string]string
	values                      map[string]types.AttributeValue // without pkValue

	fingerprint [16]byte
}

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalidQuery}, args...)...)
}

func newPlan(q Query) (*plan, error) {
	switch {
	case q.Table == "":
		return nil, invalid("empty Table")
	case q.PartitionKey == "":
		return nil, invalid("empty PartitionKey")
	case q.SortKey == q.PartitionKey:
		return nil, invalid("SortKey %q equals PartitionKey", q.SortKey)
	case q.Base == "":
		return nil, invalid("empty Base")
	case q.PageSize < 0:
		return nil, invalid("negative PageSize %d", q.PageSize)
	case (q.Strategy == nil) == (len(q.Suffixes) == 0):
		return nil, invalid("set exactly one of Strategy and Suffixes")
	}
	p := &plan{q: q, pkAttr: q.PartitionKey, skAttr: q.SortKey, desc: q.Descending, ordered: !q.Unordered}
	if q.Strategy != nil {
		n := q.Strategy.N()
		if err := shard.CheckN(n); err != nil {
			return nil, invalid("strategy: %v", err)
		}
		p.suffixes = make([]int, n)
		for i := range n {
			p.suffixes[i] = i + 1
		}
	} else {
		p.suffixes = slices.Clone(q.Suffixes)
		slices.Sort(p.suffixes)
		for i, s := range p.suffixes {
			if s < 1 || s > shard.MaxN {
				return nil, invalid("suffix %d outside 1..%d", s, shard.MaxN)
			}
			if i > 0 && p.suffixes[i-1] == s {
				return nil, invalid("suffix %d listed twice", s)
			}
		}
	}
	p.pks = make([]string, len(p.suffixes))
	for i, s := range p.suffixes {
		if err := q.Codec.Check(q.Base, s); err != nil {
			return nil, invalid("base %q, suffix %d: %v", q.Base, s, err)
		}
		p.pks[i] = q.Codec.Key(q.Base, s)
	}

	// The resume key: DynamoDB's ExclusiveStartKey holds the table's key and,
	// for an index, the index's key too.
	keys := map[string]bool{}
	if q.SortKey != "" {
		keys[q.SortKey] = true
	}
	if q.Index != "" {
		if len(q.TableKey) < 1 || len(q.TableKey) > 2 {
			return nil, invalid("index query on %q needs TableKey (1 or 2 attribute names), got %q", q.Index, q.TableKey)
		}
		for _, k := range q.TableKey {
			if k == "" {
				return nil, invalid("empty name in TableKey")
			}
			keys[k] = true
		}
	}
	delete(keys, q.PartitionKey)
	p.keyAttrs = slices.Sorted(maps.Keys(keys))

	// Placeholders: ours must not collide with the caller's.
	for k := range q.Names {
		if strings.HasPrefix(k, reservedName) {
			return nil, invalid("expression name %q uses the reserved prefix %q", k, reservedName)
		}
	}
	for k := range q.Values {
		if strings.HasPrefix(k, reservedValue) {
			return nil, invalid("expression value %q uses the reserved prefix %q", k, reservedValue)
		}
	}
	for _, e := range []struct{ what, expr string }{
		{"KeyCondition", q.KeyCondition}, {"Filter", q.Filter}, {"Projection", q.Projection},
	} {
		if strings.Contains(e.expr, reservedName) || strings.Contains(e.expr, reservedValue) {
			return nil, invalid("%s %q uses a reserved placeholder (%q, %q)", e.what, e.expr, reservedName, reservedValue)
		}
	}

	p.names = maps.Clone(q.Names)
	if p.names == nil {
		p.names = map[string]string{}
	}
	p.names[pkName] = q.PartitionKey
	p.values = q.Values
	p.keyCond = pkName + " = " + pkValue
	if q.KeyCondition != "" {
		p.keyCond = "(" + p.keyCond + ") AND (" + q.KeyCondition + ")"
	}
	p.filter = q.Filter
	p.projection = q.Projection
	if p.projection != "" {
		// The merge needs the sort key and a resume needs the whole key,
		// whatever the caller projects.
		have := projected(p.projection, q.Names)
		for i, k := range p.keyAttrs {
			if !have[k] {
				ph := fmt.Sprintf("%sk%d", reservedName, i)
				p.names[ph] = k
				p.projection += ", " + ph
			}
		}
	}
	p.fingerprint = fingerprint(p)
	return p, nil
}

// projected returns the top-level attributes a projection expression names.
func projected(proj string, names map[string]string) map[string]bool {
	have := map[string]bool{}
	for _, path := range strings.Split(proj, ",") {
		path = strings.TrimSpace(path)
		if i := strings.IndexAny(path, ".["); i >= 0 {
			path = strings.TrimSpace(path[:i])
		}
		if strings.HasPrefix(path, "#") {
			if n, ok := names[path]; ok {
				path = n
			}
		}
		have[path] = true
	}
	return have
}

// placeholders returns the #name or :value tokens (by prefix) in exprs.
func placeholders(prefix byte, exprs ...string) map[string]bool {
	found := map[string]bool{}
	for _, e := range exprs {
		for i := 0; i < len(e); i++ {
			if e[i] != prefix {
				continue
			}
			j := i + 1
			for j < len(e) && (isAlnum(e[j]) || e[j] == '_') {
				j++
			}
			found[e[i:j]] = true
			i = j - 1
		}
	}
	return found
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// input returns the Query request for shard ord, starting after esk.
func (p *plan) input(ord int, esk map[string]types.AttributeValue, limit int32) *dynamodb.QueryInput {
	values := make(map[string]types.AttributeValue, len(p.values)+1)
	maps.Copy(values, p.values)
	values[pkValue] = &types.AttributeValueMemberS{Value: p.pks[ord]}
	in := &dynamodb.QueryInput{
		TableName:                 aws.String(p.q.Table),
		KeyConditionExpression:    aws.String(p.keyCond),
		ExpressionAttributeNames:  p.names,
		ExpressionAttributeValues: values,
		ExclusiveStartKey:         esk,
		ScanIndexForward:          aws.Bool(!p.desc),
		ReturnConsumedCapacity:    types.ReturnConsumedCapacityTotal,
	}
	if p.q.Index != "" {
		in.IndexName = aws.String(p.q.Index)
	}
	if p.q.ConsistentRead {
		in.ConsistentRead = aws.Bool(true)
	}
	if p.filter != "" {
		in.FilterExpression = aws.String(p.filter)
	}
	if p.projection != "" {
		in.ProjectionExpression = aws.String(p.projection)
	}
	if limit > 0 {
		in.Limit = aws.Int32(limit)
	}
	return in
}

// countInput is input for Select COUNT: no projection, and only the names
// and values the remaining expressions use (DynamoDB rejects unused ones).
func (p *plan) countInput(ord int, esk map[string]types.AttributeValue) *dynamodb.QueryInput {
	in := p.input(ord, esk, p.q.PageSize)
	in.ProjectionExpression = nil
	in.Select = types.SelectCount
	used := placeholders('#', p.keyCond, p.filter)
	in.ExpressionAttributeNames = maps.Collect(func(yield func(string, string) bool) {
		for k, v := range p.names {
			if used[k] && !yield(k, v) {
				return
			}
		}
	})
	return in
}

// esk is the ExclusiveStartKey that resumes shard ord after key (values of
// keyAttrs, in order).
func (p *plan) esk(ord int, key []types.AttributeValue) map[string]types.AttributeValue {
	m := make(map[string]types.AttributeValue, len(key)+1)
	m[p.pkAttr] = &types.AttributeValueMemberS{Value: p.pks[ord]}
	for i, a := range p.keyAttrs {
		m[a] = key[i]
	}
	return m
}

// fingerprint identifies what a cursor may resume: the same items in the
// same order. Projection, consistency and page size do not change that.
func fingerprint(p *plan) [16]byte {
	h := sha256.New()
	str := func(s string) {
		var n [binary.MaxVarintLen64]byte
		h.Write(n[:binary.PutUvarint(n[:], uint64(len(s)))])
		h.Write([]byte(s))
	}
	str("dynashard/scatter/v1")
	str(p.q.Table)
	str(p.q.Index)
	str(p.pkAttr)
	str(p.skAttr)
	str(strings.Join(p.keyAttrs, "\x00"))
	str(p.q.Base)
	str(p.q.Codec.Key("", 0)) // the separator, resolved
	str(p.keyCond)
	str(p.filter)
	used := placeholders('#', p.keyCond, p.filter)
	for _, k := range slices.Sorted(maps.Keys(used)) {
		str(k)
		str(p.names[k])
	}
	usedV := placeholders(':', p.keyCond, p.filter)
	for _, k := range slices.Sorted(maps.Keys(usedV)) {
		str(k)
		if v, ok := p.values[k]; ok {
			hashAV(str, v)
		}
	}
	if p.desc {
		str("desc")
	} else {
		str("asc")
	}
	var b []byte
	for _, s := range p.suffixes {
		b = binary.AppendUvarint(b, uint64(s))
	}
	str(string(b))
	var fp [16]byte
	copy(fp[:], h.Sum(nil))
	return fp
}

// hashAV writes a canonical encoding of v: equal values hash equally.
func hashAV(str func(string), v types.AttributeValue) {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		str("S")
		str(v.Value)
	case *types.AttributeValueMemberN:
		str("N")
		str(v.Value)
	case *types.AttributeValueMemberB:
		str("B")
		str(string(v.Value))
	case *types.AttributeValueMemberBOOL:
		str("BOOL")
		str(fmt.Sprint(v.Value))
	case *types.AttributeValueMemberNULL:
		str("NULL")
	case *types.AttributeValueMemberSS:
		str("SS")
		str(fmt.Sprint(len(v.Value)))
		for _, s := range v.Value {
			str(s)
		}
	case *types.AttributeValueMemberNS:
		str("NS")
		str(fmt.Sprint(len(v.Value)))
		for _, s := range v.Value {
			str(s)
		}
	case *types.AttributeValueMemberBS:
		str("BS")
		str(fmt.Sprint(len(v.Value)))
		for _, s := range v.Value {
			str(string(s))
		}
	case *types.AttributeValueMemberL:
		str("L")
		str(fmt.Sprint(len(v.Value)))
		for _, e := range v.Value {
			hashAV(str, e)
		}
	case *types.AttributeValueMemberM:
		str("M")
		str(fmt.Sprint(len(v.Value)))
		for _, k := range slices.Sorted(maps.Keys(v.Value)) {
			str(k)
			hashAV(str, v.Value[k])
		}
	default:
		str(fmt.Sprintf("%T", v))
	}
}
