package faultproxy

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// schemaFunc returns a table's key schema.
type schemaFunc func(table string) (*tableSchema, bool)

// parse reads what the proxy needs from a request body. Anything it does not
// understand leaves the call without keys.
func (p *Proxy) parse(ctx context.Context, hdr http.Header, op string, body []byte) *call {
	c := &call{op: op, body: body, schemas: map[string]*tableSchema{}}
	// c keeps the schemas it used: the cache may forget a table before the
	// answer is charged.
	sch := func(table string) (*tableSchema, bool) {
		if s, ok := c.schemas[table]; ok {
			return s, true
		}
		s, ok := p.schema(ctx, hdr, table)
		if ok {
			c.schemas[table] = s
		}
		return s, ok
	}
	switch op {
	case "PutItem", "UpdateItem", "DeleteItem", "GetItem":
		c.parseItemOp(sch)
	case "Query":
		c.parseQuery(sch)
	case "BatchWriteItem":
		c.parseBatchWrite(sch)
	case "BatchGetItem":
		c.parseBatchGet(sch)
	case "TransactWriteItems", "TransactGetItems":
		c.parseTransact(sch)
	}
	return c
}

// keyOf decodes raw, an item or a key of table, and returns its partition
// key, and the item for sizing even when the key is unknown.
func keyOf(sch schemaFunc, table string, raw json.RawMessage) (pkey, map[string]types.AttributeValue, bool) {
	if table == "" || raw == nil {
		return pkey{}, nil, false
	}
	item, err := decodeItem(raw)
	return keyOfItem(sch, table, item, err)
}

// keyAt is keyOf for the item n of a parsed body src.
func keyAt(sch schemaFunc, table string, src []byte, n jnode) (pkey, map[string]types.AttributeValue, bool) {
	if table == "" {
		return pkey{}, nil, false
	}
	item, err := itemAt(src, n)
	return keyOfItem(sch, table, item, err)
}

// keyOfItem is keyOf's answer for item as decoded (err: not decoded).
func keyOfItem(sch schemaFunc, table string, item map[string]types.AttributeValue, err error) (pkey, map[string]types.AttributeValue, bool) {
	if err != nil {
		return pkey{}, nil, false
	}
	s, ok := sch(table)
	if !ok {
		return pkey{}, item, false
	}
	k, ok := s.pkOf(table, "", item)
	return k, item, ok
}

// writeOf describes a put of item (size >= 0) or a delete of it (size < 0)
// in table, for the stored bytes of the partition model; nil when the
// item's primary key is unknown.
func writeOf(sch schemaFunc, table string, k pkey, item map[string]types.AttributeValue, size int) *itemWrite {
	s, ok := sch(table)
	if !ok {
		return nil
	}
	id, ok := s.itemID(item)
	if !ok {
		return nil
	}
	return &itemWrite{key: k, id: id, size: size}
}

// itemOpInput is what the proxy reads of a single-item request.
type itemOpInput struct {
	TableName      string
	Item, Key      json.RawMessage
	ConsistentRead bool
	ReturnValues   string
}

// readItemOp reads body as encoding/json would into an itemOpInput.
func readItemOp(body []byte) (itemOpInput, bool) {
	if n, err := parseJSON(body); err == nil {
		if in, err := itemOpAt(body, n); err == nil {
			return in, true
		}
	}
	var in itemOpInput
	return in, json.Unmarshal(body, &in) == nil
}

func itemOpAt(src []byte, n jnode) (itemOpInput, error) {
	var in itemOpInput
	f, err := fields(src, n, "TableName", "Item", "Key", "ConsistentRead", "ReturnValues")
	if err != nil {
		return in, err
	}
	if in.TableName, err = stringField(src, f[0]); err != nil {
		return in, err
	}
	if in.Item, err = rawField(src, f[1]); err != nil {
		return in, err
	}
	if in.Key, err = rawField(src, f[2]); err != nil {
		return in, err
	}
	switch f[3].kind {
	case 0, jFalse:
	case jTrue:
		in.ConsistentRead = true
	default:
		return in, errSlow
	}
	in.ReturnValues, err = stringField(src, f[4])
	return in, err
}

func (c *call) parseItemOp(sch schemaFunc) {
	in, ok := readItemOp(c.body)
	if !ok {
		return
	}
	var item map[string]types.AttributeValue
	switch c.op {
	case "PutItem":
		c.kind = kindWrite
		c.key, item, c.hasKey = keyOf(sch, in.TableName, in.Item)
		n := itemSize(item)
		c.units = writeUnits(n)
		c.write = writeOf(sch, in.TableName, c.key, item, n)
	case "GetItem":
		c.kind = kindRead
		c.key, _, c.hasKey = keyOf(sch, in.TableName, in.Key)
		c.consistent = in.ConsistentRead
	default:
		// The item's size is unknown before the call: charge the
		// minimum. An update's new size is known only from ALL_NEW.
		c.kind = kindWrite
		c.key, item, c.hasKey = keyOf(sch, in.TableName, in.Key)
		c.units = 1
		c.write = writeOf(sch, in.TableName, c.key, item, -1)
		c.allNew = c.op == "UpdateItem" && in.ReturnValues == "ALL_NEW"
	}
}

type queryInput struct {
	TableName, IndexName      string
	KeyConditionExpression    string
	ExpressionAttributeNames  map[string]string
	ExpressionAttributeValues map[string]json.RawMessage
	KeyConditions             map[string]struct{ AttributeValueList []json.RawMessage }
	ConsistentRead            bool
}

// parseQuery finds the partition-key value the query is bound to, on the
// table or on the global index it names.
func (c *call) parseQuery(sch schemaFunc) {
	var in queryInput
	if json.Unmarshal(c.body, &in) != nil {
		return
	}
	c.kind = kindRead
	c.consistent = in.ConsistentRead
	s, ok := sch(in.TableName)
	if !ok {
		return
	}
	attr, index := s.pk, ""
	if a, ok := s.gsi[in.IndexName]; ok {
		attr, index = a, in.IndexName
	}
	raw := in.keyValue(attr)
	if raw == nil {
		return
	}
	av, err := decodeAV(raw)
	if err != nil {
		return
	}
	if pk, ok := keyString(av); ok {
		c.key, c.hasKey = pkey{Key: Key{Table: in.TableName, Index: index, PK: pk}, hash: keyHash(av)}, true
	}
}

// keyValue returns the value the key condition binds attr to with "=",
// from KeyConditionExpression or else the legacy KeyConditions; nil if
// neither does.
func (in *queryInput) keyValue(attr string) json.RawMessage {
	if ph, ok := keyCondition(in.KeyConditionExpression, in.ExpressionAttributeNames, attr); ok {
		return in.ExpressionAttributeValues[ph]
	}
	if kc, ok := in.KeyConditions[attr]; ok && len(kc.AttributeValueList) == 1 {
		return kc.AttributeValueList[0]
	}
	return nil
}

func (c *call) parseBatchWrite(sch schemaFunc) {
	if c.parseBatchWriteFast(sch) == nil {
		return
	}
	c.parseBatchWriteJSON(sch)
}

// parseBatchWriteJSON is parseBatchWrite with encoding/json: its
// reference, and its way with anything but the plain shape.
func (c *call) parseBatchWriteJSON(sch schemaFunc) {
	var items map[string][]json.RawMessage
	if json.Unmarshal(c.body, &c.top) != nil || json.Unmarshal(c.top["RequestItems"], &items) != nil {
		c.top = nil
		return
	}
	c.kind = kindWrite
	c.batch = map[string][]entry{}
	for t, reqs := range items {
		c.tables = append(c.tables, t)
		for _, raw := range reqs {
			c.batch[t] = append(c.batch[t], writeEntry(sch, t, raw))
		}
	}
	slices.Sort(c.tables)
}

// writeEntry reads one write request of table t. One it cannot read is
// still forwarded, keyless, at the minimum charge.
func writeEntry(sch schemaFunc, t string, raw json.RawMessage) entry {
	var wr struct {
		PutRequest    *struct{ Item json.RawMessage }
		DeleteRequest *struct{ Key json.RawMessage }
	}
	e := entry{raw: raw, units: 1}
	if json.Unmarshal(raw, &wr) != nil {
		return e
	}
	switch {
	case wr.PutRequest != nil:
		k, item, ok := keyOf(sch, t, wr.PutRequest.Item)
		e.describe(sch, t, true, k, item, ok)
	case wr.DeleteRequest != nil:
		k, item, ok := keyOf(sch, t, wr.DeleteRequest.Key)
		e.describe(sch, t, false, k, item, ok)
	}
	return e
}

// describe sets e's key, units and effect on stored bytes from keyOf's
// answer for its item (a put) or its key (a delete, one unit).
func (e *entry) describe(sch schemaFunc, t string, put bool, k pkey, item map[string]types.AttributeValue, ok bool) {
	e.key, e.hasKey = k, ok
	if !put {
		e.write = writeOf(sch, t, k, item, -1)
		return
	}
	n := itemSize(item)
	e.units = writeUnits(n)
	e.write = writeOf(sch, t, k, item, n)
}

func (c *call) parseBatchGet(sch schemaFunc) {
	var items map[string]map[string]json.RawMessage
	if json.Unmarshal(c.body, &c.top) != nil || json.Unmarshal(c.top["RequestItems"], &items) != nil {
		c.top = nil
		return
	}
	c.kind = kindRead
	c.batch = map[string][]entry{}
	c.kaa = items
	for t, kaa := range items {
		c.tables = append(c.tables, t)
		var keys []json.RawMessage
		if err := json.Unmarshal(kaa["Keys"], &keys); err != nil {
			// Without every table's keys the proxy cannot rebuild the
			// request: forward it untouched.
			c.top, c.batch, c.tables = nil, nil, nil
			return
		}
		for _, raw := range keys {
			e := entry{raw: raw}
			e.key, _, e.hasKey = keyOf(sch, t, raw)
			c.batch[t] = append(c.batch[t], e)
		}
	}
	slices.Sort(c.tables)
}

// parseTransact collects the keys of a transaction, which are only selected
// and counted: transactions are not charged.
func (c *call) parseTransact(sch schemaFunc) {
	var in struct {
		TransactItems []map[string]struct {
			TableName string
			Item, Key json.RawMessage
		}
	}
	if json.Unmarshal(c.body, &in) != nil {
		return
	}
	for _, ti := range in.TransactItems {
		for _, a := range ti {
			raw := a.Key
			if raw == nil {
				raw = a.Item
			}
			if k, _, ok := keyOf(sch, a.TableName, raw); ok {
				c.other = append(c.other, k.Key)
			}
		}
	}
}
