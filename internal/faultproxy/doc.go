// Package faultproxy is a loopback HTTP proxy that sits between the AWS SDK
// and a local DynamoDB-compatible server (DynamoDB Local, dynalite) and makes
// it behave like real DynamoDB under load: per-partition throttling,
// UnprocessedItems/UnprocessedKeys, latency, HTTP 500s, dropped connections
// and cut-off responses. Local servers do none of these, and code that
// retries and backs off is only proven by meeting them.
//
//	p, err := faultproxy.New(server.Endpoint, faultproxy.Config{
//		WCU: faultproxy.PartitionWCU, RCU: faultproxy.PartitionRCU,
//		UnprocessedRate: 0.5, Seed: 1,
//	})
//	defer p.Close()
//	client := localddb.NewClient(p.URL())
//
// # Requests
//
// Requests are DynamoDB's JSON protocol: the operation is in the
// X-Amz-Target header, the body is JSON. The proxy forwards the client's
// headers (but not Accept-Encoding, so that it can read the answers);
// local servers do not verify signatures, so a rewritten body is accepted.
// Every response it sends carries an X-Amz-Crc32 computed over the body it
// actually sends. A request the proxy cannot parse is forwarded unchanged,
// without keys or capacity.
//
// To find a table's partition key the proxy sends its own DescribeTable to
// the target once per table, with the credentials headers of the request
// that needed it, and caches the answer (forgotten when a CreateTable,
// DeleteTable or UpdateTable for that table passes through).
//
// # Capacity model
//
// With Config.WCU or Config.RCU set, each partition-key value of each table
// (and each partition-key value of each global secondary index, for queries
// on it) has a token bucket per kind that refills at that many units per
// second and holds Burst seconds of them, starting full. A request is
// admitted while its key's balance is positive and is then charged in full,
// so the balance can go negative; a key in debt is refused until the refill
// repays it. Units are charged as DynamoDB counts them:
//
//   - PutItem and BatchWriteItem puts: one WCU per started KB of the item
//     (internal/ddbsize sizes), at least one, before forwarding.
//   - UpdateItem, DeleteItem and batch deletes: one WCU, before forwarding
//     (the proxy cannot see the size of the stored item).
//   - GetItem: one RCU per started 4 KB of the returned item, at least one
//     (a missing item costs the minimum), half for eventually consistent
//     reads, charged after forwarding.
//   - Query: the same on the sum of the returned items' sizes, charged to
//     the partition key bound by KeyConditionExpression (or the legacy
//     KeyConditions), after forwarding.
//   - BatchGetItem: each returned item like GetItem, charged to its own
//     partition key; each forwarded key with no returned item and not left
//     unprocessed by the target costs the minimum.
//
// Sizes are those of the returned, projected items, which undercounts reads
// with a projection (DynamoDB charges the whole item). Scan, transactions
// and PartiQL are forwarded without charge; their faults still apply.
//
// A single-item request or Query on a key over budget is answered with
// ProvisionedThroughputExceededException, exactly as the service sends it
// (HTTP 400, application/x-amz-json-1.0, the service's __type and message),
// so the SDK's retryer and typed errors see the real thing. A batch entry
// on a key over budget is removed from the forwarded request and returned in
// UnprocessedItems/UnprocessedKeys; when every entry of a batch is refused
// for capacity, the whole call fails with
// ProvisionedThroughputExceededException instead, as DynamoDB documents.
//
// # Faults
//
// Config's rates draw, per request, from one random source seeded by
// Config.Seed, so a sequential client sees the same faults on every run.
// Config.Ops and Config.Keys restrict them to some operations and some
// partition-key values (one hot shard gets the latency). UnprocessedRate
// removes batch entries like the capacity model does; when it leaves nothing
// to forward, the proxy answers the batch itself with every entry
// unprocessed and zero ConsumedCapacity. The other faults are: a delay
// (Latency plus up to Jitter); HTTP 500 InternalServerError before
// forwarding (not applied) or after (applied); a TCP reset before forwarding
// (not applied) or after (applied, though the client sees only an error);
// and a response
// cut off half-way by a reset (applied).
//
// # Counters
//
// Stats returns per-operation and per-key Counters: requests, forwards,
// throttles, unprocessed entries, units charged, injected delays and faults.
// Tests assert on them rather than on time.
package faultproxy
