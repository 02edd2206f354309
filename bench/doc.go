// Command dynashard-bench measures each of dynashard's practices beside the
// code one would write by hand, against a local DynamoDB-compatible server.
//
// Usage:
//
//	dynashard-bench [-quick] [-server ddblocal|dynalite | -endpoint URL] [-scenarios 1,2,...] [-out DIR]
//
// In a checkout of the repository, "cd bench && go run . -quick" runs every
// scenario in under a minute, and "make bench-report" at the root rewrites
// the published results in docs/bench (about 4 minutes).
//
// It starts DynamoDB Local (or dynalite, or uses -endpoint) behind
// dynashardtest/faultproxy, which gives every partition-key value its own token
// bucket: DynamoDB's per-key limits of 1,000 WCU/s and 3,000 RCU/s scaled
// down (100 and 300 by default) so that the local server is not the limit.
// The scenarios are 1 hot-day writes, 2 day reads, 3 the merge, 4 the
// calculated strategies' skew, 5 bulk loading, 6 chunked items and 7 hot-day
// writes on a provisioned table under the proxy's partition model (keys
// share their partition's throughput; 4,000 WCU, 4 partitions, at time scale
// 0.1 by default, so the table admits 400 WCU per real second and that is
// the limit line); each runs beside its naive baseline and reports the CPU
// the client, the server and the whole machine used, so that a figure
// limited by the machine is told apart from one limited by the model.
//
// It prints a Markdown report to standard output and progress to standard
// error; with -out it also writes results.md and the plots there. An
// interrupt stops the run and still prints what was measured; a failed
// scenario ends the run with the report up to it. It exits with status 2
// for a bad command line and 1 for a failed run.
//
// This is its own module, github.com/dynashard/dynashard/bench, so that the
// plotting code (gonum.org/v1/plot and its font, PDF and LaTeX modules) is
// no dependency of the library or of the dynashard command. Its go.mod
// replaces the library with the working tree (../), so it always measures
// the code beside it.
package main
