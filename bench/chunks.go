package main

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynashard/dynashard/chunk"
	"github.com/dynashard/dynashard/dynashardtest/faultproxy"
)

// maxBatchGetBytes is DynamoDB's limit on one BatchGetItem response.
const maxBatchGetBytes = 16_000_000

// chunks is scenario 6: a large payload written and read with chunk.Store
// beside plain loops of BatchWriteItem and BatchGetItem over the same chunk
// items, counting requests against the fewest DynamoDB's limits allow.
func (b *bencher) chunks(ctx context.Context) (*section, error) {
	c := b.cfg
	endpoint, err := b.server(ctx)
	if err != nil {
		return nil, err
	}
	direct := b.client(endpoint, 16)
	parents, dropP, err := b.newTable(ctx, direct, "pk:S")
	if err != nil {
		return nil, err
	}
	defer dropP()
	chunkTable, dropC, err := b.newTable(ctx, direct, chunk.DefaultChunkKeyAttribute+":S")
	if err != nil {
		return nil, err
	}
	defer dropC()

	size := c.chunkMiB << 20
	data := make([]byte, size)
	rng := rand.New(rand.NewPCG(7, 8))
	for i := 0; i < len(data); i += 8 {
		v := rng.Uint64()
		for j := 0; j < 8 && i+j < len(data); j++ {
			data[i+j] = byte(v >> (8 * j))
		}
	}
	nChunks := (size + chunk.DefaultChunkSize - 1) / chunk.DefaultChunkSize
	// A chunk item: its data, its key (about 60 bytes here) and its
	// parent's key; the fewest BatchGetItem requests are set by the
	// response limit, the fewest BatchWriteItem requests by 25 per request.
	perGet := max(1, min(100, maxBatchGetBytes/(chunk.DefaultChunkSize+200)))
	minWrites := (nChunks + 24) / 25
	minReads := (nChunks + perGet - 1) / perGet

	sec := &section{title: "Chunks"}
	sec.intro = append(sec.intro, fmt.Sprintf(
		"A %d MiB payload of random bytes (incompressible) in %d chunks of %d KiB. *chunk.Store*: Put (read the parent, "+
			"write the chunks with BatchWriteItem through the batch engine, flip the parent with one conditional UpdateItem) and "+
			"Get (read the parent, BatchGetItem the chunks, verify length and SHA-256), default options. *plain loop*: the same "+
			"chunk items written by a sequential loop of 25-item BatchWriteItem calls and read by a sequential loop of "+
			"100-key BatchGetItem calls, leftovers re-sent at once, no parent, no checksum. The fewest requests DynamoDB's "+
			"limits allow: %d BatchWriteItem (25 per request) and %d BatchGetItem (16 MB per response, %d chunks); "+
			"chunk.Store adds one GetItem and one UpdateItem to a write and one GetItem to a read. Requests count every "+
			"attempt the proxy saw, the SDK's retries included.",
		c.chunkMiB, nChunks, chunk.DefaultChunkSize>>10, minWrites, minReads, perGet))
	t := sec.table(append([]string{"method", "operation", "MiB/s", "time (median)", "requests", "fewest possible", "client CPU ms/MiB",
		"proxy CPU ms/MiB", "runtime CPU ms/MiB"}, splitHeader...)...)

	p, err := b.proxy(endpoint, 0)
	if err != nil {
		return sec, err
	}
	defer p.Close()
	cl := b.client(p.URL(), 16)
	store, err := chunk.New(cl, parents, chunkTable)
	if err != nil {
		return sec, err
	}
	storeKey := func(rep int) chunk.Key {
		return chunk.Key{PartitionName: "pk", Partition: &types.AttributeValueMemberS{Value: fmt.Sprintf("bench-payload-%d", rep)}}
	}
	plainKeys := func(rep, n int) []string {
		keys := make([]string, n)
		for i := range keys {
			keys[i] = fmt.Sprintf("raw-payload-%d#v1#%d", rep, i+1)
		}
		return keys
	}
	check := func(got []byte, want []byte) error {
		if !bytes.Equal(got, want) {
			return fmt.Errorf("read %d bytes that differ from the %d written", len(got), len(want))
		}
		return nil
	}
	// Every rep writes fresh keys, so no Put replaces (and deletes) an
	// older version inside the timed write.
	type op struct {
		method, name string
		fewest       int
		run          func(ctx context.Context, rep int, data []byte) error
	}
	ops := []op{
		{"chunk.Store", "write", 2 + minWrites, func(ctx context.Context, rep int, data []byte) error {
			_, err := store.Put(ctx, storeKey(rep), data)
			return err
		}},
		{"plain loop", "write", minWrites, func(ctx context.Context, rep int, data []byte) error {
			return plainWrite(ctx, cl, chunkTable, plainKeys(rep, chunkCount(len(data))), data)
		}},
		{"chunk.Store", "read", 1 + minReads, func(ctx context.Context, rep int, data []byte) error {
			got, _, err := store.Get(ctx, storeKey(rep))
			if err != nil {
				return err
			}
			return check(got, data)
		}},
		{"plain loop", "read", minReads, func(ctx context.Context, rep int, data []byte) error {
			got, err := plainRead(ctx, cl, chunkTable, plainKeys(rep, chunkCount(len(data))))
			if err != nil {
				return err
			}
			return check(got, data)
		}},
	}
	// An untimed round on a smaller payload warms the server's JIT, the
	// connections and the heap for every method alike.
	b.prog.status("warming up")
	warm := data[:min(len(data), 4<<20)]
	for _, o := range ops {
		if err := o.run(ctx, -1, warm); err != nil {
			return sec, fmt.Errorf("warm-up %s %s: %w", o.method, o.name, err)
		}
	}
	type tally struct {
		times          []time.Duration
		requests       string
		client, server time.Duration
		split          cpuSplit
		serverKnown    bool
		busy, total    uint64
		machineKnown   bool
	}
	tallies := make([]tally, len(ops))
	for rep := range c.chunkReps {
		for i, o := range ops { // alternating, so drift on a shared machine hits every method
			b.prog.status(fmt.Sprintf("%s %s (%d of %d)", o.method, o.name, rep+1, c.chunkReps))
			p.ResetStats()
			b.cpu.begin()
			s0 := sampleCPU()
			err := o.run(ctx, rep, data)
			s1 := sampleCPU()
			split := b.cpu.end(s1.self - s0.self)
			if err != nil {
				return sec, fmt.Errorf("%s %s: %w", o.method, o.name, err)
			}
			tl := &tallies[i]
			if rep == 0 {
				tl.split = split
			} else {
				tl.split = tl.split.add(split)
			}
			tl.times = append(tl.times, s1.at.Sub(s0.at))
			tl.requests = requestsByOp(p.Stats())
			tl.client += s1.self - s0.self
			tl.server += s1.server - s0.server
			tl.serverKnown = s0.serverKnown && s1.serverKnown
			tl.busy += s1.busy - s0.busy
			tl.total += s1.total - s0.total
			tl.machineKnown = s0.machineOK && s1.machineOK
		}
	}
	mib := float64(size) / (1 << 20)
	for i, o := range ops {
		tl := tallies[i]
		var wall time.Duration
		for _, d := range tl.times {
			wall += d
		}
		use := cpuUse{client: tl.client.Seconds() / wall.Seconds(), serverKnown: tl.serverKnown, machineKnown: tl.machineKnown && tl.total > 0}
		perMiB := []string{"n/a", "n/a", "n/a"}
		if sp := tl.split; sp.known {
			use.split = true
			use.client, use.proxy, use.runtime = sp.client.Seconds()/wall.Seconds(), sp.proxy.Seconds()/wall.Seconds(), sp.runtime.Seconds()/wall.Seconds()
			runs := mib * float64(len(tl.times))
			perMiB = []string{msPer(sp.client, runs), msPer(sp.proxy, runs), msPer(sp.runtime, runs)}
		}
		if use.serverKnown {
			use.server = tl.server.Seconds() / wall.Seconds()
		}
		if use.machineKnown {
			use.machine = float64(tl.busy) / float64(tl.total)
		}
		med := median(tl.times)
		t.row(append(append([]string{o.method, o.name, fmt.Sprintf("%.1f", mib/med.Seconds()), med.Round(time.Millisecond).String(),
			tl.requests, fmt.Sprint(o.fewest)}, perMiB...), use.splitCells()...)...)
	}
	sec.notes = append(sec.notes, fmt.Sprintf("Median of %d run(s) per method, the methods taking turns, after an untimed "+
		"warm-up with a smaller payload; requests are those of the last run. CPU per MiB is over every run. Client CPU "+
		"per MiB holds, for both methods, the SDK's JSON and base64 encoding and request signing (a SHA-256 of each "+
		"body); chunk.Store adds its SHA-256 of the payload and its size checks. ", c.chunkReps)+splitNote())
	return sec, nil
}

// msPer is d in milliseconds per unit.
func msPer(d time.Duration, units float64) string {
	return fmt.Sprintf("%.1f", float64(d)/float64(time.Millisecond)/units)
}

func chunkCount(size int) int { return (size + chunk.DefaultChunkSize - 1) / chunk.DefaultChunkSize }

// requestsByOp renders the proxy's request counts: "7 BatchWriteItem + 1 GetItem".
func requestsByOp(st faultproxy.Stats) string {
	var ops []string
	for op := range st.Ops {
		ops = append(ops, op)
	}
	slices.Sort(ops)
	var parts []string
	total := 0
	for _, op := range ops {
		n := st.Ops[op].Requests
		total += n
		parts = append(parts, fmt.Sprintf("%d %s", n, op))
	}
	if len(parts) <= 1 {
		return strings.Join(parts, "")
	}
	return fmt.Sprintf("%d (%s)", total, strings.Join(parts, " + "))
}

// plainWrite is the naive writer: 25 chunk items per BatchWriteItem, one
// call after another, unprocessed items sent again straight away.
func plainWrite(ctx context.Context, c *dynamodb.Client, table string, keys []string, data []byte) error {
	var pending []types.WriteRequest
	for i, k := range keys {
		lo := i * chunk.DefaultChunkSize
		hi := min(lo+chunk.DefaultChunkSize, len(data))
		pending = append(pending, types.WriteRequest{PutRequest: &types.PutRequest{Item: map[string]types.AttributeValue{
			chunk.DefaultChunkKeyAttribute: &types.AttributeValueMemberS{Value: k},
			"Data":                         &types.AttributeValueMemberB{Value: data[lo:hi]},
		}}})
	}
	for len(pending) > 0 {
		n := min(25, len(pending))
		out, err := c.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{table: pending[:n]}})
		if err != nil {
			return err
		}
		pending = append(out.UnprocessedItems[table], pending[n:]...)
	}
	return nil
}

// plainRead is the naive reader: up to 100 keys per BatchGetItem, one call
// after another, unprocessed keys asked for again straight away.
func plainRead(ctx context.Context, c *dynamodb.Client, table string, keys []string) ([]byte, error) {
	seq := make(map[string]int, len(keys))
	var pending []map[string]types.AttributeValue
	for i, k := range keys {
		seq[k] = i
		pending = append(pending, map[string]types.AttributeValue{chunk.DefaultChunkKeyAttribute: &types.AttributeValueMemberS{Value: k}})
	}
	parts := make([][]byte, len(keys))
	for len(pending) > 0 {
		n := min(100, len(pending))
		out, err := c.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: map[string]types.KeysAndAttributes{table: {Keys: pending[:n]}}})
		if err != nil {
			return nil, err
		}
		for _, it := range out.Responses[table] {
			k, _ := it[chunk.DefaultChunkKeyAttribute].(*types.AttributeValueMemberS)
			d, _ := it["Data"].(*types.AttributeValueMemberB)
			if k == nil || d == nil {
				return nil, fmt.Errorf("malformed chunk item")
			}
			parts[seq[k.Value]] = d.Value
		}
		pending = append(out.UnprocessedKeys[table].Keys, pending[n:]...)
	}
	for i, p := range parts {
		if p == nil {
			return nil, fmt.Errorf("chunk %s missing", keys[i])
		}
	}
	return bytes.Join(parts, nil), nil
}
