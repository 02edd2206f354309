// Package record reads and writes a base's layout record, and caches
// what this process knows of it. The record is one item per base. It
// holds the layout's shape and the base's shard-count history. Its
// format is stable: shard's IsRecord documents it for other languages.
//
// Package shard runs the protocol that changes a record (Reshard,
// Rebalance) and writes items under it. Package scatter reads the
// history with its own read-only client. Both describe their
// shard.Layout through Describe, from its public values alone. So one
// layout means one description, and one cache entry per base, through
// either package.
//
// The cache is per process and per database (see Database). A process
// sees its own Reshard at once, whatever client it uses.
package record
