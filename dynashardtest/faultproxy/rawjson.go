package faultproxy

import (
	"encoding/json"
	"maps"
	"slices"
)

// Rewritten bodies are assembled from the members and entries of the
// parsed request, which are valid JSON already: json.Marshal would
// validate and compact every one of them again (a batch of chunk items is
// megabytes). Names are sorted and encoded as json.Marshal encodes a map.

// rawObject is the JSON object of m's members (null for a nil m, as
// json.Marshal writes it).
func rawObject(m map[string]json.RawMessage) json.RawMessage {
	if m == nil {
		return json.RawMessage("null")
	}
	size := 2
	for k, v := range m {
		size += len(k) + len(v) + 4
	}
	b := make([]byte, 0, size)
	b = append(b, '{')
	for i, k := range slices.Sorted(maps.Keys(m)) {
		if i > 0 {
			b = append(b, ',')
		}
		name, _ := json.Marshal(k) // cannot fail: a string
		b = append(b, name...)
		b = append(b, ':')
		b = appendRaw(b, m[k])
	}
	return append(b, '}')
}

// rawArray is the JSON array of vs (null for a nil vs).
func rawArray(vs []json.RawMessage) json.RawMessage {
	if vs == nil {
		return json.RawMessage("null")
	}
	size := 2
	for _, v := range vs {
		size += len(v) + 1
	}
	b := make([]byte, 0, size)
	b = append(b, '[')
	for i, v := range vs {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendRaw(b, v)
	}
	return append(b, ']')
}

// appendRaw appends v, or null for a nil v as json.Marshal writes it.
func appendRaw(b []byte, v json.RawMessage) []byte {
	if v == nil {
		return append(b, "null"...)
	}
	return append(b, v...)
}

// rawArrays is the JSON object of m's arrays: {"table":[...], ...}.
func rawArrays(m map[string][]json.RawMessage) json.RawMessage {
	if m == nil {
		return json.RawMessage("null")
	}
	out := make(map[string]json.RawMessage, len(m))
	for k, vs := range m {
		out[k] = rawArray(vs)
	}
	return rawObject(out)
}

// rawObjects is the JSON object of m's objects.
func rawObjects(m map[string]map[string]json.RawMessage) json.RawMessage {
	if m == nil {
		return json.RawMessage("null")
	}
	out := make(map[string]json.RawMessage, len(m))
	for k, o := range m {
		out[k] = rawObject(o)
	}
	return rawObject(out)
}
