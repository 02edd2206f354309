package faultproxy

import (
	"fmt"
	"time"

	"github.com/dynashard/dynashard/partition"
)

// Model selects the proxy's capacity model. The zero value is PerKey.
type Model int

const (
	// PerKey gives every partition-key value buckets of its own, at
	// Config.WCU and Config.RCU: it proves retry paths, not partitioning.
	PerKey Model = iota
	// Partitioned models DynamoDB's partitions as the guide explains them:
	// keys share their partition's throughput (see PartitionConfig and the
	// package doc). Config.WCU, RCU and Burst are ignored.
	Partitioned
)

// Adaptive selects how the partition model's adaptive capacity lends a hot
// partition the table's unused throughput. The zero value is
// AdaptiveDelayed.
type Adaptive int

const (
	// AdaptiveDelayed lends once the partition has been throttled for
	// PartitionConfig.AdaptiveDelay: the guide's "5–30 minutes".
	AdaptiveDelayed Adaptive = iota
	// AdaptiveInstant lends as soon as the partition's own capacity (burst
	// included) is spent, as AWS's current documentation says it does.
	AdaptiveInstant
	// AdaptiveOff never lends: every partition lives on its own share.
	AdaptiveOff
)

// Defaults of PartitionConfig.
//
// DefaultBurstWindow is one second, as Config.Burst's default is for the
// per-key model, so that a test or a service that sets a low capacity is
// throttled within seconds whichever model it picks: with DynamoDB's own
// 300 s, a table of 10 WCU absorbs 3,000 units before its first throttle.
// Set BurstWindow to DynamoDBBurstWindow to model the service's burst
// capacity (the planner's bulk-load and hot-day questions do).
const (
	DefaultBurstWindow   = time.Second       // one second of a partition's throughput, as Config.Burst's default
	DynamoDBBurstWindow  = 300 * time.Second // DynamoDB keeps up to 300 s of unused capacity, best effort
	DefaultAdaptiveDelay = 5 * time.Minute   // the low end of the guide's 5–30 minutes
)

// TableKey names a table, or one of its global secondary indexes when Index
// is set, in PartitionConfig.Tables and Stats.Tables.
type TableKey struct {
	Table, Index string
}

// Throughput is the capacity of a table or global secondary index in the
// partition model. The zero value is a provisioned table of 0 RCU and
// 0 WCU, which admits nothing (DynamoDB requires at least 1 of each).
type Throughput struct {
	RCU, WCU float64 // provisioned read and write units per second
	// OnDemand is a PAY_PER_REQUEST table: RCU and WCU are ignored, and
	// each partition serves up to 3,000 RCU and 1,000 WCU per second.
	OnDemand bool
}

// PartitionConfig configures the partition model (Config.Model =
// Partitioned). Every field's zero value is its documented default.
type PartitionConfig struct {
	// Tables sets the throughput of tables and global secondary indexes,
	// overriding what their CreateTable, UpdateTable and DescribeTable
	// say. Set applies changed figures as an UpdateTable would: the
	// partition count doubles when needed and never shrinks. A table not
	// listed takes its throughput from the requests that pass through.
	Tables map[TableKey]Throughput

	// BurstWindow is how much unused capacity a partition keeps, as a
	// duration of its own throughput; a partition starts with it full.
	// Zero means DefaultBurstWindow (1 s); DynamoDBBurstWindow (300 s) is
	// the service's.
	BurstWindow time.Duration

	// Adaptive selects the adaptive-capacity model; AdaptiveDelay is the
	// delay of AdaptiveDelayed. Zero means DefaultAdaptiveDelay (5 min).
	Adaptive      Adaptive
	AdaptiveDelay time.Duration

	// PartitionSize is the bytes a partition holds before it splits in
	// two. Zero means 10 GB (partition.PartitionBytes); tests set a few KB.
	PartitionSize int64

	// TimeScale is the simulated seconds of the model's clock per real
	// second (see the package doc for what it covers). Zero means 1.
	TimeScale float64
}

// partitionSettings are a PartitionConfig's figures with defaults applied.
type partitionSettings struct {
	burst    float64 // seconds
	adaptive Adaptive
	delay    time.Duration
	size     int64
	scale    float64
}

func (pc PartitionConfig) settings() partitionSettings {
	s := partitionSettings{burst: DefaultBurstWindow.Seconds(), adaptive: pc.Adaptive,
		delay: DefaultAdaptiveDelay, size: partition.PartitionBytes, scale: 1}
	if pc.BurstWindow > 0 {
		s.burst = pc.BurstWindow.Seconds()
	}
	if pc.AdaptiveDelay > 0 {
		s.delay = pc.AdaptiveDelay
	}
	if pc.PartitionSize > 0 {
		s.size = pc.PartitionSize
	}
	if pc.TimeScale > 0 {
		s.scale = pc.TimeScale
	}
	return s
}

// maxTimeScale keeps the simulated clock within time.Duration's range for
// any run shorter than a year.
const maxTimeScale = 1e6

// validate reports the first field outside its domain.
func (pc PartitionConfig) validate() error {
	switch {
	case pc.BurstWindow < 0 || pc.AdaptiveDelay < 0:
		return fmt.Errorf("faultproxy: BurstWindow %v and AdaptiveDelay %v must not be negative", pc.BurstWindow, pc.AdaptiveDelay)
	case pc.Adaptive < AdaptiveDelayed || pc.Adaptive > AdaptiveOff:
		return fmt.Errorf("faultproxy: unknown Adaptive %d", pc.Adaptive)
	case pc.PartitionSize < 0:
		return fmt.Errorf("faultproxy: PartitionSize %d is negative", pc.PartitionSize)
	case !(pc.TimeScale >= 0 && pc.TimeScale <= maxTimeScale):
		return fmt.Errorf("faultproxy: TimeScale %v outside [0, %g]", pc.TimeScale, maxTimeScale)
	}
	for k, tp := range pc.Tables {
		if k.Table == "" {
			return fmt.Errorf("faultproxy: Tables: %+v has no table name", k)
		}
		if _, err := partition.ThroughputPartitions(tp.RCU, tp.WCU); err != nil && !tp.OnDemand {
			return fmt.Errorf("faultproxy: Tables[%+v]: %w", k, err)
		}
	}
	return nil
}

// modelOf returns a new, unconfigured capacity model of kind m.
func modelOf(m Model) capacityModel {
	if m == Partitioned {
		return newPartitionModel()
	}
	return newKeyBuckets()
}

// validModel reports whether m is a known Model.
func validModel(m Model) error {
	if m != PerKey && m != Partitioned {
		return fmt.Errorf("faultproxy: unknown Model %d", m)
	}
	return nil
}
