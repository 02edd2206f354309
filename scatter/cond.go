package scatter

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynashard/dynashard/internal/keyorder"
)

// maxSortKeyBytes is DynamoDB's limit on a sort-key value; a partition-key
// value may have maxKeyValue (2,048) bytes.
const maxSortKeyBytes = 1024

// keyRange is the set of sort keys a KeyCondition admits: an interval of
// DynamoDB's key order, unbounded on a side without a bound. The zero
// keyRange admits every key. begins_with(sk, p) is the interval from p to
// the largest key of at most 1,024 bytes that starts with p.
type keyRange struct {
	lo, hi bound
}

// bound is one end of a keyRange; v == nil means unbounded.
type bound struct {
	v    types.AttributeValue
	k    keyorder.Key
	incl bool
}

func newBound(v types.AttributeValue, incl bool) (bound, error) {
	k, err := keyorder.Parse(v)
	return bound{v: v, k: k, incl: incl}, err
}

// below reports whether k sorts before r's lower end, above after its upper.
func (r *keyRange) below(k *keyorder.Key) bool {
	if r.lo.v == nil {
		return false
	}
	c := k.Compare(&r.lo.k)
	return c < 0 || c == 0 && !r.lo.incl
}

func (r *keyRange) above(k *keyorder.Key) bool {
	if r.hi.v == nil {
		return false
	}
	c := k.Compare(&r.hi.k)
	return c > 0 || c == 0 && !r.hi.incl
}

func (r *keyRange) contains(k *keyorder.Key) bool { return !r.below(k) && !r.above(k) }

// past reports whether k lies beyond r's far end for a query reading in
// direction desc: no later item of that query can be in r.
func (r *keyRange) past(k *keyorder.Key, desc bool) bool {
	if desc {
		return r.below(k)
	}
	return r.above(k)
}

// atEnd reports whether k is r's last key in direction desc.
func (r *keyRange) atEnd(k *keyorder.Key, desc bool) bool {
	b := r.hi
	if desc {
		b = r.lo
	}
	return b.v != nil && b.incl && k.Compare(&b.k) == 0
}

func (r *keyRange) empty() bool {
	if r.lo.v == nil || r.hi.v == nil {
		return false
	}
	c := r.lo.k.Compare(&r.hi.k)
	return c > 0 || c == 0 && !(r.lo.incl && r.hi.incl)
}

// from narrows r to the keys a query reading in direction desc meets from
// b on: b becomes r's near end if it is tighter.
func (r keyRange) from(b bound, desc bool) keyRange {
	if desc {
		if c := compareBound(b, r.hi); r.hi.v == nil || c < 0 || c == 0 && !b.incl {
			r.hi = b
		}
		return r
	}
	if c := compareBound(b, r.lo); r.lo.v == nil || c > 0 || c == 0 && !b.incl {
		r.lo = b
	}
	return r
}

func compareBound(a, b bound) int {
	if b.v == nil {
		return 0
	}
	return a.k.Compare(&b.k)
}

// Placeholders of a range the library renders itself.
const (
	skName  = reservedName + "sk"
	loValue = reservedValue + "lo"
	hiValue = reservedValue + "hi"
)

// expr renders r as a sort-key condition on skName. An exclusive end that
// DynamoDB cannot express (BETWEEN is inclusive) is rendered inclusive: the
// caller drops the items on it (see run.clip).
func (r *keyRange) expr() (string, map[string]types.AttributeValue) {
	lo, hi := r.lo, r.hi
	switch {
	case lo.v != nil && hi.v != nil && lo.k.Compare(&hi.k) == 0:
		return skName + " = " + loValue, map[string]types.AttributeValue{loValue: lo.v}
	case lo.v != nil && hi.v != nil:
		return skName + " BETWEEN " + loValue + " AND " + hiValue, map[string]types.AttributeValue{loValue: lo.v, hiValue: hi.v}
	case lo.v != nil:
		return skName + operator(">", lo.incl) + loValue, map[string]types.AttributeValue{loValue: lo.v}
	case hi.v != nil:
		return skName + operator("<", hi.incl) + hiValue, map[string]types.AttributeValue{hiValue: hi.v}
	}
	return "", nil
}

// operator returns " op " or, for an inclusive bound, " op= ".
func operator(op string, incl bool) string {
	if incl {
		op += "="
	}
	return " " + op + " "
}

// sortCond is a parsed KeyCondition: the range it admits and the type of
// its values, which is the sort key's (0 without a condition).
type sortCond struct {
	rng  keyRange
	kind keyorder.Kind
}

// parseKeyCondition parses o.KeyCondition on sort key sk, which DynamoDB
// limits to one comparison (=, <, <=, >, >=) of the sort key with a value,
// BETWEEN, or begins_with, possibly in parentheses. The values must be of
// type kind (the layout's SortKeyType); with kind 0 they must agree with
// each other.
func parseKeyCondition(sk string, kind keyorder.Kind, o Options) (sortCond, error) {
	if o.KeyCondition == "" {
		return sortCond{}, nil
	}
	bad := func(format string, args ...any) (sortCond, error) {
		return sortCond{}, invalid("KeyCondition %q: "+format, append([]any{o.KeyCondition}, args...)...)
	}
	if sk == "" {
		return bad("the layout has no SortKey")
	}
	toks, err := tokenize(o.KeyCondition)
	if err != nil {
		return bad("%v", err)
	}
	for len(toks) > 2 && toks[0] == "(" && closing(toks) == len(toks)-1 {
		toks = toks[1 : len(toks)-1]
	}
	c := condParser{sk: sk, names: o.Names, values: o.Values, declared: kind != 0}
	c.kind = kind
	switch {
	case len(toks) == 3:
		err = c.compare(toks[0], toks[1], toks[2])
	case len(toks) == 5 && strings.EqualFold(toks[1], "BETWEEN") && strings.EqualFold(toks[3], "AND"):
		err = c.between(toks[0], toks[2], toks[4])
	case len(toks) == 6 && toks[0] == "begins_with" && toks[1] == "(" && toks[3] == "," && toks[5] == ")":
		err = c.beginsWith(toks[2], toks[4])
	default:
		err = fmt.Errorf("want one comparison, BETWEEN or begins_with on the sort key %q", sk)
	}
	if err != nil {
		return bad("%v", err)
	}
	return c.sortCond, nil
}

func tokenize(s string) ([]string, error) {
	var toks []string
	for i := 0; i < len(s); {
		c, j := s[i], i+1
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
			continue
		case c == '<' || c == '>':
			if j < len(s) && (s[j] == '=' || c == '<' && s[j] == '>') {
				j++
			}
		case c == '#' || c == ':' || c == '_' || isAlnum(c):
			for j < len(s) && (s[j] == '_' || isAlnum(s[j])) {
				j++
			}
		case strings.IndexByte("()=,", c) < 0:
			return nil, fmt.Errorf("unexpected %q", c)
		}
		toks = append(toks, s[i:j])
		i = j
	}
	return toks, nil
}

// closing returns the index of the parenthesis closing toks[0].
func closing(toks []string) int {
	depth := 0
	for i, t := range toks {
		switch t {
		case "(":
			depth++
		case ")":
			if depth--; depth == 0 {
				return i
			}
		}
	}
	return -1
}

type condParser struct {
	sk       string
	names    map[string]string
	values   map[string]types.AttributeValue
	declared bool // kind is the layout's SortKeyType
	sortCond
}

// operand resolves a token to the sort key (isKey) or to a value.
func (c *condParser) operand(tok string) (isKey bool, v types.AttributeValue, err error) {
	switch {
	case strings.HasPrefix(tok, ":"):
		v, ok := c.values[tok]
		if !ok {
			return false, nil, fmt.Errorf("value %s is not in Values", tok)
		}
		return false, v, c.kindOf(tok, v)
	case strings.HasPrefix(tok, "#"):
		name, ok := c.names[tok]
		if !ok {
			return false, nil, fmt.Errorf("name %s is not in Names", tok)
		}
		tok = name
	}
	if tok != c.sk {
		return false, nil, fmt.Errorf("%q is not the sort key %q", tok, c.sk)
	}
	return true, nil, nil
}

// kindOf checks that v is a key value of the condition's one type.
func (c *condParser) kindOf(tok string, v types.AttributeValue) error {
	k, err := keyorder.Parse(v)
	if err != nil {
		return fmt.Errorf("value %s: %v", tok, err)
	}
	switch {
	case c.declared && k.Kind() != c.kind:
		return fmt.Errorf("value %s is %c, the sort key's type is %c", tok, k.Kind(), c.kind)
	case c.kind != 0 && k.Kind() != c.kind:
		return fmt.Errorf("value %s is %c, another is %c", tok, k.Kind(), c.kind)
	}
	c.kind = k.Kind()
	return nil
}

// value resolves a token that must be a value.
func (c *condParser) value(tok string) (bound, error) {
	isKey, v, err := c.operand(tok)
	if err == nil && isKey {
		err = fmt.Errorf("%s compared with itself", tok)
	}
	if err != nil {
		return bound{}, err
	}
	return newBound(v, true)
}

// flipped maps an operator to its mirror, for "value op key".
var flipped = map[string]string{"=": "=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}

func (c *condParser) compare(a, op, b string) error {
	if _, ok := flipped[op]; !ok {
		return fmt.Errorf("operator %q (want =, <, <=, > or >=)", op)
	}
	written := op
	if isKey, _, err := c.operand(a); err != nil || !isKey {
		a, b, op = b, a, flipped[op]
	}
	if isKey, _, err := c.operand(a); err != nil || !isKey {
		return fmt.Errorf("neither side of %q is the sort key %q", written, c.sk)
	}
	v, err := c.value(b)
	if err != nil {
		return err
	}
	switch op {
	case "=":
		c.rng.lo, c.rng.hi = v, v
	case "<", "<=":
		v.incl = op == "<="
		c.rng.hi = v
	default:
		v.incl = op == ">="
		c.rng.lo = v
	}
	return nil
}

func (c *condParser) between(key, lo, hi string) error {
	if isKey, _, err := c.operand(key); err != nil || !isKey {
		return fmt.Errorf("BETWEEN applies to the sort key %q", c.sk)
	}
	var err error
	if c.rng.lo, err = c.value(lo); err != nil {
		return err
	}
	if c.rng.hi, err = c.value(hi); err != nil {
		return err
	}
	if c.rng.empty() {
		return fmt.Errorf("BETWEEN's lower bound %s is above its upper bound %s", lo, hi)
	}
	return nil
}

func (c *condParser) beginsWith(key, prefix string) error {
	if isKey, _, err := c.operand(key); err != nil || !isKey {
		return fmt.Errorf("begins_with applies to the sort key %q", c.sk)
	}
	lo, err := c.value(prefix)
	if err != nil {
		return err
	}
	if c.kind == keyorder.N {
		return fmt.Errorf("begins_with on a number")
	}
	c.rng.lo = lo
	c.rng.hi, err = newBound(maxWithPrefix(lo.v), true)
	return err
}

// maxWithPrefix returns the largest key of at most maxSortKeyBytes bytes
// that starts with v (S or B): v padded with the largest UTF-8 sequences
// (U+10FFFF, then the largest that fit) or with 0xFF bytes. Every key with
// that prefix sorts between v and it, and no other key does.
func maxWithPrefix(v types.AttributeValue) types.AttributeValue {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		var b strings.Builder
		b.WriteString(v.Value)
		for b.Len()+4 <= maxSortKeyBytes {
			b.WriteRune(0x10FFFF)
		}
		switch maxSortKeyBytes - b.Len() {
		case 3:
			b.WriteRune(0xFFFF)
		case 2:
			b.WriteRune(0x7FF)
		case 1:
			b.WriteRune(0x7F)
		}
		return &types.AttributeValueMemberS{Value: b.String()}
	case *types.AttributeValueMemberB:
		pad := max(0, maxSortKeyBytes-len(v.Value))
		return &types.AttributeValueMemberB{Value: append(bytes.Clone(v.Value), bytes.Repeat([]byte{0xFF}, pad)...)}
	}
	return v
}
