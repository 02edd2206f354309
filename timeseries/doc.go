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
// tables deleted so far, and the next run retries. Reads that span periods
// query each period's table (Router.Tables lists them in order).
package timeseries
