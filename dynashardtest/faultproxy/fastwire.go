package faultproxy

import (
	"encoding/base64"
	"encoding/json"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// The wire readers below take what the proxy needs from a parsed body
// (parseJSON), as encoding/json would into the same Go values. Each one
// either gives encoding/json's result or errSlow, never another answer: an
// attribute value outside the plain shape is handed to the encoding/json
// decoder of wire.go on the same bytes, which is what decodeItemJSON does
// for it.

// decodeItem decodes a wire-format item ({"name":{"S":"v"}, ...}), as
// decodeItemJSON does, in one pass where it can.
func decodeItem(raw json.RawMessage) (map[string]types.AttributeValue, error) {
	n, err := parseJSON(raw)
	if err != nil {
		return decodeItemJSON(raw)
	}
	return itemAt(raw, n)
}

// itemAt decodes the item n of src.
func itemAt(src []byte, n jnode) (map[string]types.AttributeValue, error) {
	item, err := itemOf(src, n)
	if err == errSlow {
		return decodeItemJSON(n.raw(src))
	}
	return item, err
}

// itemOf decodes an item whose names are plain and distinct; errSlow
// otherwise.
func itemOf(src []byte, n jnode) (map[string]types.AttributeValue, error) {
	if n.kind != jObject {
		return nil, errSlow
	}
	// Names first: encoding/json keeps the last of repeated names, so a
	// value it would overwrite must not fail the item here.
	m, err := members(src, n)
	if err != nil {
		return nil, err
	}
	out := make(map[string]types.AttributeValue, len(m))
	for name, v := range m {
		av, err := avOf(src, v)
		if err != nil {
			return nil, err
		}
		out[name] = av
	}
	return out, nil
}

// avOf decodes one attribute value.
func avOf(src []byte, n jnode) (types.AttributeValue, error) {
	if n.kind != jObject || len(n.kids) != 2 {
		return decodeAV(n.raw(src))
	}
	typ, ok := n.kids[0].text(src)
	if !ok {
		return decodeAV(n.raw(src))
	}
	v := n.kids[1]
	switch typ {
	case "S", "N":
		s, ok := v.text(src)
		if !ok {
			break
		}
		if typ == "S" {
			return &types.AttributeValueMemberS{Value: s}, nil
		}
		return &types.AttributeValueMemberN{Value: s}, nil
	case "B":
		if b, ok := binaryOf(src, v); ok {
			return &types.AttributeValueMemberB{Value: b}, nil
		}
	case "BOOL", "NULL":
		if v.kind != jTrue && v.kind != jFalse {
			break
		}
		if typ == "BOOL" {
			return &types.AttributeValueMemberBOOL{Value: v.kind == jTrue}, nil
		}
		return &types.AttributeValueMemberNULL{Value: v.kind == jTrue}, nil
	case "SS", "NS", "BS":
		if av, ok := attrSetOf(src, typ, v); ok {
			return av, nil
		}
	case "M":
		item, err := itemOf(src, v)
		if err == errSlow {
			break
		}
		return &types.AttributeValueMemberM{Value: item}, err
	case "L":
		if v.kind != jArray {
			break
		}
		l := make([]types.AttributeValue, len(v.kids))
		for i, e := range v.kids {
			av, err := avOf(src, e)
			if err != nil {
				return nil, err
			}
			l[i] = av
		}
		return &types.AttributeValueMemberL{Value: l}, nil
	}
	return decodeAV(n.raw(src))
}

// binaryOf decodes a plain string of base64 as encoding/json decodes it
// into a []byte; false for anything else (left to encoding/json, which
// also reports bad base64).
func binaryOf(src []byte, n jnode) ([]byte, bool) {
	if n.kind != jString || !n.plain {
		return nil, false
	}
	s := src[n.start+1 : n.end-1]
	b := make([]byte, base64.StdEncoding.DecodedLen(len(s)))
	k, err := base64.StdEncoding.Decode(b, s)
	if err != nil {
		return nil, false
	}
	return b[:k], true
}

// attrSetOf decodes an SS, NS or BS of plain strings; false for anything else.
func attrSetOf(src []byte, typ string, n jnode) (types.AttributeValue, bool) {
	if n.kind != jArray {
		return nil, false
	}
	if typ == "BS" {
		bs := make([][]byte, 0, len(n.kids))
		for _, e := range n.kids {
			b, ok := binaryOf(src, e)
			if !ok {
				return nil, false
			}
			bs = append(bs, b)
		}
		return &types.AttributeValueMemberBS{Value: bs}, true
	}
	ss := make([]string, 0, len(n.kids))
	for _, e := range n.kids {
		s, ok := e.text(src)
		if !ok {
			return nil, false
		}
		ss = append(ss, s)
	}
	if typ == "SS" {
		return &types.AttributeValueMemberSS{Value: ss}, true
	}
	return &types.AttributeValueMemberNS{Value: ss}, true
}

// fields finds the members of object n that encoding/json would decode
// into a struct with the given field names: the nodes, in the order of
// names, with kind 0 for a field absent. errSlow when n is not an object,
// or when a name is escaped, repeats a field, or matches one only
// case-insensitively, as encoding/json's struct decoding allows.
func fields(src []byte, n jnode, names ...string) ([]jnode, error) {
	if n.kind != jObject {
		return nil, errSlow
	}
	out := make([]jnode, len(names))
	for i := 0; i < len(n.kids); i += 2 {
		name, ok := n.kids[i].text(src)
		if !ok {
			return nil, errSlow
		}
		for j, f := range names {
			if name == f {
				if out[j].kind != 0 {
					return nil, errSlow
				}
				out[j] = n.kids[i+1]
			} else if strings.EqualFold(name, f) {
				return nil, errSlow
			}
		}
	}
	return out, nil
}

// members returns object n's members as encoding/json decodes it into a
// map: errSlow when n is not an object or a name is escaped or repeated.
func members(src []byte, n jnode) (map[string]jnode, error) {
	if n.kind != jObject {
		return nil, errSlow
	}
	out := make(map[string]jnode, len(n.kids)/2)
	for i := 0; i < len(n.kids); i += 2 {
		name, ok := n.kids[i].text(src)
		if !ok {
			return nil, errSlow
		}
		if _, dup := out[name]; dup {
			return nil, errSlow
		}
		out[name] = n.kids[i+1]
	}
	return out, nil
}

// rawMembers is members as json.RawMessages.
func rawMembers(src []byte, n jnode) (map[string]json.RawMessage, error) {
	m, err := members(src, n)
	if err != nil {
		return nil, err
	}
	out := make(map[string]json.RawMessage, len(m))
	for k, v := range m {
		out[k] = v.raw(src)
	}
	return out, nil
}

// rawElems returns array n's elements as json.RawMessages: errSlow when n
// is not an array.
func rawElems(src []byte, n jnode) ([]json.RawMessage, error) {
	if n.kind != jArray {
		return nil, errSlow
	}
	out := make([]json.RawMessage, len(n.kids))
	for i, e := range n.kids {
		out[i] = e.raw(src)
	}
	return out, nil
}

// stringField is a plain string field's value, "" when absent; errSlow
// for anything else.
func stringField(src []byte, n jnode) (string, error) {
	if n.kind == 0 {
		return "", nil
	}
	s, ok := n.text(src)
	if !ok {
		return "", errSlow
	}
	return s, nil
}

// rawField is an object field as a json.RawMessage, nil when absent;
// errSlow for anything but an object.
func rawField(src []byte, n jnode) (json.RawMessage, error) {
	switch n.kind {
	case 0:
		return nil, nil
	case jObject:
		return n.raw(src), nil
	}
	return nil, errSlow
}
