package faultproxy

import (
	"testing"
	"time"
)

// TestKeyBuckets checks the per-key model behind capacityModel without a
// server: a step is a charge or an admission check at an offset from t0.
func TestKeyBuckets(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	a, b := Key{Table: "t", PK: "a"}, Key{Table: "t", PK: "b"}
	type step struct {
		at     time.Duration
		k      Key
		kd     kind
		charge float64 // > 0: charge this much; 0: check admission
		want   bool    // admission
	}
	for _, tc := range []struct {
		name  string
		cfg   Config
		steps []step
	}{
		{"unlimited", Config{}, []step{
			{0, a, kindWrite, 1e9, false}, {0, a, kindWrite, 0, true}, {0, a, kindRead, 0, true},
		}},
		{"starts full, admits while positive", Config{WCU: 2}, []step{
			{0, a, kindWrite, 0, true}, {0, a, kindWrite, 1.5, false}, {0, a, kindWrite, 0, true},
			{0, a, kindWrite, 0.5, false}, {0, a, kindWrite, 0, false},
		}},
		{"debt is repaid by the refill", Config{WCU: 1, Burst: 2 * time.Second}, []step{
			{0, a, kindWrite, 5, false}, {2 * time.Second, a, kindWrite, 0, false},
			{3 * time.Second, a, kindWrite, 0, false}, {3500 * time.Millisecond, a, kindWrite, 0, true},
		}},
		{"refill is capped at the depth", Config{WCU: 1}, []step{
			{0, a, kindWrite, 1, false}, {time.Hour, a, kindWrite, 1, false}, {time.Hour, a, kindWrite, 0, false},
		}},
		{"keys and kinds are separate", Config{WCU: 1, RCU: 1}, []step{
			{0, a, kindWrite, 1, false}, {0, a, kindWrite, 0, false},
			{0, b, kindWrite, 0, true}, {0, a, kindRead, 0, true},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newKeyBuckets()
			m.configure(tc.cfg, t0)
			for i, s := range tc.steps {
				now := t0.Add(s.at)
				if s.charge > 0 {
					m.charge(pkey{Key: s.k}, s.kd, s.charge, now)
					continue
				}
				if got := m.admit(pkey{Key: s.k}, s.kd, now); got != s.want {
					t.Errorf("step %d: admit(%v, %v) at %v: got %v, want %v", i, s.k, s.kd, s.at, got, s.want)
				}
			}
		})
	}
}

// TestKeyBucketsConfigure checks what Set promises of balances: capped at
// the new depth, debt kept.
func TestKeyBucketsConfigure(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	full, owing := Key{PK: "full"}, Key{PK: "owing"}
	m := newKeyBuckets()
	m.configure(Config{WCU: 10}, t0)
	m.admit(pkey{Key: full}, kindWrite, t0)
	m.charge(pkey{Key: owing}, kindWrite, 12, t0)
	m.configure(Config{WCU: 1}, t0)
	for _, tc := range []struct {
		k    Key
		want float64
	}{{full, 1}, {owing, -2}} {
		if got := m.write.m[tc.k].tokens; got != tc.want {
			t.Errorf("%s balance after lowering WCU: got %v, want %v", tc.k.PK, got, tc.want)
		}
	}
	if len(m.read.m) != 0 {
		t.Errorf("read buckets: got %d, want none (RCU unlimited)", len(m.read.m))
	}
}
