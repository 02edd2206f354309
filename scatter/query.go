package scatter

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynashard/dynashard/internal/keyorder"
	"github.com/dynashard/dynashard/shard"
)

// The library's own placeholders. The caller may not use the prefixes.
const (
	reservedName  = "#dynashard_"
	reservedValue = ":dynashard_"
	pkName        = reservedName + "pk"
	pkValue       = reservedValue + "pk"
)

// plan is a call checked and turned into what its requests need: the
// layout, the base and the call's options.
type plan struct {
	// anySuffix: decoding a cursor before the layout check, against every
	// suffix 1..shard.MaxN (decodeEarly); suffixes is then not filled in.
	anySuffix bool
	l         shard.Layout
	o         Options
	base      string
	pkAttr    string
	skAttr    string
	keyAttrs  []string // attributes of a resume key besides pkAttr, sorted
	skIndex   int      // skAttr's index in keyAttrs; -1 without a sort key
	keyKinds  []keyorder.Kind
	keyMax    []int    // byte limit of each keyAttrs value
	suffixes  []int    // ascending; the index into it is a shard's ordinal
	pks       []string // physical keys, by ordinal
	desc      bool
	ordered   bool
	cond      sortCond       // the parsed KeyCondition
	history   []int          // the base's shard counts (shard.Table.Shards), set by widen
	twice     bool           // a read may meet an item at two keys (see copies.go), set by widen
	home      shard.Strategy // the newest count's, for a calculated Resizable strategy; set by widen

	keyCond, filter, projection string
	names                       map[string]string
	values                      map[string]types.AttributeValue // without pkValue
	// rangeNames and rangeValues serve requests whose sort-key condition
	// the library renders (see plan.start): the caller's KeyCondition's own
	// placeholders left out, since DynamoDB rejects unused ones.
	rangeNames  map[string]string
	rangeValues map[string]types.AttributeValue

	fingerprint [16]byte
}

// newPlan plans a call of layout l (already valid) on base with options
// o, or returns an error matching ErrInvalidQuery.
func newPlan(l shard.Layout, base string, o Options) (*plan, error) {
	p, err := newShape(l, o)
	if err != nil {
		return nil, err
	}
	if err := p.keys(base); err != nil {
		return nil, err
	}
	p.fingerprint = fingerprint(p)
	return p, nil
}

// newShape checks o against l and plans everything that does not depend
// on a base; New calls it to reject bad Options early.
func newShape(l shard.Layout, o Options) (*plan, error) {
	p := &plan{l: l, o: o, pkAttr: l.PartitionKey, skAttr: l.SortKey, desc: o.Descending, ordered: !o.Unordered}
	for _, step := range []func() error{p.checkOptions, p.shards, p.resumeKey, p.placeholders, p.keyTypes} {
		if err := step(); err != nil {
			return nil, err
		}
	}
	p.expressions()
	return p, nil
}

// checkOptions checks the options that have a domain of their own.
func (p *plan) checkOptions() error {
	o := p.o
	switch {
	case o.MaxConcurrency < 0:
		return invalid("negative MaxConcurrency %d", o.MaxConcurrency)
	case o.MaxShardPages < 0:
		return invalid("negative MaxShardPages %d", o.MaxShardPages)
	case o.PageSize < 0:
		return invalid("negative PageSize %d", o.PageSize)
	case len(o.CursorKey) > 0 && len(o.CursorKey) < minCursorKey:
		return invalid("CursorKey has %d bytes, want at least %d (32 random bytes recommended)",
			len(o.CursorKey), minCursorKey)
	}
	return nil
}

// shards resolves the suffixes to read: Options.Suffixes, or 1..N.
func (p *plan) shards() error {
	n := p.l.N()
	if len(p.o.Suffixes) == 0 {
		p.suffixes = make([]int, n)
		for i := range n {
			p.suffixes[i] = i + 1
		}
		return nil
	}
	p.suffixes = slices.Clone(p.o.Suffixes)
	slices.Sort(p.suffixes)
	for i, s := range p.suffixes {
		if s < 1 || s > n {
			return invalid("suffix %d outside 1..%d (the layout's N)", s, n)
		}
		if i > 0 && p.suffixes[i-1] == s {
			return invalid("suffix %d listed twice", s)
		}
	}
	return nil
}

// keys checks base and makes the physical keys.
func (p *plan) keys(base string) error {
	if base == "" {
		return invalid("empty base: %w", p.l.Codec.Check(base, 1))
	}
	p.base = base
	p.pks = make([]string, len(p.suffixes))
	for i, s := range p.suffixes {
		if err := p.l.Codec.Check(base, s); err != nil {
			return invalid("base, suffix %d: %w", s, err)
		}
		p.pks[i] = p.l.Codec.Key(base, s)
	}
	return nil
}

// resumeKey finds the attributes of DynamoDB's ExclusiveStartKey besides
// the partition key: the table's key and, for an index, the index's too.
// (Layout.Validate has checked TableKey.)
func (p *plan) resumeKey() error {
	l := p.l
	keys := map[string]bool{}
	if l.SortKey != "" {
		keys[l.SortKey] = true
	}
	if l.Index != "" {
		for _, k := range l.TableKey {
			keys[k] = true
		}
	}
	delete(keys, l.PartitionKey)
	p.keyAttrs = slices.Sorted(maps.Keys(keys))
	p.skIndex = slices.Index(p.keyAttrs, l.SortKey)
	p.keyMax = make([]int, len(p.keyAttrs))
	for i, a := range p.keyAttrs {
		p.keyMax[i] = maxKeyValue // a partition key: the table's, for an index
		if a == l.SortKey || l.Index != "" && len(l.TableKey) == 2 && a == l.TableKey[1] {
			p.keyMax[i] = maxSortKeyBytes
		}
	}
	return nil
}

// placeholders checks that the caller's placeholders stay clear of ours.
func (p *plan) placeholders() error {
	o := p.o
	for k := range o.Names {
		if strings.HasPrefix(k, reservedName) {
			return invalid("expression name %q uses the reserved prefix %q", k, reservedName)
		}
	}
	for k := range o.Values {
		if strings.HasPrefix(k, reservedValue) {
			return invalid("expression value %q uses the reserved prefix %q", k, reservedValue)
		}
	}
	for _, e := range []struct{ what, expr string }{
		{"KeyCondition", o.KeyCondition}, {"Filter", o.Filter}, {"Projection", o.Projection},
	} {
		if strings.Contains(e.expr, reservedName) || strings.Contains(e.expr, reservedValue) {
			return invalid("%s %q uses a reserved placeholder (%q, %q)", e.what, e.expr, reservedName, reservedValue)
		}
	}
	return nil
}

// keyTypes parses the key condition and settles the type of each key
// attribute: the sort key's is the layout's SortKeyType, which the
// condition's values must have; an index layout's table key attributes
// have no declared type, and a cursor's values for them are only checked
// for consistency (see plan.checkPositions).
func (p *plan) keyTypes() error {
	var err error
	if p.cond, err = parseKeyCondition(p.skAttr, sortKind(p.l), p.o); err != nil {
		return err
	}
	p.keyKinds = make([]keyorder.Kind, len(p.keyAttrs))
	if p.skIndex >= 0 {
		p.keyKinds[p.skIndex] = sortKind(p.l)
	}
	return nil
}

// sortKind is the layout's sort-key type (S when unset), 0 without a
// sort key.
func sortKind(l shard.Layout) keyorder.Kind {
	switch {
	case l.SortKey == "":
		return 0
	case l.SortKeyType == "":
		return keyorder.S
	}
	return keyorder.Kind(l.SortKeyType[0])
}

// expressions builds the names, values and conditions of the requests.
func (p *plan) expressions() {
	o := p.o
	p.names = maps.Clone(o.Names)
	if p.names == nil {
		p.names = map[string]string{}
	}
	p.names[pkName] = p.pkAttr
	p.values = o.Values
	p.keyCond = pkName + " = " + pkValue
	if o.KeyCondition != "" {
		p.keyCond = "(" + p.keyCond + ") AND (" + o.KeyCondition + ")"
	}
	p.filter = o.Filter
	p.projection = o.Projection
	if p.projection != "" {
		// The merge needs the sort key and a resume needs the whole key,
		// whatever the caller projects.
		have := projected(p.projection, o.Names)
		for i, k := range p.keyAttrs {
			if !have[k] {
				ph := fmt.Sprintf("%sk%d", reservedName, i)
				p.names[ph] = k
				p.projection += ", " + ph
			}
		}
	}
	p.rangePlaceholders()
}

// rangePlaceholders keeps the names and values the filter and projection
// use, for requests whose key condition the library renders.
func (p *plan) rangePlaceholders() {
	usedN := placeholders('#', p.filter, p.projection)
	usedV := placeholders(':', p.filter)
	p.rangeNames = map[string]string{pkName: p.pkAttr, skName: p.skAttr}
	for k, v := range p.names {
		if usedN[k] {
			p.rangeNames[k] = v
		}
	}
	p.rangeValues = map[string]types.AttributeValue{}
	for k, v := range p.values {
		if usedV[k] {
			p.rangeValues[k] = v
		}
	}
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

// input returns the Query request for shard ord, starting after esk. A
// non-nil rng replaces the KeyCondition (see plan.start).
func (p *plan) input(ord int, esk map[string]types.AttributeValue, rng *keyRange, limit int32) *dynamodb.QueryInput {
	keyCond, names, values := p.keyCond, p.names, p.values
	var rngValues map[string]types.AttributeValue
	if rng != nil {
		var cond string
		cond, rngValues = rng.expr()
		keyCond, names, values = pkName+" = "+pkValue+" AND "+cond, p.rangeNames, p.rangeValues
	}
	vals := make(map[string]types.AttributeValue, len(values)+len(rngValues)+1)
	maps.Copy(vals, values)
	maps.Copy(vals, rngValues)
	vals[pkValue] = &types.AttributeValueMemberS{Value: p.pks[ord]}
	in := &dynamodb.QueryInput{
		TableName:                 aws.String(p.l.Table),
		KeyConditionExpression:    aws.String(keyCond),
		ExpressionAttributeNames:  names,
		ExpressionAttributeValues: vals,
		ExclusiveStartKey:         esk,
		ScanIndexForward:          aws.Bool(!p.desc),
	}
	if p.l.Index != "" {
		in.IndexName = aws.String(p.l.Index)
	}
	if p.o.ConsistentRead {
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
	in := p.input(ord, esk, nil, p.o.PageSize)
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
// same order, under the same layout. The layout's N is left out, and so is
// the suffix set unless Options.Suffixes names one other than 1..N: a
// base's shard count may change between two pages (shard.Table.Reshard),
// and every page reads the suffixes of the base's history at its time.
// Projection, consistency, page size and Unchecked do not change that.
func fingerprint(p *plan) [16]byte {
	h := sha256.New()
	str := func(s string) {
		var n [binary.MaxVarintLen64]byte
		h.Write(n[:binary.PutUvarint(n[:], uint64(len(s)))])
		h.Write([]byte(s))
	}
	str("dynashard/scatter/v2")
	str(fmt.Sprintf("%T", p.l.Strategy))
	str(string(p.l.SortKeyType))
	str(p.l.Table)
	str(p.l.Index)
	str(p.pkAttr)
	str(p.skAttr)
	str(strings.Join(p.keyAttrs, "\x00"))
	str(p.base)
	str(p.l.Codec.Key("", 0)) // the separator, resolved
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
	if len(p.o.Suffixes) > 0 && len(p.suffixes) != p.l.N() {
		for _, s := range p.suffixes {
			b = binary.AppendUvarint(b, uint64(s))
		}
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
