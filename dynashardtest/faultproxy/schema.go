package faultproxy

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"sync"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// tableSchema is what the proxy needs of DescribeTable.
type tableSchema struct {
	pk, sk string            // key attributes; sk is "" for a simple key
	gsi    map[string]string // global index name -> its partition-key attribute
	def    *tableDef         // the capacity DescribeTable states
}

// pkOf returns the partition key of item in table (or a GSI of it).
func (s *tableSchema) pkOf(table, index string, item map[string]types.AttributeValue) (pkey, bool) {
	attr := s.pk
	if a, ok := s.gsi[index]; ok {
		attr = a
	} else {
		index = ""
	}
	v, ok := item[attr]
	if !ok {
		return pkey{}, false
	}
	pk, ok := keyString(v)
	return pkey{Key: Key{Table: table, Index: index, PK: pk}, hash: keyHash(v)}, ok
}

// itemID names item's primary key within its table, with numbers in
// canonical form so that 1 and 1.0 name one item, as in DynamoDB.
func (s *tableSchema) itemID(item map[string]types.AttributeValue) (string, bool) {
	pk, ok := canonicalKey(item[s.pk])
	if !ok {
		return "", false
	}
	if s.sk == "" {
		return strconv.Quote(pk), true
	}
	sk, ok := canonicalKey(item[s.sk])
	return strconv.Quote(pk) + strconv.Quote(sk), ok
}

// schemaCache holds each table's key schema, fetched once with the proxy's
// own DescribeTable request. Its lock is not p.mu and is never held across
// the fetch, so that one table's slow DescribeTable holds up neither
// requests on other tables nor the proxy's decisions.
type schemaCache struct {
	mu sync.Mutex
	m  map[string]*tableSchema
}

func (s *schemaCache) get(table string) (*tableSchema, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ts, ok := s.m[table]
	return ts, ok
}

func (s *schemaCache) put(table string, ts *tableSchema) {
	s.mu.Lock()
	s.m[table] = ts
	s.mu.Unlock()
}

func (s *schemaCache) forget(table string) {
	s.mu.Lock()
	delete(s.m, table)
	s.mu.Unlock()
}

// forgetSchema drops the cached schema of a table that c may have created,
// deleted or given new indexes.
func (p *Proxy) forgetSchema(c *call) {
	switch c.op {
	case "CreateTable", "DeleteTable", "UpdateTable":
		var in struct{ TableName string }
		if json.Unmarshal(c.body, &in) == nil {
			p.schemas.forget(in.TableName)
		}
	}
}

// schema returns table's key schema. Failures are not cached: the table
// may not exist yet, and the forwarded request will tell the client so.
func (p *Proxy) schema(ctx context.Context, hdr http.Header, table string) (*tableSchema, bool) {
	if s, ok := p.schemas.get(table); ok {
		return s, true
	}
	rb, ok := p.describeTable(ctx, hdr, table)
	if !ok {
		return nil, false
	}
	s, ok := decodeSchema(table, rb)
	if !ok {
		return nil, false
	}
	p.schemas.put(table, s)
	return s, true
}

// describeTable asks the target with the caller's credentials headers:
// local servers partition their data by access key and region, and do not
// check signatures.
func (p *Proxy) describeTable(ctx context.Context, hdr http.Header, table string) ([]byte, bool) {
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
	return rb, true
}

type keySchema []struct{ AttributeName, KeyType string }

func (ks keySchema) hash() string { return ks.attr("HASH") }

func (ks keySchema) rangeKey() string { return ks.attr("RANGE") }

func (ks keySchema) attr(keyType string) string {
	for _, k := range ks {
		if k.KeyType == keyType {
			return k.AttributeName
		}
	}
	return ""
}

// decodeSchema reads table's DescribeTable answer.
func decodeSchema(table string, rb []byte) (*tableSchema, bool) {
	var out struct{ Table wireTable }
	if err := json.Unmarshal(rb, &out); err != nil {
		return nil, false
	}
	ks := out.Table.KeySchema
	s := &tableSchema{pk: ks.hash(), sk: ks.rangeKey(), gsi: map[string]string{}}
	if s.pk == "" {
		return nil, false
	}
	for _, g := range out.Table.GlobalSecondaryIndexes {
		s.gsi[g.IndexName] = g.KeySchema.hash()
	}
	s.def = out.Table.described(table)
	return s, true
}
