package faultproxy

import (
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// BenchmarkCapacityModels measures one admit and charge, the work the proxy
// does per request under p.mu, for the per-key model (the baseline) and the
// partition model over tables of 4 and 54 partitions (54: a table at the
// default quota of 40,000 RCU and 40,000 WCU), on 1,000 distinct keys.
// On 2 shared AMD EPYC cores (2026-11) all three cost 100–150 ns and no
// allocation: the partition model's linear Find does not show at these
// sizes.
func BenchmarkCapacityModels(b *testing.B) {
	keys := make([]pkey, 1000)
	for i := range keys {
		pk := fmt.Sprint("k", i)
		keys[i] = pkey{Key: Key{Table: "t", PK: pk}, hash: keyHash(&types.AttributeValueMemberS{Value: pk})}
	}
	for _, bc := range []struct {
		name string
		cfg  Config
	}{
		{"per-key", Config{WCU: 1000}},
		{"partitions=4", Config{Model: Partitioned, Partition: PartitionConfig{Tables: map[TableKey]Throughput{{Table: "t"}: {RCU: 5000, WCU: 2000}}}}},
		{"partitions=54", Config{Model: Partitioned, Partition: PartitionConfig{Tables: map[TableKey]Throughput{{Table: "t"}: {RCU: 40000, WCU: 40000}}}}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			m := modelOf(bc.cfg.Model)
			m.configure(bc.cfg, t0)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				k, now := keys[i%len(keys)], t0.Add(time.Duration(i)*time.Microsecond)
				if m.admit(k, kindWrite, now) {
					m.charge(k, kindWrite, 1, now)
				}
				i++
			}
		})
	}
}
