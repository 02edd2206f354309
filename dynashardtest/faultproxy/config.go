package faultproxy

import (
	"fmt"
	"math"
	"time"

	"github.com/dynashard/dynashard/partition"
)

// DynamoDB's documented per-partition throughput limits (package
// partition's). Set Config.WCU and Config.RCU to these to model a table
// whose every partition-key value lives on its own partition at full
// strength; the partition model caps every partition at them.
const (
	PartitionWCU = partition.PartitionWCU
	PartitionRCU = partition.PartitionRCU
)

// Config selects what the proxy models and injects. The zero Config forwards
// every request unchanged: no capacity limits and no faults. Its model is
// PerKey, which the dynashard proxy command defaults to as well; setting a
// low WCU or RCU (or, with Partitioned, giving a table a low throughput)
// throttles within seconds, since both models keep one second of unused
// capacity by default.
//
// Capacity applies to every request, like the service's own limits: Model
// selects the per-key model (WCU, RCU, Burst) or the partition model
// (Partition). The rate-driven faults (UnprocessedRate, ThrottleRate, Latency
// and Jitter, ErrorRate, ErrorAfterRate, ResetBeforeRate, ResetAfterRate,
// TruncateRate) apply only to requests selected by Ops and Keys.
//
// A request draws its faults in this order and the first hit wins:
// ResetBeforeRate, ErrorRate, ThrottleRate (before forwarding: nothing is
// applied), then, after forwarding (the request is applied), ResetAfterRate,
// ErrorAfterRate, TruncateRate. Latency is added before anything else.
type Config struct {
	// Model selects the capacity model: PerKey (the zero value) with WCU,
	// RCU and Burst below, or Partitioned with Partition. Set may switch
	// models; the new one starts afresh.
	Model Model

	// Partition configures the partition model; PerKey ignores it.
	Partition PartitionConfig

	// WCU and RCU are the write and read capacity units per second that each
	// (table, partition-key value) may consume in the PerKey model; a query on a global secondary
	// index is charged to (table, index, index partition-key value). Zero
	// means unlimited. PartitionWCU and PartitionRCU are DynamoDB's limits.
	WCU, RCU float64

	// Burst is how much unused capacity a key keeps, as a duration of its
	// rate: a key's bucket holds at most rate×Burst units and starts full.
	// Zero means one second, as PartitionConfig.BurstWindow's default, so
	// that a low WCU or RCU throttles within seconds. (DynamoDB keeps up to
	// 300 s, best effort.)
	Burst time.Duration

	// UnprocessedRate is the fraction of BatchWriteItem write requests and
	// BatchGetItem keys that the proxy removes from the request and returns
	// as UnprocessedItems/UnprocessedKeys without forwarding them.
	UnprocessedRate float64

	// ThrottleRate is the fraction of requests (a batch as a whole) failed
	// with ProvisionedThroughputExceededException whatever the capacity.
	ThrottleRate float64

	// Latency is added to every selected request, plus a uniformly random
	// extra in [0, Jitter).
	Latency, Jitter time.Duration

	// ErrorRate is the fraction of requests answered with HTTP 500
	// InternalServerError without being forwarded; ErrorAfterRate the
	// fraction answered so after being forwarded and applied.
	ErrorRate, ErrorAfterRate float64

	// ResetBeforeRate is the fraction of requests whose client connection is
	// reset (TCP RST) before forwarding; ResetAfterRate the fraction reset
	// after the request was forwarded and applied.
	ResetBeforeRate, ResetAfterRate float64

	// TruncateRate is the fraction of responses (to applied requests) cut off
	// half-way: the full Content-Length is announced, half the body is sent,
	// and the connection is reset, which the SDK reports as a retryable
	// "connection reset by peer" while deserializing.
	TruncateRate float64

	// Ops restricts the rate-driven faults to these operations, named without
	// the service prefix ("BatchWriteItem", "Query"). Empty means all.
	Ops []string

	// Keys restricts the rate-driven faults to requests touching one of these
	// partition-key values (S and N as written, B in standard base64); for a
	// batch, UnprocessedRate applies only to the matching entries. Empty
	// means all requests, including those without a known key.
	Keys []string

	// Seed seeds the proxy's random source, so a sequence of requests draws
	// the same faults on every run. Set reseeds it.
	Seed int64
}

// validate reports the first field outside its domain.
func (c Config) validate() error {
	if err := validModel(c.Model); err != nil {
		return err
	}
	if err := c.Partition.validate(); err != nil {
		return err
	}
	if err := c.validateRates(); err != nil {
		return err
	}
	for _, f := range []struct {
		name string
		v    float64
	}{{"WCU", c.WCU}, {"RCU", c.RCU}} {
		if !(f.v >= 0) || math.IsInf(f.v, 1) {
			return fmt.Errorf("faultproxy: %s %v must be finite and >= 0", f.name, f.v)
		}
	}
	for _, f := range []struct {
		name string
		v    time.Duration
	}{{"Burst", c.Burst}, {"Latency", c.Latency}, {"Jitter", c.Jitter}} {
		if f.v < 0 {
			return fmt.Errorf("faultproxy: %s %v is negative", f.name, f.v)
		}
	}
	return nil
}

// validateRates reports the first fault rate outside [0, 1].
func (c Config) validateRates() error {
	for _, f := range []struct {
		name string
		v    float64
	}{
		{"UnprocessedRate", c.UnprocessedRate},
		{"ThrottleRate", c.ThrottleRate},
		{"ErrorRate", c.ErrorRate},
		{"ErrorAfterRate", c.ErrorAfterRate},
		{"ResetBeforeRate", c.ResetBeforeRate},
		{"ResetAfterRate", c.ResetAfterRate},
		{"TruncateRate", c.TruncateRate},
	} {
		if !(f.v >= 0 && f.v <= 1) {
			return fmt.Errorf("faultproxy: %s %v outside [0, 1]", f.name, f.v)
		}
	}
	return nil
}

// burstSeconds is the bucket depth in seconds of rate.
func (c Config) burstSeconds() float64 {
	if c.Burst <= 0 {
		return 1
	}
	return c.Burst.Seconds()
}
