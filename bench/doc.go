// Command dynashard-bench measures each of dynashard's practices beside the
// code one would write by hand, against a local DynamoDB-compatible server.
//
// Usage:
//
//	dynashard-bench [-quick] [-server ddblocal|dynalite | -endpoint URL] [-scenarios 1,2,...] [-out DIR]
//
// In a checkout of the repository, "cd bench && go run . -quick" runs every
// scenario in under a minute. "make bench-report" at the root rewrites the
// published results in docs/bench (about 5 minutes).
//
// It starts DynamoDB Local (or dynalite, or uses -endpoint) behind
// dynashardtest/faultproxy. The proxy gives every partition-key value its
// own token bucket. DynamoDB's per-key limits of 1,000 WCU/s and 3,000
// RCU/s are scaled down (100 and 300 by default), so that the local server
// is not the limit.
//
// The scenarios are:
//
//  1. hot-day writes;
//  2. day reads;
//  3. the merge;
//  4. the calculated strategies' skew;
//  5. bulk loading;
//  6. chunked items;
//  7. hot-day writes on a provisioned table under the proxy's partition
//     model, where keys share their partition's throughput. By default the
//     table has 4,000 WCU and 4 partitions at time scale 0.1. So it admits
//     400 WCU per real second, and that is the limit line.
//  8. online resharding;
//  9. one item over three tables (package split);
//  10. the client's own cost: the CPU per call of the library beside the
//     plain SDK code doing the same requests.
//
// Each runs beside its naive baseline. Each reports the CPU that the
// client, the server and the whole machine used. So a figure limited by the
// machine is told apart from one limited by the model.
//
// Scenario 9 talks to the server directly, without the proxy. Its figures
// are the capacity units the server reports (ReturnConsumedCapacity) for
// the guide's 3 KB product, in one table and split over ProductCatalog,
// ProductAvailability and ExtendedProductCatalog. It also gives the latency
// of the product page's reads against one GetItem of the whole item in the
// same run, as a ratio.
//
// Scenario 10 talks to the server directly too, so the process's CPU time
// is the client's alone. It measures the CPU and allocations per Put, Get,
// Update and Delete, per item of a Load and a scatter read, and per MiB of
// a chunk write and read. Each has a plain SDK method beside it in the same
// run, taking turns in rounds. A CPU profile over the same windows,
// labelled by method, shows where each method's CPU goes.
// BenchmarkClientCost times the calls with the server's answers replayed
// from memory, for a profile without the network.
//
// The proxy runs in the bench's own process, so the process's CPU time is
// the client's and the proxy's together. Scenarios 1, 6 and 7 tell them
// apart:
//
//   - Every proxy is started under the pprof label dynashard-bench=proxy.
//     The goroutines it starts inherit it: its HTTP server, each
//     connection's handler, its client to the server.
//   - A CPU profile is taken over each measured window.
//   - The process's CPU time (getrusage) is divided in the proportions of
//     that profile's samples. The parts are the client (the bench's
//     writers, the library and the SDK), the proxy, and the Go runtime's
//     background work (GC workers), which both cause.
//
// They report client and proxy CPU in cores, and per write (µs) or per MiB
// (ms). A separate proxy process (dynashard proxy) would measure the client
// alone too. But the scenarios read the proxy's counters (Stats) in
// process. The profile is parsed with github.com/google/pprof/profile, a
// dependency of this module only. The other scenarios report the whole
// process as client CPU. With -cpuprofile, the windows' profiles and the
// rest of the run's are merged into one file, the proxy's samples labelled.
//
// It prints a Markdown report to standard output and progress to standard
// error. With -out it also writes results.md and the plots there. An
// interrupt stops the run and still prints what was measured. A failed
// scenario ends the run with the report up to it. It exits with status 2
// for a bad command line and 1 for a failed run.
//
// This is its own module, github.com/dynashard/dynashard/bench. So the
// plotting code (gonum.org/v1/plot and its font, PDF and LaTeX modules) is
// no dependency of the library or of the dynashard command. Its go.mod
// replaces the library with the working tree (../), so it always measures
// the code beside it.
package main
