// Package faultproxy makes a local DynamoDB-compatible server (DynamoDB
// Local, dynalite) behave like DynamoDB under load, for tests. It is an HTTP
// proxy on loopback, between the AWS SDK and the server. It throttles
// requests as DynamoDB does (ProvisionedThroughputExceededException,
// UnprocessedItems, UnprocessedKeys). It injects the faults a network and a
// service produce: latency, HTTP 500s, reset connections and cut-off
// responses. Local servers do none of these, and code that retries and
// backs off is only proven by meeting them.
//
// # In a test
//
// The easy way is the test kit. Options.Proxy of package dynashardtest puts
// a proxy in front of the server it starts. The handle's Endpoint and
// Client go through it.
//
//	srv := dynashardtest.Start(t, func(o *dynashardtest.Options) {
//		o.Proxy = &faultproxy.Config{Model: faultproxy.Partitioned}
//	})
//	// A table created with ProvisionedThroughput through srv.CreateTable
//	// or srv.Client() is now throttled like a provisioned table.
//	client := srv.Client(func(o *dynamodb.Options) { o.RetryMaxAttempts = 1 })
//
// srv.Proxy() returns the proxy, for its Stats and for Set, which changes
// the model or the faults mid-test.
//
// By hand, the proxy goes in front of any server that does not check
// signatures. (The proxy forwards requests as they were signed, for its own
// address.)
//
//	p, err := faultproxy.New("http://127.0.0.1:8000", faultproxy.Config{
//		UnprocessedRate: 0.5, Seed: 1,
//	})
//	if err != nil {
//		t.Fatal(err)
//	}
//	defer p.Close()
//	client := dynamodb.New(dynamodb.Options{BaseEndpoint: aws.String(p.URL()), ...})
//
// For services written with another SDK (JavaScript, Python, Java), the
// same proxy runs as a command: "dynashard proxy -target
// http://127.0.0.1:8001" (github.com/dynashard/dynashard/cmd/dynashard).
//
// The SDK retries throttling and 500s by itself: three attempts by default,
// five with dynashard.RetryForFanOut. So a test that wants the error makes
// one attempt (RetryMaxAttempts = 1). A test of code that retries asserts
// on what the proxy counted (Stats) rather than on time.
//
// # What each model simulates
//
// Config.Model selects whose budget a request spends.
//
// PerKey, the default, gives every partition-key value a budget of its own
// (Config.WCU and Config.RCU per second). It simulates a table whose every
// key lives on a partition of its own, at up to DynamoDB's per-partition
// maxima (PartitionWCU, PartitionRCU). It proves that code survives
// throttling and backs off. It does not prove that sharding pays off, since
// keys never compete.
//
// Partitioned simulates DynamoDB's partitions as its developer guide
// describes them:
//
//   - A provisioned table's throughput is divided evenly among its
//     partitions and not shared.
//   - Many partition-key values hash to one partition and share its budget.
//   - Raising throughput doubles the partition count, and lowering it never
//     merges them.
//   - A partition that fills splits in two, each half with half the
//     throughput.
//   - Unused capacity is kept as burst: one second of it by default,
//     DynamoDB's 300 s with DynamoDBBurstWindow.
//   - Adaptive capacity may lend a hot partition the table's unused
//     throughput after a delay.
//   - An on-demand table's partitions are capped at the per-partition
//     maxima only.
//
// A table's throughput comes from the CreateTable and UpdateTable that pass
// through the proxy. A time scale plays simulated time faster (or slower)
// than real time. A small partition size makes splits happen in a test.
// The details, and what it leaves out, are under Capacity models below.
//
// Faults (Config's rates, Latency and Jitter) come on top of either model,
// drawn from a seeded random source.
//
// # Requests
//
// Requests are DynamoDB's JSON protocol: the operation is in the
// X-Amz-Target header, and the body is JSON. The proxy forwards the
// client's headers, but not Accept-Encoding, so that it can read the
// answers. Local servers do not verify signatures, so a rewritten body is
// accepted. Every response the proxy sends carries an X-Amz-Crc32 computed
// over the body it actually sends. A request the proxy cannot parse is
// forwarded unchanged, without keys or capacity.
//
// To find a table's partition key (and, for the partition model, its
// throughput), the proxy sends its own DescribeTable to the target once per
// table. It sends it with the credentials headers of the request that
// needed it, and caches the answer. The answer is forgotten when a
// CreateTable, DeleteTable or UpdateTable for that table passes through.
//
// # Capacity models
//
// Config.Model selects one of two capacity models. Both charge units the
// same way (below) and refuse a request the same way. They differ in whose
// budget a key spends.
//
// PerKey (the default) applies with Config.WCU or Config.RCU set. Each
// partition-key value of each table has a token bucket per kind. So does
// each partition-key value of each global secondary index, for queries on
// it. A bucket refills at that many units per second and holds Burst
// seconds of them, starting full.
//
// A request is admitted while its key's balance is positive, and is then
// charged in full. So the balance can go negative. A key in debt is refused
// until the refill repays it. Units are charged as DynamoDB counts them:
//
//   - PutItem and BatchWriteItem puts: one WCU per started KB of the item,
//     at least one, before forwarding. The item is sized by DynamoDB's
//     rules: attribute names and values, UTF-8.
//   - UpdateItem, DeleteItem and batch deletes: one WCU, before forwarding.
//     The proxy cannot see the size of the stored item.
//   - GetItem: one RCU per started 4 KB of the returned item, at least one,
//     half for eventually consistent reads, charged after forwarding. A
//     missing item costs the minimum.
//   - Query: the same on the sum of the returned items' sizes, after
//     forwarding. It is charged to the partition key bound by
//     KeyConditionExpression (or the legacy KeyConditions).
//   - BatchGetItem: each returned item like GetItem, charged to its own
//     partition key. Each forwarded key with no returned item, and not left
//     unprocessed by the target, costs the minimum.
//
// Sizes are those of the returned, projected items. That undercounts reads
// with a projection: DynamoDB charges the whole item. Scan, transactions
// and PartiQL are forwarded without charge; their faults still apply.
//
// Partitioned applies the guide's partitions, with the arithmetic of
// package partition. That package is the one implementation the planner
// and the docs use too.
//
//   - Tables. Every table, and every global secondary index separately, has
//     a partition.Layout. Its throughput comes from PartitionConfig.Tables.
//     Failing that, it comes from the CreateTable and UpdateTable requests
//     the target accepted as they passed through (ProvisionedThroughput;
//     BillingMode PAY_PER_REQUEST is on demand). Failing that, it comes
//     from the proxy's own DescribeTable of a table it first meets.
//   - A new table gets max(ceil(RCU/3000 + WCU/1000), 1) partitions, with
//     the throughput divided evenly. An update that needs more doubles
//     them, and lowering never merges them. For example, 11,000 WCU lowered
//     to 200 leaves 11 partitions of about 18 WCU.
//   - An on-demand table has one partition to begin with, more by size,
//     each capped at the per-partition maxima only. A table the model knows
//     nothing of is not limited.
//   - Keys. A partition-key value's place is partition.KeyHash of it: the
//     first 8 bytes of the MD5 of its canonical bytes, dynashard's fixed
//     hash, not DynamoDB's. Its partition is the one whose range holds that
//     place. So distinct keys share a partition's budget as they do on
//     DynamoDB. Stats.Tables shows each partition's range.
//   - Throughput. Each partition has, for reads and for writes, a token
//     bucket refilled at its share, starting full. The bucket holds
//     BurstWindow of the share: the burst capacity. BurstWindow is 1 s by
//     default, so that a low throughput throttles within seconds.
//     DynamoDBBurstWindow, 300 s, is the service's.
//   - Each partition also has a bucket capping it at 3,000 RCU / 1,000 WCU
//     over one second, which burst and adaptive capacity never pass. A
//     request is admitted while both are positive (or adaptive capacity
//     lends, below). It is charged in full, as in the per-key model.
//   - Adaptive capacity. A request that finds its partition's own bucket
//     spent starts a throttling episode. The episode lasts until that
//     bucket is full again.
//   - With AdaptiveDelayed (the default), the partition borrows once an
//     episode has lasted AdaptiveDelay (5 min by default; the guide says
//     5–30 minutes). It may then spend the table's unused throughput: a
//     bucket of the table's whole throughput over one second, which every
//     partition's consumption drains.
//   - AdaptiveInstant lends from the first refusal on, as AWS's current
//     documentation describes. AdaptiveOff never lends. Borrowed units are
//     counted in Usage.Borrowed.
//   - Size. Stored bytes per partition follow the writes the target applied
//     through the proxy. PutItem and batch puts add the item (sized as
//     above), or replace the one they overwrite. Deletes subtract it.
//     UpdateItem counts only when it returns ALL_NEW.
//   - A partition over PartitionSize (10 GB by default; a few KB in tests)
//     splits with partition.Layout.Split. It becomes two halves of its
//     range, each with half its throughput, the upper half appended last.
//     The proxy keeps every such item's key and size in memory.
//   - Time. The model runs on its own clock, TimeScale simulated seconds per
//     real second. Bucket refills, the burst window, the one-second maxima
//     and the adaptive delay are all simulated time.
//   - At TimeScale 60, a 500 WCU partition admits 30,000 WCU per real
//     second, and half an hour of DynamoDB passes in 30 s. The client must
//     offer load 60 times as fast to simulate the same rate. Injected
//     latency, the target's own clock (table status, TTL) and the request
//     rate are not scaled.
//
// The partition model does not model:
//
//   - DynamoDB's real hash and split points;
//   - splits of one item collection by sort key (a key bigger than
//     PartitionSize stays on one partition);
//   - "split for heat";
//   - the writes a table's global indexes consume (an index's partitions
//     serve Queries on it; its bytes are not tracked);
//   - local secondary indexes;
//   - transactions, Scan and PartiQL (not charged);
//   - the initial 4,000 WCU / 12,000 RCU of a new on-demand table, and
//     on-demand's doubling of previous peaks;
//   - the quota of throughput decreases per day;
//   - data written to a table before the proxy saw it.
//
// A single-item request or Query on a key over budget is answered with
// ProvisionedThroughputExceededException, exactly as the service sends it:
// HTTP 400, application/x-amz-json-1.0, the service's __type and message.
// So the SDK's retryer and typed errors see the real thing.
//
// A batch entry on a key over budget is removed from the forwarded request,
// and returned in UnprocessedItems/UnprocessedKeys. When every entry of a
// batch is refused for capacity, the whole call fails with
// ProvisionedThroughputExceededException instead, as DynamoDB documents.
//
// # Faults
//
// Config's rates draw, per request, from one random source seeded by
// Config.Seed. So a sequential client sees the same faults on every run.
// Config.Ops and Config.Keys restrict them to some operations and some
// partition-key values (one hot shard gets the latency).
//
// UnprocessedRate removes batch entries like the capacity model does. When
// it leaves nothing to forward, the proxy answers the batch itself, with
// every entry unprocessed and zero ConsumedCapacity. The other faults are:
//
//   - a delay (Latency plus up to Jitter);
//   - HTTP 500 InternalServerError before forwarding (not applied) or after
//     (applied);
//   - a TCP reset before forwarding (not applied) or after (applied, though
//     the client sees only an error);
//   - a response cut off half-way by a reset (applied).
//
// # Counters
//
// Stats returns per-operation and per-key Counters: requests, forwards,
// throttles, unprocessed entries, units charged, injected delays and
// faults. Under the partition model, Stats.Tables also lists every table's
// partitions: range, throughput, stored bytes, and units used, borrowed and
// throttled. Tests assert on them rather than on time.
package faultproxy
