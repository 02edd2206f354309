package faultproxy

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestDDLDef(t *testing.T) {
	tp := func(rcu, wcu float64) *Throughput { return &Throughput{RCU: rcu, WCU: wcu} }
	od := &Throughput{OnDemand: true}
	for _, tc := range []struct {
		op, body string
		want     tableDef
	}{
		{"CreateTable", `{"TableName":"t","ProvisionedThroughput":{"ReadCapacityUnits":5000,"WriteCapacityUnits":2000},
			"GlobalSecondaryIndexes":[{"IndexName":"g","ProvisionedThroughput":{"ReadCapacityUnits":1,"WriteCapacityUnits":2}}]}`,
			tableDef{table: "t", base: tp(5000, 2000), indexes: map[string]*Throughput{"g": tp(1, 2)}}},
		{"CreateTable", `{"TableName":"t","BillingMode":"PAY_PER_REQUEST","GlobalSecondaryIndexes":[{"IndexName":"g"}]}`,
			tableDef{table: "t", base: od, indexes: map[string]*Throughput{"g": od}}},
		{"UpdateTable", `{"TableName":"t","ProvisionedThroughput":{"ReadCapacityUnits":8000,"WriteCapacityUnits":2000},
			"GlobalSecondaryIndexUpdates":[{"Update":{"IndexName":"u","ProvisionedThroughput":{"ReadCapacityUnits":3,"WriteCapacityUnits":4}}},
			{"Create":{"IndexName":"c"}},{"Delete":{"IndexName":"d"}}]}`,
			tableDef{table: "t", base: tp(8000, 2000), indexes: map[string]*Throughput{"u": tp(3, 4), "c": od, "d": nil}}},
		{"UpdateTable", `{"TableName":"t","BillingMode":"PAY_PER_REQUEST"}`, tableDef{table: "t", base: od, indexes: map[string]*Throughput{}}},
		{"UpdateTable", `{"TableName":"t","StreamSpecification":{}}`, tableDef{table: "t", indexes: map[string]*Throughput{}}},
		{"DeleteTable", `{"TableName":"t"}`, tableDef{table: "t", dropped: true}},
	} {
		got, ok := ddlDef(tc.op, []byte(tc.body))
		if !ok {
			t.Errorf("%s %s: not read", tc.op, tc.body)
		}
		if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(tableDef{})); diff != "" {
			t.Errorf("%s %s (-want +got):\n%s", tc.op, tc.body, diff)
		}
	}
	for _, bad := range []struct{ op, body string }{{"PutItem", `{"TableName":"t"}`}, {"CreateTable", `{`}, {"UpdateTable", `{}`}} {
		if _, ok := ddlDef(bad.op, []byte(bad.body)); ok {
			t.Errorf("%s %s: read, want refused", bad.op, bad.body)
		}
	}
}

func TestDescribedDef(t *testing.T) {
	for _, tc := range []struct {
		body     string
		onDemand bool
	}{
		{`{"Table":{"KeySchema":[{"AttributeName":"pk","KeyType":"HASH"}],"ProvisionedThroughput":{"ReadCapacityUnits":0,"WriteCapacityUnits":0}}}`, true},
		{`{"Table":{"KeySchema":[{"AttributeName":"pk","KeyType":"HASH"}],"BillingModeSummary":{"BillingMode":"PAY_PER_REQUEST"},"ProvisionedThroughput":{"ReadCapacityUnits":0,"WriteCapacityUnits":0}}}`, true},
		{`{"Table":{"KeySchema":[{"AttributeName":"pk","KeyType":"HASH"}],"ProvisionedThroughput":{"ReadCapacityUnits":5,"WriteCapacityUnits":6}}}`, false},
	} {
		s, ok := decodeSchema("t", []byte(tc.body))
		if !ok || s.def == nil || !s.def.described || s.def.table != "t" {
			t.Fatalf("decodeSchema(%s): %+v, %v", tc.body, s, ok)
		}
		if got := s.def.base.OnDemand; got != tc.onDemand {
			t.Errorf("%s: on demand %v, want %v", tc.body, got, tc.onDemand)
		}
		if !tc.onDemand && (s.def.base.RCU != 5 || s.def.base.WCU != 6) {
			t.Errorf("%s: throughput %+v, want 5/6", tc.body, s.def.base)
		}
	}
}
