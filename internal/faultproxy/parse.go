package faultproxy

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"sync"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

type kind int

const (
	kindOther kind = iota
	kindWrite
	kindRead
)

// entry is one write request of a BatchWriteItem or one key of a
// BatchGetItem, kept as sent so a rewritten request carries it unchanged.
type entry struct {
	raw    json.RawMessage
	key    Key
	hasKey bool
	units  float64 // write units (BatchWriteItem)
}

// call is what the proxy understood of one request. A request it cannot
// parse is still forwarded; it just has no keys and is never charged.
type call struct {
	op   string
	body []byte
	kind kind

	// Single-item operations and Query.
	key        Key
	hasKey     bool
	units      float64 // write units, known before forwarding
	consistent bool

	// Batch operations: entries per table, tables sorted so that random
	// draws happen in a reproducible order.
	top    map[string]json.RawMessage
	tables []string
	batch  map[string][]entry
	kaa    map[string]map[string]json.RawMessage // BatchGetItem KeysAndAttributes per table

	// Transactions and unparsed batches: keys for selection and stats only.
	other []Key

	schemas map[string]*tableSchema
}

// keys returns the distinct keys the request touches, in a stable order.
func (c *call) keys() []Key {
	var ks []Key
	if c.hasKey {
		ks = append(ks, c.key)
	}
	for _, t := range c.tables {
		for _, e := range c.batch[t] {
			if e.hasKey && !slices.Contains(ks, e.key) {
				ks = append(ks, e.key)
			}
		}
	}
	for _, k := range c.other {
		if !slices.Contains(ks, k) {
			ks = append(ks, k)
		}
	}
	return ks
}

// tableSchema is what the proxy needs of DescribeTable.
type tableSchema struct {
	pk  string
	gsi map[string]string // global index name -> its partition-key attribute
}

// pkOf returns the partition key of item in table (or a GSI of it).
func (s *tableSchema) pkOf(table, index string, item map[string]types.AttributeValue) (Key, bool) {
	attr := s.pk
	if a, ok := s.gsi[index]; ok {
		attr = a
	} else {
		index = ""
	}
	v, ok := item[attr]
	if !ok {
		return Key{}, false
	}
	pk, ok := keyString(v)
	return Key{Table: table, Index: index, PK: pk}, ok
}

// schemaCache holds each table's key schema, fetched once with the proxy's
// own DescribeTable request.
type schemaCache struct {
	mu sync.Mutex
	m  map[string]*tableSchema
}

func (s *schemaCache) forget(table string) {
	s.mu.Lock()
	delete(s.m, table)
	s.mu.Unlock()
}

// schema returns table's key schema, asking the target with the caller's
// credentials headers (local servers partition their data by access key and
// region, and do not check signatures). Failures are not cached: the table
// may not exist yet, and the forwarded request will tell the client so.
func (p *Proxy) schema(ctx context.Context, hdr http.Header, table string) (*tableSchema, bool) {
	p.schemas.mu.Lock()
	s, ok := p.schemas.m[table]
	p.schemas.mu.Unlock()
	if ok {
		return s, true
	}
	body, _ := json.Marshal(map[string]string{"TableName": table})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.target.String(), bytes.NewReader(body))
	if err != nil {
		return nil, false
	}
	for _, h := range []string{"Authorization", "X-Amz-Date", "X-Amz-Security-Token", "User-Agent"} {
		if v := hdr.Values(h); len(v) > 0 {
			req.Header[h] = v
		}
	}
	req.Header.Set("Content-Type", jsonContentType)
	req.Header.Set("X-Amz-Target", "DynamoDB_20120810.DescribeTable")
	resp, err := p.client.Do(req)
	if err != nil {
		return nil, false
	}
	defer resp.Body.Close()
	rb, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		return nil, false
	}
	type keySchema []struct{ AttributeName, KeyType string }
	hash := func(ks keySchema) string {
		for _, k := range ks {
			if k.KeyType == "HASH" {
				return k.AttributeName
			}
		}
		return ""
	}
	var out struct {
		Table struct {
			KeySchema              keySchema
			GlobalSecondaryIndexes []struct {
				IndexName string
				KeySchema keySchema
			}
		}
	}
	if err := json.Unmarshal(rb, &out); err != nil {
		return nil, false
	}
	s = &tableSchema{pk: hash(out.Table.KeySchema), gsi: map[string]string{}}
	if s.pk == "" {
		return nil, false
	}
	for _, g := range out.Table.GlobalSecondaryIndexes {
		s.gsi[g.IndexName] = hash(g.KeySchema)
	}
	p.schemas.mu.Lock()
	p.schemas.m[table] = s
	p.schemas.mu.Unlock()
	return s, true
}

// parse reads what the proxy needs from a request body. Anything it does not
// understand leaves the call without keys.
func (p *Proxy) parse(ctx context.Context, hdr http.Header, op string, body []byte) *call {
	c := &call{op: op, body: body, schemas: map[string]*tableSchema{}}
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
	keyOf := func(table, index string, raw json.RawMessage) (Key, map[string]types.AttributeValue, bool) {
		if table == "" || raw == nil {
			return Key{}, nil, false
		}
		item, err := decodeItem(raw)
		if err != nil {
			return Key{}, nil, false
		}
		s, ok := sch(table)
		if !ok {
			return Key{}, item, false
		}
		k, ok := s.pkOf(table, index, item)
		return k, item, ok
	}

	switch op {
	case "PutItem", "UpdateItem", "DeleteItem", "GetItem":
		var in struct {
			TableName      string
			Item, Key      json.RawMessage
			ConsistentRead bool
		}
		if json.Unmarshal(body, &in) != nil {
			return c
		}
		switch op {
		case "PutItem":
			var item map[string]types.AttributeValue
			c.kind = kindWrite
			c.key, item, c.hasKey = keyOf(in.TableName, "", in.Item)
			c.units = writeUnits(itemSize(item))
		case "GetItem":
			c.kind = kindRead
			c.key, _, c.hasKey = keyOf(in.TableName, "", in.Key)
			c.consistent = in.ConsistentRead
		default:
			// The item's size is unknown before the call: charge the
			// minimum.
			c.kind = kindWrite
			c.key, _, c.hasKey = keyOf(in.TableName, "", in.Key)
			c.units = 1
		}

	case "Query":
		var in struct {
			TableName, IndexName      string
			KeyConditionExpression    string
			ExpressionAttributeNames  map[string]string
			ExpressionAttributeValues map[string]json.RawMessage
			KeyConditions             map[string]struct{ AttributeValueList []json.RawMessage }
			ConsistentRead            bool
		}
		if json.Unmarshal(body, &in) != nil {
			return c
		}
		c.kind = kindRead
		c.consistent = in.ConsistentRead
		s, ok := sch(in.TableName)
		if !ok {
			return c
		}
		attr, index := s.pk, ""
		if a, ok := s.gsi[in.IndexName]; ok {
			attr, index = a, in.IndexName
		}
		var raw json.RawMessage
		if ph, ok := keyCondition(in.KeyConditionExpression, in.ExpressionAttributeNames, attr); ok {
			raw = in.ExpressionAttributeValues[ph]
		} else if kc, ok := in.KeyConditions[attr]; ok && len(kc.AttributeValueList) == 1 {
			raw = kc.AttributeValueList[0]
		}
		if raw == nil {
			return c
		}
		av, err := decodeAV(raw)
		if err != nil {
			return c
		}
		if pk, ok := keyString(av); ok {
			c.key, c.hasKey = Key{Table: in.TableName, Index: index, PK: pk}, true
		}

	case "BatchWriteItem":
		var items map[string][]json.RawMessage
		if json.Unmarshal(body, &c.top) != nil || json.Unmarshal(c.top["RequestItems"], &items) != nil {
			c.top = nil
			return c
		}
		c.kind = kindWrite
		c.batch = map[string][]entry{}
		for t, reqs := range items {
			c.tables = append(c.tables, t)
			for _, raw := range reqs {
				var wr struct {
					PutRequest    *struct{ Item json.RawMessage }
					DeleteRequest *struct{ Key json.RawMessage }
				}
				e := entry{raw: raw, units: 1}
				if json.Unmarshal(raw, &wr) == nil {
					switch {
					case wr.PutRequest != nil:
						var item map[string]types.AttributeValue
						e.key, item, e.hasKey = keyOf(t, "", wr.PutRequest.Item)
						e.units = writeUnits(itemSize(item))
					case wr.DeleteRequest != nil:
						e.key, _, e.hasKey = keyOf(t, "", wr.DeleteRequest.Key)
					}
				}
				c.batch[t] = append(c.batch[t], e)
			}
		}
		slices.Sort(c.tables)

	case "BatchGetItem":
		var items map[string]map[string]json.RawMessage
		if json.Unmarshal(body, &c.top) != nil || json.Unmarshal(c.top["RequestItems"], &items) != nil {
			c.top = nil
			return c
		}
		c.kind = kindRead
		c.batch = map[string][]entry{}
		c.kaa = items
		for t, kaa := range items {
			c.tables = append(c.tables, t)
			var keys []json.RawMessage
			if err := json.Unmarshal(kaa["Keys"], &keys); err != nil {
				c.top, c.batch, c.tables = nil, nil, nil
				return c
			}
			for _, raw := range keys {
				e := entry{raw: raw}
				e.key, _, e.hasKey = keyOf(t, "", raw)
				c.batch[t] = append(c.batch[t], e)
			}
		}
		slices.Sort(c.tables)

	case "TransactWriteItems", "TransactGetItems":
		var in struct {
			TransactItems []map[string]struct {
				TableName string
				Item, Key json.RawMessage
			}
		}
		if json.Unmarshal(body, &in) != nil {
			return c
		}
		for _, ti := range in.TransactItems {
			for _, a := range ti {
				raw := a.Key
				if raw == nil {
					raw = a.Item
				}
				if k, _, ok := keyOf(a.TableName, "", raw); ok {
					c.other = append(c.other, k)
				}
			}
		}
	}
	return c
}

// consistentRead reports BatchGetItem's ConsistentRead for table.
func (c *call) consistentRead(table string) bool {
	var b bool
	_ = json.Unmarshal(c.kaa[table]["ConsistentRead"], &b)
	return b
}

// wantsCapacity reports whether the request asked for ConsumedCapacity.
func (c *call) wantsCapacity() bool {
	var s string
	_ = json.Unmarshal(c.top["ReturnConsumedCapacity"], &s)
	return s == "TOTAL" || s == "INDEXES"
}

// zeroCapacity is the ConsumedCapacity of a batch the proxy answered itself.
func (c *call) zeroCapacity() json.RawMessage {
	type cc struct {
		TableName     string
		CapacityUnits float64
	}
	var out []cc
	for _, t := range c.tables {
		out = append(out, cc{TableName: t})
	}
	b, _ := json.Marshal(out) // cannot fail: strings and numbers
	return b
}
