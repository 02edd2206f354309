// Package partition encodes the DynamoDB developer guide's partition
// arithmetic. A table's partitions follow from its provisioned throughput
// and size: 3,000 RCU, 1,000 WCU and about 10 GB per partition. Raising
// throughput past what they serve doubles their count. A full partition
// splits in two, with half the throughput each. Partitions never merge, so
// lowering throughput thins every partition.
//
// The package models that:
//
//   - [NewLayout], [Layout.Provision] and [Layout.Split] model a table's
//     partitions.
//   - [Recommend] picks the shard count for one hot logical key (package
//     shard) and states what reading it back costs.
//   - [RecommendFor] does the same against a given table's smallest
//     partition share, instead of DynamoDB's 1,000 WCU.
//   - [PlanBulkLoad] answers the guide's bulk-load question. It gives the
//     throughput a load needs, the partitions it leaves behind, the
//     per-partition share after throughput is lowered again, and a slower
//     load that leaves fewer.
//
// It is the one implementation of that arithmetic. The planner (dynashard
// plan), the fault proxy's partition model and the documentation all use
// it.
//
// # Key-hash space
//
// DynamoDB places an item on a partition by hashing its partition-key
// value. All items with one value (an item collection) live together.
// Many values share a partition and its throughput. The model reproduces
// that with a 64-bit key-hash space. [KeyHash] maps a value to a point of
// it, and every partition of a [Layout] holds one [Range] of it.
//
//   - NewLayout splits the space evenly: partition i of n holds
//     [i·2⁶⁴/n, (i+1)·2⁶⁴/n).
//   - Provision, when it doubles the partition count, splits every range in
//     two, lower half first. Partition i's halves become partitions 2i and
//     2i+1 (repeatedly, if one doubling is not enough).
//   - Split halves one range. The lower half stays at i, and the upper half
//     is appended at the end, each with half the throughput.
//
// Whatever the sequence of those calls, the ranges tile the space: no gap,
// no overlap. So [Layout.Find] names exactly one partition for every hash.
// A Split keeps the table's total throughput.
//
// KeyHash is dynashard's own fixed hash: the first 8 bytes of the MD5 of
// the value's canonical bytes. It is not DynamoDB's hash, which is not
// published. It tells which of a model table's keys share a partition, so
// that tests and plans agree with each other. It does not tell which keys
// share one on a real table. The statistics are the same (a uniform hash);
// the identities are not.
//
// # What is not modelled
//
// Adaptive capacity, burst capacity, on-demand tables and "split for heat"
// are behaviours of the service over time, not arithmetic. The fault
// proxy's partition model (dynashardtest/faultproxy) adds burst, adaptive
// capacity and on-demand caps on top of these layouts. Three things are not
// modelled at all:
//
//   - splits by sort key inside one item collection;
//   - the exact split point DynamoDB chooses;
//   - local secondary indexes' 10 GB item-collection limit.
//
// Everything here is pure arithmetic with no I/O, safe for concurrent use.
// Figures that are negative, not finite or beyond [MaxPartitions] are
// refused with [ErrWorkload] rather than answered with nonsense.
package partition
