package faultproxy

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	gocmp "github.com/google/go-cmp/cmp"
)

// The partition model without a server: the guide's scenarios played on
// the model's clock, second by simulated second, fully deterministic.

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// guideTable is the guide's 5,000 RCU / 2,000 WCU table: four partitions of
// 1,250 RCU / 500 WCU.
var guideTable = TableKey{Table: "guide"}

func newModel(t *testing.T, pc PartitionConfig) *partitionModel {
	t.Helper()
	cfg := Config{Model: Partitioned, Partition: pc}
	if err := cfg.validate(); err != nil {
		t.Fatal(err)
	}
	m := newPartitionModel()
	m.configure(cfg, t0)
	return m
}

// on returns a key of table k on partition i: the first hash of its range.
func on(m *partitionModel, k TableKey, i int) pkey {
	r := m.tables[k].layout.Ranges[i]
	return pkey{Key: Key{Table: k.Table, Index: k.Index, PK: fmt.Sprint("p", i)}, hash: r.Start}
}

// second is what one simulated second of offered load got.
type second struct {
	Admitted  float64
	Throttled int
}

// load is a steady offered load: perSec requests of units each, evenly
// spaced, on one key.
type load struct {
	k      pkey
	kd     kind
	perSec int
	units  float64
}

// play offers the loads for secs simulated seconds, starting at sim second
// from, in time order, and returns what each second of the first load got.
// scale is the model's TimeScale: simulated offsets become real ones
// divided by it.
func play(m *partitionModel, scale float64, from, secs int, loads ...load) []second {
	out := make([]second, secs)
	for s := range secs {
		type event struct {
			at time.Duration
			n  int
		}
		var evs []event
		for n, l := range loads {
			for j := range l.perSec {
				evs = append(evs, event{time.Duration(from+s)*time.Second + time.Duration(j)*time.Second/time.Duration(l.perSec), n})
			}
		}
		slices.SortStableFunc(evs, func(a, b event) int { return cmp.Compare(a.at, b.at) })
		for _, e := range evs {
			l := loads[e.n]
			now := t0.Add(time.Duration(float64(e.at) / scale))
			ok := m.admit(l.k, l.kd, now)
			if ok {
				m.charge(l.k, l.kd, l.units, now)
			}
			switch {
			case e.n == 0 && ok:
				out[s].Admitted += l.units
			case e.n == 0:
				out[s].Throttled++
			}
		}
	}
	return out
}

// firstThrottle returns the first second with a throttle, or -1.
func firstThrottle(run []second) int {
	for s, r := range run {
		if r.Throttled > 0 {
			return s
		}
	}
	return -1
}

// TestPartitionAt150Percent: one of four partitions (500 WCU) takes 750 WCU/s.
// Its burst (300 s of 500 WCU, drained at 250 WCU/s) lasts 600 s; then it is
// held to its 500 WCU; after 5 minutes of that, adaptive capacity lends it
// the table's unused throughput and it is admitted in full again. The same
// half hour played at TimeScale 50 (36 real seconds) gives the same seconds.
func TestPartitionAt150Percent(t *testing.T) {
	var runs [][]second
	for _, scale := range []float64{1, 50} {
		m := newModel(t, PartitionConfig{Tables: map[TableKey]Throughput{guideTable: {RCU: 5000, WCU: 2000}}, TimeScale: scale, BurstWindow: DynamoDBBurstWindow})
		hot := on(m, guideTable, 2)
		runs = append(runs, play(m, scale, 0, 1800, load{hot, kindWrite, 10, 75}))
		st := m.snapshot(t0)[guideTable].Partitions
		if st[2].Write.Borrowed == 0 || st[0].Write.Units != 0 {
			t.Errorf("scale %v: partition usage %+v, want borrowing on partition 2 only", scale, st)
		}
	}
	run := runs[0]
	if diff := gocmp.Diff(runs[0], runs[1]); diff != "" {
		t.Errorf("TimeScale 50 played differently (-scale 1 +scale 50):\n%s", diff)
	}
	t1 := firstThrottle(run)
	if t1 < 595 || t1 > 605 {
		t.Fatalf("first throttle at %d s, want the burst to last about 600 s", t1)
	}
	var held float64
	for s := t1 + 1; s < t1+300; s++ {
		held += run[s].Admitted
		if run[s].Throttled == 0 {
			t.Errorf("second %d: not throttled during the adaptive delay (%+v)", s, run[s])
		}
	}
	avg := held / 299
	if math.Abs(avg-500) > 5 {
		t.Errorf("admitted %.1f WCU/s while throttled, want the partition's 500", avg)
	}
	t.Logf("burst lasted %d s; then %.1f WCU/s for the adaptive delay; then 750 WCU/s", t1, avg)
	for s := t1 + 301; s < len(run); s++ {
		if run[s] != (second{Admitted: 750}) {
			t.Fatalf("second %d, after the adaptive delay: %+v, want all 750 WCU admitted", s, run[s])
		}
	}
}

func TestAdaptiveModes(t *testing.T) {
	for _, tc := range []struct {
		mode      Adaptive
		throttled bool // in the last minute of half an hour
	}{{AdaptiveInstant, false}, {AdaptiveOff, true}, {AdaptiveDelayed, false}} {
		m := newModel(t, PartitionConfig{Tables: map[TableKey]Throughput{guideTable: {RCU: 5000, WCU: 2000}}, Adaptive: tc.mode})
		run := play(m, 1, 0, 1800, load{on(m, guideTable, 0), kindWrite, 10, 75})
		last := run[1740:]
		got := firstThrottle(last) >= 0
		if got != tc.throttled {
			t.Errorf("Adaptive %d: throttled in the last minute %v, want %v", tc.mode, got, tc.throttled)
		}
		if tc.mode == AdaptiveInstant && firstThrottle(run) >= 0 {
			t.Errorf("AdaptiveInstant: throttled at %d s", firstThrottle(run))
		}
	}
}

// TestAdaptiveBounds: what adaptive capacity lends is the table's unused
// throughput, and never more than the partition maximum of 1,000 WCU.
func TestAdaptiveBounds(t *testing.T) {
	m := newModel(t, PartitionConfig{Tables: map[TableKey]Throughput{guideTable: {RCU: 5000, WCU: 2000}}, Adaptive: AdaptiveInstant})
	hot := load{on(m, guideTable, 0), kindWrite, 20, 100} // 2,000 WCU/s offered
	busy := func(i int) load { return load{on(m, guideTable, i), kindWrite, 10, 50} }
	// Its own burst is spent at 500 WCU/s net within 300 s: then the other
	// partitions use their whole share and nothing is left to lend.
	run := play(m, 1, 0, 400, hot, busy(1), busy(2), busy(3))
	for s, r := range run[1:] { // the first second also spends the full maximum bucket
		if r.Admitted > 1000+hot.units {
			t.Fatalf("second %d: %v WCU admitted, over the 1,000 WCU partition maximum", s+1, r.Admitted)
		}
	}
	var got float64
	for _, r := range run[350:] {
		got += r.Admitted
	}
	if avg := got / 50; avg > 560 {
		t.Errorf("with the table busy: %.0f WCU/s on the hot partition, want about its own 500", avg)
	}
	// The others go quiet: the hot partition borrows up to its maximum.
	for s, r := range play(m, 1, 400, 100, hot)[5:] {
		if r.Admitted < 900 || r.Admitted > 1000+hot.units {
			t.Errorf("second %d with the table idle: %v WCU, want the 1,000 WCU maximum", 405+s, r.Admitted)
		}
	}
	for i := 1; i <= 3; i++ {
		if th := m.snapshot(t0)[guideTable].Partitions[i].Write.Throttled; th != 0 {
			t.Errorf("partition %d, at its share, throttled %d times", i, th)
		}
	}
}

// TestBulkLoadDilution: 11,000 WCU for a load makes 11 partitions; lowered
// to 200 WCU they stay 11, at 200/11 ≈ 18 WCU each, and a partition is held
// to that once its burst is spent.
func TestBulkLoadDilution(t *testing.T) {
	k := TableKey{Table: "bulk"}
	pc := PartitionConfig{Tables: map[TableKey]Throughput{k: {WCU: 11000}}}
	m := newModel(t, pc)
	pc.Tables = map[TableKey]Throughput{k: {WCU: 200}}
	m.configure(Config{Model: Partitioned, Partition: pc}, t0)
	st := m.snapshot(t0)[k]
	if len(st.Partitions) != 11 {
		t.Fatalf("%d partitions after lowering, want 11 (never merged)", len(st.Partitions))
	}
	for _, p := range st.Partitions {
		if math.Abs(p.WCU-200.0/11) > 1e-9 {
			t.Errorf("partition WCU %v, want 200/11", p.WCU)
		}
	}
	// 100 WCU/s on one partition: its burst (300 s × 18.2) is gone after
	// about 67 s, then it gets 18 or 19 WCU each second.
	run := play(m, 1, 0, 200, load{on(m, k, 4), kindWrite, 100, 1})
	var total float64
	for s, r := range run[100:] {
		if r.Admitted < 18 || r.Admitted > 19 {
			t.Errorf("second %d: %v WCU admitted, want 18 or 19", 100+s, r.Admitted)
		}
		total += r.Admitted
	}
	if avg := total / 100; math.Abs(avg-200.0/11) > 0.05 {
		t.Errorf("held to %.2f WCU/s, want 200/11 = %.2f", avg, 200.0/11)
	}
}

// TestStoredBytesSplit: puts add, overwrites replace, deletes subtract; a
// partition over PartitionSize splits into halves of its range with half
// its throughput, and an item collection alone never splits.
func TestStoredBytesSplit(t *testing.T) {
	m := newModel(t, PartitionConfig{Tables: map[TableKey]Throughput{guideTable: {RCU: 5000, WCU: 2000}}, PartitionSize: 1000})
	r := m.tables[guideTable].layout.Ranges[1]
	mid := r.Start + (r.End-r.Start)/2
	put := func(id string, h uint64, size int) {
		m.store(itemWrite{key: pkey{Key: Key{Table: guideTable.Table}, hash: h}, id: id, size: size}, t0)
	}
	bytes := func() []int64 {
		var b []int64
		for _, p := range m.snapshot(t0)[guideTable].Partitions {
			b = append(b, p.Bytes)
		}
		return b
	}
	put("a", r.Start, 400)
	put("a", r.Start, 300) // overwrite
	put("b", r.Start, 600) // the same key: one collection of 900 bytes
	if diff := gocmp.Diff([]int64{0, 900, 0, 0}, bytes()); diff != "" {
		t.Fatalf("bytes (-want +got):\n%s", diff)
	}
	put("c", r.Start, 200) // 1,100 bytes, but one partition-key value
	if got := len(bytes()); got != 4 {
		t.Fatalf("one item collection split: %d partitions", got)
	}
	put("d", mid+1, 50) // a second value, in the upper half: split
	if diff := gocmp.Diff([]int64{0, 1100, 0, 0, 50}, bytes()); diff != "" {
		t.Errorf("bytes after the split (-want +got):\n%s", diff)
	}
	var wcu []float64
	for _, p := range m.snapshot(t0)[guideTable].Partitions {
		wcu = append(wcu, p.WCU)
	}
	if diff := gocmp.Diff([]float64{500, 250, 500, 500, 250}, wcu); diff != "" {
		t.Errorf("WCU after the split (-want +got):\n%s", diff)
	}
	// A Set that leaves the throughput alone is no UpdateTable: the split
	// shares stay.
	m.configure(Config{Model: Partitioned, Partition: PartitionConfig{
		Tables: map[TableKey]Throughput{guideTable: {RCU: 5000, WCU: 2000}}, PartitionSize: 1000}}, t0)
	if got := m.snapshot(t0)[guideTable].Partitions[4].WCU; got != 250 {
		t.Errorf("WCU of the split's upper half after Set: %v, want 250", got)
	}
	put("d", mid+1, -1) // delete
	if got := bytes()[4]; got != 0 {
		t.Errorf("bytes after deleting d: %d, want 0", got)
	}
}

// TestPartitionModelUnknownTable: a table the model does not know is not
// limited, and its items are kept for when it learns it.
func TestPartitionModelUnknownTable(t *testing.T) {
	m := newModel(t, PartitionConfig{PartitionSize: 100})
	k := pkey{Key: Key{Table: "later"}, hash: 1}
	for range 100 {
		if !m.admit(k, kindWrite, t0) {
			t.Fatal("unknown table throttled")
		}
		m.charge(k, kindWrite, 1000, t0)
	}
	m.store(itemWrite{key: k, id: "x", size: 150}, t0)
	m.store(itemWrite{key: pkey{Key: k.Key, hash: math.MaxUint64}, id: "y", size: 150}, t0)
	m.define(tableDef{table: "later", base: &Throughput{OnDemand: true}, described: true}, t0)
	st := m.snapshot(t0)[TableKey{Table: "later"}]
	if !st.OnDemand || len(st.Partitions) != 2 || st.Partitions[0].WCU != PartitionWCU {
		t.Errorf("on-demand table learnt with 300 bytes over 100-byte partitions: %+v, want 2 partitions at 1,000 WCU", st)
	}
}

// TestPartitionDefine: tables follow the CreateTable, UpdateTable and
// DeleteTable requests that pass, DescribeTable only fills in unknown
// tables, and Config's tables win over both.
func TestPartitionDefine(t *testing.T) {
	fixed := TableKey{Table: "fixed"}
	m := newModel(t, PartitionConfig{Tables: map[TableKey]Throughput{fixed: {RCU: 3000}}})
	count := func(k TableKey) int { return len(m.snapshot(t0)[k].Partitions) }
	tp := func(rcu, wcu float64) *Throughput { return &Throughput{RCU: rcu, WCU: wcu} }
	gsi := TableKey{Table: "t", Index: "g"}
	steps := []struct {
		name string
		def  tableDef
		want map[TableKey]int // partition counts; 0: absent
	}{
		{"create", tableDef{table: "t", base: tp(5000, 2000), indexes: map[string]*Throughput{"g": tp(10, 10)}},
			map[TableKey]int{{Table: "t"}: 4, gsi: 1}},
		{"describe is older news", tableDef{table: "t", base: tp(1, 1), described: true}, map[TableKey]int{{Table: "t"}: 4}},
		{"raise the index", tableDef{table: "t", indexes: map[string]*Throughput{"g": tp(5000, 0)}}, map[TableKey]int{gsi: 2}},
		{"on demand keeps partitions", tableDef{table: "t", base: &Throughput{OnDemand: true}}, map[TableKey]int{{Table: "t"}: 4, gsi: 2}},
		{"delete the index", tableDef{table: "t", indexes: map[string]*Throughput{"g": nil}}, map[TableKey]int{gsi: 0}},
		{"config wins", tableDef{table: "fixed", base: tp(9000, 0)}, map[TableKey]int{fixed: 1}},
		{"drop", tableDef{table: "t", dropped: true}, map[TableKey]int{{Table: "t"}: 0}},
		{"a configured table comes back", tableDef{table: "fixed", dropped: true}, map[TableKey]int{fixed: 1}},
	}
	for _, s := range steps {
		m.define(s.def, t0)
		for k, want := range s.want {
			if got := count(k); got != want {
				t.Errorf("%s: %+v has %d partitions, want %d", s.name, k, got, want)
			}
		}
		if s.name == "on demand keeps partitions" && !m.snapshot(t0)[gsi].OnDemand {
			t.Errorf("%s: the index did not switch to on demand", s.name)
		}
	}
}

// TestDefaultBurstWindow: the user sends 300 writes in a second to
// a table of 10 WCU. With the default burst window (one second, as the
// per-key model's Burst) most of them are throttled in that second; with
// DynamoDB's 300 s, 3,000 saved units absorb them and the first throttle
// comes only after 3,000 / (30 − 10) = 150 s of 30 writes per second.
func TestDefaultBurstWindow(t *testing.T) {
	small := TableKey{Table: "small"}
	for _, tc := range []struct {
		name  string
		burst time.Duration
		load  load
		want  func(first int) bool
		about string
	}{
		{"default, 300 writes in a second", 0, load{kd: kindWrite, perSec: 300, units: 1}, func(s int) bool { return s == 0 }, "in the first second"},
		{"default, 30 writes per second", 0, load{kd: kindWrite, perSec: 30, units: 1}, func(s int) bool { return s >= 0 && s <= 1 }, "within 2 s"},
		{"DynamoDB's, 300 writes in a second", DynamoDBBurstWindow, load{kd: kindWrite, perSec: 300, units: 1}, func(s int) bool { return s > 0 || s == -1 }, "not in the first second"},
		{"DynamoDB's, 30 writes per second", DynamoDBBurstWindow, load{kd: kindWrite, perSec: 30, units: 1}, func(s int) bool { return s >= 145 && s <= 155 }, "after about 150 s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newModel(t, PartitionConfig{Tables: map[TableKey]Throughput{small: {RCU: 10, WCU: 10}}, BurstWindow: tc.burst})
			l := tc.load
			l.k = on(m, small, 0)
			secs := 1
			if l.perSec == 30 {
				secs = 200
			}
			if first := firstThrottle(play(m, 1, 0, secs, l)); !tc.want(first) {
				t.Errorf("first throttle at second %d, want one %s", first, tc.about)
			}
		})
	}
}
