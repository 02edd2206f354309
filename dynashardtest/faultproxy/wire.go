package faultproxy

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynashard/dynashard/internal/ddbsize"
	"github.com/dynashard/dynashard/partition"
)

// opName strips the service prefix from an X-Amz-Target header.
func opName(target string) string {
	if i := strings.LastIndexByte(target, '.'); i >= 0 {
		return target[i+1:]
	}
	return target
}

// decodeItemJSON decodes a wire-format item ({"name":{"S":"v"}, ...}) with
// encoding/json: decodeItem's reference, and its way with anything but the
// plain shape.
func decodeItemJSON(raw json.RawMessage) (map[string]types.AttributeValue, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, err
	}
	out := make(map[string]types.AttributeValue, len(m))
	for k, v := range m {
		av, err := decodeAV(v)
		if err != nil {
			return nil, fmt.Errorf("attribute %q: %w", k, err)
		}
		out[k] = av
	}
	return out, nil
}

// decodeAV decodes one wire-format attribute value ({"S":"v"}).
func decodeAV(raw json.RawMessage) (types.AttributeValue, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, err
	}
	if len(m) != 1 {
		return nil, fmt.Errorf("attribute value with %d members", len(m))
	}
	var k string
	var v json.RawMessage
	for k, v = range m { // the one member
	}
	switch k {
	case "S", "N", "B", "BOOL", "NULL":
		return decodeScalar(k, v)
	case "SS", "NS", "BS":
		return decodeSet(k, v)
	case "M":
		item, err := decodeItem(v)
		return &types.AttributeValueMemberM{Value: item}, err
	case "L":
		return decodeList(v)
	}
	return nil, fmt.Errorf("unknown attribute type %q", k)
}

func decodeScalar(typ string, v json.RawMessage) (types.AttributeValue, error) {
	switch typ {
	case "S":
		var s string
		err := json.Unmarshal(v, &s)
		return &types.AttributeValueMemberS{Value: s}, err
	case "N":
		var s string
		err := json.Unmarshal(v, &s)
		return &types.AttributeValueMemberN{Value: s}, err
	case "B":
		var b []byte
		err := json.Unmarshal(v, &b)
		return &types.AttributeValueMemberB{Value: b}, err
	case "BOOL":
		var b bool
		err := json.Unmarshal(v, &b)
		return &types.AttributeValueMemberBOOL{Value: b}, err
	default: // NULL
		var b bool
		err := json.Unmarshal(v, &b)
		return &types.AttributeValueMemberNULL{Value: b}, err
	}
}

func decodeSet(typ string, v json.RawMessage) (types.AttributeValue, error) {
	switch typ {
	case "SS":
		var s []string
		err := json.Unmarshal(v, &s)
		return &types.AttributeValueMemberSS{Value: s}, err
	case "NS":
		var s []string
		err := json.Unmarshal(v, &s)
		return &types.AttributeValueMemberNS{Value: s}, err
	default: // BS
		var s [][]byte
		err := json.Unmarshal(v, &s)
		return &types.AttributeValueMemberBS{Value: s}, err
	}
}

func decodeList(v json.RawMessage) (types.AttributeValue, error) {
	var raws []json.RawMessage
	if err := json.Unmarshal(v, &raws); err != nil {
		return nil, err
	}
	l := make([]types.AttributeValue, len(raws))
	for i, r := range raws {
		av, err := decodeAV(r)
		if err != nil {
			return nil, err
		}
		l[i] = av
	}
	return &types.AttributeValueMemberL{Value: l}, nil
}

// keyString renders a key attribute value the way Config.Keys and Stats name
// partition keys: S and N as written, B in standard base64.
func keyString(av types.AttributeValue) (string, bool) {
	switch v := av.(type) {
	case *types.AttributeValueMemberS:
		return v.Value, true
	case *types.AttributeValueMemberN:
		return v.Value, true
	case *types.AttributeValueMemberB:
		return base64.StdEncoding.EncodeToString(v.Value), true
	}
	return "", false
}

// keyHash places a partition-key value in the key-hash space
// (partition.KeyHash). A value KeyHash refuses (an N the target will reject
// too) goes to hash 0.
func keyHash(av types.AttributeValue) uint64 {
	h, _ := partition.KeyHash(av)
	return h
}

// canonicalKey renders a key attribute value with its type and, for N, in
// canonical form, so that equal keys have equal strings.
func canonicalKey(av types.AttributeValue) (string, bool) {
	switch v := av.(type) {
	case *types.AttributeValueMemberS:
		return "S" + v.Value, true
	case *types.AttributeValueMemberN:
		if n, err := ddbsize.ParseNumber(v.Value); err == nil {
			return "N" + n.String(), true
		}
		return "N" + v.Value, true
	case *types.AttributeValueMemberB:
		return "B" + string(v.Value), true
	}
	return "", false
}

// itemSize is DynamoDB's size of item. An item ddbsize rejects counts as
// empty (the minimum charge): the target will reject it anyway.
func itemSize(item map[string]types.AttributeValue) int {
	n, err := ddbsize.ItemSize(item)
	if err != nil {
		return 0
	}
	return n
}

// keyCondition returns the placeholder or literal the key condition expression
// binds attribute pk to with "=", resolving #names. It is a heuristic parser:
// it splits the expression on top-level AND words and looks for a clause
// "name = :value" (either order), ignoring parentheses.
func keyCondition(expr string, names map[string]string, pk string) (placeholder string, ok bool) {
	resolve := func(t string) string {
		if strings.HasPrefix(t, "#") {
			if n, ok := names[t]; ok {
				return n
			}
		}
		return t
	}
	for _, c := range splitAnd(lexExpr(expr)) {
		c = trimParens(c)
		if len(c) != 3 || c[1] != "=" {
			continue
		}
		a, b := c[0], c[2]
		if strings.HasPrefix(a, ":") {
			a, b = b, a
		}
		if strings.HasPrefix(b, ":") && resolve(a) == pk {
			return b, true
		}
	}
	return "", false
}

// splitAnd splits tokens on AND words, in any case.
func splitAnd(toks []string) [][]string {
	var clauses [][]string
	start := 0
	for i, t := range toks {
		if strings.EqualFold(t, "and") {
			clauses = append(clauses, toks[start:i])
			start = i + 1
		}
	}
	return append(clauses, toks[start:])
}

// trimParens drops leading "(" and trailing ")" tokens, balanced or not,
// because splitAnd cuts through nested parentheses.
func trimParens(c []string) []string {
	for len(c) > 0 && c[0] == "(" {
		c = c[1:]
	}
	for len(c) > 0 && c[len(c)-1] == ")" {
		c = c[:len(c)-1]
	}
	return c
}

const exprSpace = " \t\n\r\v\f"

// lexExpr splits a condition expression into words, parentheses, commas and
// comparison operators.
func lexExpr(s string) []string {
	var toks []string
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case strings.IndexByte(exprSpace, c) >= 0:
			i++
		case c == '(' || c == ')' || c == ',' || c == '=':
			toks = append(toks, s[i:i+1])
			i++
		case c == '<' || c == '>':
			j := i + 1
			if j < len(s) && (s[j] == '=' || (c == '<' && s[j] == '>')) {
				j++
			}
			toks = append(toks, s[i:j])
			i = j
		default:
			j := i
			for j < len(s) && strings.IndexByte(exprSpace+"(),=<>", s[j]) < 0 {
				j++
			}
			toks = append(toks, s[i:j])
			i = j
		}
	}
	return toks
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		// Only maps of strings reach here.
		panic(errors.Join(errors.New("faultproxy: marshal"), err))
	}
	return b
}
