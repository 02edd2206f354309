// Package timeseries keeps time-ordered data in one table per period, as
// the DynamoDB guide advises for time series. The current period's table
// takes the writes and carries the throughput. Older tables are read
// rarely. Data past a retention horizon goes by deleting whole tables,
// which costs nothing per item, instead of deleting items one by one.
//
// A Router maps a time to its period's table name (orders_2026-11-22,
// orders_2026-W47 or orders_2026-11) and back. Tables (made with New) adds
// the I/O: creating upcoming periods' tables ahead of time, and retention.
//
// # Per-period throughput
//
// Options given to New make the current periods' tables hot and older
// ones cold:
//
//   - Ensure creates the first Options.HotPeriods periods' tables (default:
//     now's and the next) with the Hot provisioned throughput.
//   - Tune dials every table older than Options.ColdAfter periods down to
//     Cold, with one UpdateTable each, or switches it to on-demand billing.
//     ColdAfter's default, 0, means every table whose period has ended.
//
// Tune skips tables already at or below Cold, or on-demand, so it can run
// as often as one likes. The zero Options change nothing: tables are
// created as the template says and Tune sends no request. Hot and Cold
// apply to the base table. Indexes keep their own throughput, except that
// those without any get Hot's.
//
// Partitions never merge. A table created hot keeps the partitions its hot
// throughput made when it is dialled down, each with a thinner share. Each
// Change reports that share with package partition's model,
// partition.NewLayout(hot).Provision(cold). For example, a table created
// with 600 RCU and 2,000 WCU has 3 partitions. Dialled to 60 RCU and 150
// WCU, each serves 20 RCU and 50 WCU.
//
// A Change carries a Warning when the share falls under WarnWCU (100 WCU)
// or WarnRCU (300 RCU). That is a tenth of what a partition serves at
// most. Below it, one partition-key value, which lives on one partition,
// gets fewer than 100 1-KB writes per second, whatever the table's total.
// The figure is a lower bound on partitions: data past about 10 GB per
// partition splits more. It does not model adaptive capacity.
//
// DynamoDB limits how often a table's provisioned throughput may be
// lowered per UTC day. NumberOfDecreasesToday in DescribeTable counts the
// decreases. At the time of writing, the Developer Guide's quota page
// allows 4 decreases at any time, plus one more for each hour without a
// decrease, up to 27 a day. The quota is DynamoDB's to change. Increases
// are not limited.
//
// Tune lowers each table once, when it crosses ColdAfter, so a time series
// uses one decrease per table. A decrease that DynamoDB refuses with
// LimitExceededException is returned as a *TableError matching
// ErrDecreaseLimit, joined with the other tables' errors. Tune does not
// retry it and goes on with the other tables; a later run does.
//
// The local servers differ from DynamoDB here:
//
//   - Neither DynamoDB Local nor dynalite enforces the decrease limit. The
//     tests simulate the refusal.
//   - dynalite 4.0.0 applies UpdateTable of throughput and of billing mode.
//     DescribeTable shows the new figures once the table is ACTIVE again
//     (immediately, with the updateTableMs of 0 the project runs it with).
//   - dynalite counts NumberOfDecreasesToday but never resets it.
//   - dynalite reports a ProvisionedThroughput of 0 RCU and 0 WCU after a
//     switch to on-demand, which Tune reads as on-demand.
//
// The tests check the hot, cold and on-demand figures through
// DescribeTable on both servers.
//
// # Observability
//
// Ensure, List, Retain and Tune are each one logical call
// (internal/observe). When the client has a TracerProvider, each is a span
// named dynashard.timeseries.<Op>. The span carries the router's Prefix
// (dynashard.timeseries.prefix) and the tables created, listed, deleted or
// changed (dynashard.items). When the client has a MeterProvider, each
// records the call metrics. Their requests are control-plane requests
// (CreateTable, ListTables, DescribeTable, UpdateTable, DeleteTable), which
// consume no capacity units. A dynashard.Usage in the context counts them
// in Requests and reports no capacity.
//
// # Limits and failure modes
//
// A Router fails Router.Check when its Period is not Day, Week or Month,
// or when its Prefix cannot start a DynamoDB table name. Parse and New then
// fail with ErrInvalid before any request, and Table returns "" rather
// than some other router's name. ErrInvalid is the value every dynashard
// package shares (shard.ErrInvalid, dynashard.ErrInvalid).
//
// Ensure does not wait for new tables to become ACTIVE: create them a
// period or more ahead. Retain deletes tables, which DynamoDB refuses while
// a table is being created or updated. Such an error is returned with the
// tables deleted so far, and the next run retries. Tune skips a table that
// is not ACTIVE (just created, or still updating): the next run sees it.
//
// Bad Options fail New with ErrInvalid before any request:
//
//   - a negative HotPeriods or ColdAfter;
//   - an on-demand Hot;
//   - RCU without WCU, or the reverse;
//   - an on-demand Cold with figures;
//   - a Cold above Hot.
//
// Reads that span periods query each period's table (Router.Tables lists
// them in order).
package timeseries
