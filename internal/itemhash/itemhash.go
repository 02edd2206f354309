// Package itemhash writes an item's attributes to a hash in a canonical
// form: names sorted, set members sorted, each value tagged with its
// type and each field prefixed with its length. Two items hash alike
// exactly when their attributes are equal, whatever order a response
// listed them in. Package scatter uses it to tell an item from the same
// item moved to another key, and package stream to tell a copy's content.
package itemhash

import (
	"bytes"
	"encoding/binary"
	"io"
	"maps"
	"slices"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Write writes item to w, leaving out the attributes skip reports.
func Write(w io.Writer, item map[string]types.AttributeValue, skip func(name string) bool) {
	for _, name := range slices.Sorted(maps.Keys(item)) {
		if skip != nil && skip(name) {
			continue
		}
		field(w, []byte(name))
		value(w, item[name])
	}
}

func field(w io.Writer, b []byte) {
	var n [binary.MaxVarintLen64]byte
	w.Write(n[:binary.PutUvarint(n[:], uint64(len(b)))])
	w.Write(b)
}

func value(w io.Writer, v types.AttributeValue) {
	set := func(tag byte, members [][]byte) {
		slices.SortFunc(members, bytes.Compare)
		w.Write([]byte{tag})
		field(w, binary.AppendUvarint(nil, uint64(len(members))))
		for _, m := range members {
			field(w, m)
		}
	}
	strs := func(ss []string) [][]byte {
		out := make([][]byte, len(ss))
		for i, s := range ss {
			out[i] = []byte(s)
		}
		return out
	}
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		w.Write([]byte{'S'})
		field(w, []byte(v.Value))
	case *types.AttributeValueMemberN:
		w.Write([]byte{'N'})
		field(w, []byte(v.Value))
	case *types.AttributeValueMemberB:
		w.Write([]byte{'B'})
		field(w, v.Value)
	case *types.AttributeValueMemberBOOL:
		w.Write([]byte{'T', map[bool]byte{false: 0, true: 1}[v.Value]})
	case *types.AttributeValueMemberNULL:
		w.Write([]byte{'0'})
	case *types.AttributeValueMemberSS:
		set('s', strs(v.Value))
	case *types.AttributeValueMemberNS:
		set('n', strs(v.Value))
	case *types.AttributeValueMemberBS:
		set('b', slices.Clone(v.Value))
	case *types.AttributeValueMemberL:
		w.Write([]byte{'L'})
		field(w, binary.AppendUvarint(nil, uint64(len(v.Value))))
		for _, e := range v.Value {
			value(w, e)
		}
	case *types.AttributeValueMemberM:
		w.Write([]byte{'M'})
		Write(w, v.Value, nil)
		w.Write([]byte{'m'})
	default:
		w.Write([]byte{'?'})
	}
}
