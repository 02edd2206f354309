package split

import (
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynashard/dynashard/internal/ddbsize"
)

// Key is a logical item's key: the values of the Layout's PartitionKey and
// SortKey attributes, as text. SK is empty when the Layout has no SortKey.
// With a sharded part, PK is the base and SK the id. The value of an N key
// is a number as DynamoDB takes it: "21", "21.0", "2.1E1" and "021" are
// one key. Every Key the Store returns (Result.Key) holds it in plain
// decimal, as DynamoDB returns numbers ("21").
type Key struct {
	PK string
	SK string
}

func (k Key) String() string {
	if k.SK == "" {
		return fmt.Sprintf("%q", clip(k.PK))
	}
	return fmt.Sprintf("(%q, %q)", clip(k.PK), clip(k.SK))
}

// clip shortens s for an error message.
func clip(s string) string {
	const show = 64
	if len(s) <= show {
		return s
	}
	return fmt.Sprintf("%s… (%d bytes)", s[:show], len(s))
}

// part is a Part with what the Store computes from it once.
type part struct {
	Part
	table string
	keys  []string // key attribute names of its table
}

func newPart(l Layout, p *Part) *part {
	return &part{Part: *p, table: p.table(), keys: p.keyNames(l)}
}

// value returns v as an attribute value of type t.
func value(v string, t types.ScalarAttributeType) types.AttributeValue {
	if keyType(t) == types.ScalarAttributeTypeN {
		return &types.AttributeValueMemberN{Value: v}
	}
	return &types.AttributeValueMemberS{Value: v}
}

// checkKey validates k against the Layout before any request, and
// returns it with the value of an N key in plain decimal, as DynamoDB
// returns numbers ("21.0", "2.1E1" and "021" are "21"): one number is one
// key however it is spelt, and decodes into any Go number type that holds
// it.
func (l Layout) checkKey(k Key) (Key, error) {
	if err := ddbsize.CheckKeyValue(l.PartitionKey, value(k.PK, l.PartitionKeyType), false); err != nil {
		return k, fmt.Errorf("%w: split: key %v: %w", ErrInvalid, k, err)
	}
	if l.SortKey == "" {
		if k.SK != "" {
			return k, fmt.Errorf("%w: split: key %v: the layout has no sort key", ErrInvalid, k)
		}
		return Key{PK: plain(k.PK, l.PartitionKeyType)}, nil
	}
	if err := ddbsize.CheckKeyValue(l.SortKey, value(k.SK, l.SortKeyType), true); err != nil {
		return k, fmt.Errorf("%w: split: key %v: %w", ErrInvalid, k, err)
	}
	return Key{PK: plain(k.PK, l.PartitionKeyType), SK: plain(k.SK, l.SortKeyType)}, nil
}

// plain returns v, a value of type t that CheckKeyValue accepted: for an
// N, the number in plain decimal without exponent or needless zeros, as
// DynamoDB returns it ("2.1E1" is "21", "1.5E-7" is "0.00000015").
func plain(v string, t types.ScalarAttributeType) string {
	if keyType(t) != types.ScalarAttributeTypeN {
		return v
	}
	n, err := ddbsize.ParseNumber(v)
	if err != nil || n.Digits == "" {
		return "0" // an error is not reached: CheckKeyValue parsed v
	}
	var b strings.Builder
	if n.Neg {
		b.WriteByte('-')
	}
	d := n.Digits
	switch {
	case n.Exp >= len(d)-1: // a whole number: the digits, then zeros
		b.WriteString(d)
		b.WriteString(strings.Repeat("0", n.Exp-(len(d)-1)))
	case n.Exp >= 0:
		b.WriteString(d[:n.Exp+1])
		b.WriteByte('.')
		b.WriteString(d[n.Exp+1:])
	default:
		b.WriteString("0.")
		b.WriteString(strings.Repeat("0", -n.Exp-1))
		b.WriteString(d)
	}
	return b.String()
}

// key returns the primary key of the part's item for the logical key k,
// which checkKey accepted: for a sharded part, base<sep>suffix and the
// id, checked against DynamoDB's key limits.
func (p *part) key(l Layout, k Key) (map[string]types.AttributeValue, error) {
	if p.Shard == nil {
		m := map[string]types.AttributeValue{l.PartitionKey: value(k.PK, l.PartitionKeyType)}
		if l.SortKey != "" {
			m[l.SortKey] = value(k.SK, l.SortKeyType)
		}
		return m, nil
	}
	sl := p.Shard
	n := sl.Strategy.N()
	suffix := sl.Strategy.Pick(k.SK)
	if suffix < 1 || suffix > n {
		return nil, &PartError{Part: p.Name, Table: p.table, Key: k,
			Err: fmt.Errorf("%w: strategy %v picked suffix %d, not in 1..%d", ErrInvalid, sl.Strategy, suffix, n)}
	}
	if err := sl.Codec.Check(k.PK, suffix); err != nil {
		return nil, &PartError{Part: p.Name, Table: p.table, Key: k, Err: fmt.Errorf("%w: %w", ErrInvalid, err)}
	}
	return map[string]types.AttributeValue{
		sl.PartitionKey: &types.AttributeValueMemberS{Value: sl.Codec.Key(k.PK, suffix)},
		sl.SortKey:      &types.AttributeValueMemberS{Value: k.SK},
	}, nil
}

// fingerprint identifies a key of the part's table by value, numbers by
// their value ("21" and "21.0" are one key), so that items DynamoDB
// returns are matched to the keys asked for.
func (p *part) fingerprint(item map[string]types.AttributeValue) string {
	fp := p.table
	for _, name := range p.keys {
		switch v := item[name].(type) {
		case *types.AttributeValueMemberS:
			fp += fmt.Sprintf("|S%d:%s", len(v.Value), v.Value)
		case *types.AttributeValueMemberN:
			n, err := ddbsize.ParseNumber(v.Value)
			if err != nil {
				fp += "|N?" + v.Value
				continue
			}
			fp += fmt.Sprintf("|N%v", n)
		default:
			fp += fmt.Sprintf("|%T", v)
		}
	}
	return fp
}

// keyOf returns the logical key of a marshalled item of T.
func (l Layout) keyOf(av map[string]types.AttributeValue) (Key, error) {
	get := func(name string, t types.ScalarAttributeType) (string, error) {
		switch v := av[name].(type) {
		case *types.AttributeValueMemberS:
			if keyType(t) == types.ScalarAttributeTypeS {
				return v.Value, nil
			}
		case *types.AttributeValueMemberN:
			if keyType(t) == types.ScalarAttributeTypeN {
				return v.Value, nil
			}
		case nil:
			return "", fmt.Errorf("%w: split: item lacks key attribute %q", ErrInvalid, name)
		}
		return "", fmt.Errorf("%w: split: key attribute %q is %T, want type %s", ErrInvalid, name, av[name], keyType(t))
	}
	var k Key
	var err error
	if k.PK, err = get(l.PartitionKey, l.PartitionKeyType); err != nil {
		return Key{}, err
	}
	if l.SortKey != "" {
		if k.SK, err = get(l.SortKey, l.SortKeyType); err != nil {
			return Key{}, err
		}
	}
	return l.checkKey(k)
}
