package faultproxy

import (
	"encoding/json"
	"slices"
)

// parseBatchWriteFast is parseBatchWrite on a parsed body, or errSlow
// before it has changed c or asked for a schema.
func (c *call) parseBatchWriteFast(sch schemaFunc) error {
	src := c.body
	root, err := parseJSON(src)
	if err != nil {
		return err
	}
	top, err := members(src, root)
	if err != nil {
		return err
	}
	ri, ok := top["RequestItems"]
	if !ok {
		return errSlow
	}
	tables, err := members(src, ri)
	if err != nil {
		return err
	}
	for _, reqs := range tables {
		if reqs.kind != jArray {
			return errSlow
		}
	}
	c.top = make(map[string]json.RawMessage, len(top))
	for name, v := range top {
		c.top[name] = v.raw(src)
	}
	c.kind = kindWrite
	c.batch = map[string][]entry{}
	for t, reqs := range tables {
		c.tables = append(c.tables, t)
		for _, n := range reqs.kids {
			c.batch[t] = append(c.batch[t], writeEntryAt(sch, t, src, n))
		}
	}
	slices.Sort(c.tables)
	return nil
}

// writeEntryAt is writeEntry for the write request n of a parsed body
// src, which it hands to writeEntry when it is not of the plain shape.
func writeEntryAt(sch schemaFunc, t string, src []byte, n jnode) entry {
	raw := n.raw(src)
	f, err := fields(src, n, "PutRequest", "DeleteRequest")
	if err != nil {
		return writeEntry(sch, t, raw)
	}
	put := f[0].kind != 0
	var g []jnode
	switch {
	case put:
		g, err = fields(src, f[0], "Item")
	case f[1].kind != 0:
		g, err = fields(src, f[1], "Key")
	default:
		return entry{raw: raw, units: 1}
	}
	if err != nil || g[0].kind != jObject {
		return writeEntry(sch, t, raw)
	}
	e := entry{raw: raw, units: 1}
	k, item, ok := keyAt(sch, t, src, g[0])
	e.describe(sch, t, put, k, item, ok)
	return e
}
