// Package timeseries keeps time-ordered data in one table per period, as the
// DynamoDB guide advises for time series: the current period's table takes
// the writes and carries the throughput, older tables are read rarely, and
// data past a retention horizon goes by deleting whole tables, which costs
// nothing per item, instead of deleting items one by one.
//
// A Router maps a time to its period's table name (orders_2026-11-22,
// orders_2026-W47 or orders_2026-11) and back. Tables (made with New) adds
// the I/O: creating upcoming periods' tables ahead of time, and retention.
//
// # Per-period throughput
//
// Options given to New make the current periods' tables hot and older
// ones cold. Ensure creates the first Options.HotPeriods periods' tables
// (default: now's and the next) with the Hot provisioned throughput; Tune
// dials every table older than Options.ColdAfter periods (default 0: every
// table whose period has ended) down to Cold, with one UpdateTable each, or
// switches it to on-demand billing. Tables already at or below Cold, or
// on-demand, are skipped, so Tune can run as often as one likes. The zero
// Options change nothing: tables are created as the template says and Tune
// sends no request. Hot and Cold apply to the base table; indexes keep
// their own throughput, except that those without any get Hot's.
//
// Partitions never merge: a table created hot keeps the partitions its hot
// throughput made when it is dialled down, each with a thinner share. Each
// Change reports that share with package partition's model,
// partition.NewLayout(hot).Provision(cold): a table created with 600 RCU
// and 2,000 WCU has 3 partitions, and dialled to 60 RCU and 150 WCU each
// serves 20 RCU and 50 WCU. A Change carries a Warning when the share falls
// under WarnWCU (100 WCU) or WarnRCU (300 RCU), a tenth of what a partition
// serves at most: below it one partition-key value, which lives on one
// partition, gets fewer than 100 1-KB writes per second, whatever the
// table's total. The figure is a lower bound on partitions (data past
// about 10 GB per partition splits more) and does not model adaptive
// capacity.
//
// DynamoDB limits how often a table's provisioned throughput may be
// lowered per UTC day (NumberOfDecreasesToday in DescribeTable counts them;
// at the time of writing the Developer Guide's quota page allows 4
// decreases at any time plus one more for each hour without a decrease,
// up to 27 a day, but the quota is DynamoDB's to change); increases are not
// limited. Tune lowers each table once, when it crosses ColdAfter, so a
// time series uses one decrease per table. A decrease DynamoDB refuses
// with LimitExceededException is returned as a *TableError matching
// ErrDecreaseLimit, joined with the other tables' errors; Tune does not
// retry it, and goes on with the other tables; a later run does.
//
// The local servers differ from DynamoDB here: neither DynamoDB Local nor
// dynalite enforces the decrease limit (the tests simulate the refusal).
// dynalite 4.0.0 applies UpdateTable of throughput and of billing mode, and
// DescribeTable shows the new figures once the table is ACTIVE again
// (immediately with the updateTableMs of 0 the project runs it with); it
// counts NumberOfDecreasesToday but never resets it, and switching to
// on-demand reports a ProvisionedThroughput of 0 RCU and 0 WCU, which Tune
// reads as on-demand. The tests check the hot, cold and on-demand figures
// through DescribeTable on both servers.
//
// # Observability
//
// Ensure, List, Retain and Tune are each one logical call
// (internal/observe): a span named dynashard.timeseries.<Op> when the
// client has a TracerProvider, with the router's Prefix
// (dynashard.timeseries.prefix) and the tables created, listed, deleted
// or changed (dynashard.items), and the call metrics when it has a
// MeterProvider. Their requests are control-plane requests (CreateTable,
// ListTables, DescribeTable, UpdateTable, DeleteTable), which consume no
// capacity units: a dynashard.Usage in the context counts them in
// Requests and reports no capacity.
//
// # Limits and failure modes
//
// A Router whose Period is not Day, Week or Month, or whose Prefix cannot
// start a DynamoDB table name, fails Router.Check; Parse and New then fail
// with ErrInvalid before any request, and Table returns "" rather than some
// other router's name. ErrInvalid is the value every dynashard package
// shares (shard.ErrInvalid, dynashard.ErrInvalid).
//
// Ensure does not wait for new tables to become ACTIVE: create them a
// period or more ahead. Retain deletes tables, which DynamoDB refuses while
// a table is being created or updated; such an error is returned with the
// tables deleted so far, and the next run retries. Tune skips a table that
// is not ACTIVE (just created, or still updating): the next run sees it.
// Bad Options (negative HotPeriods or ColdAfter, an on-demand Hot, RCU
// without WCU or the reverse, an on-demand Cold with figures, a Cold above
// Hot) fail New with ErrInvalid before any request. Reads that span periods
// query each period's table (Router.Tables lists them in order).
package timeseries
