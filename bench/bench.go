package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynashard/dynashard"
	"github.com/dynashard/dynashard/dynashardtest/faultproxy"
	"github.com/dynashard/dynashard/internal/backoff"
	"github.com/dynashard/dynashard/internal/localddb"
	"github.com/dynashard/dynashard/shard"
)

// benchConfig is what the bench flags select. Durations and counts are the
// full run's unless -quick replaced the ones not given explicitly.
type benchConfig struct {
	quick     bool
	server    string // ddblocal or dynalite
	endpoint  string // external endpoint, overrides server
	scenarios map[int]bool

	// The capacity model (faultproxy), per partition-key value.
	wcu, rcu float64
	burst    time.Duration

	// SDK client: attempts and the retry backoff base (0: the SDK's own).
	attempts int
	backoff  time.Duration

	// 1: hot-day writes.
	writeNs  []int
	duration time.Duration
	warmup   time.Duration
	workers  int // writers per shard

	// 2: day reads.
	readNs    []int
	readItems int // items per shard
	// streamItems is the items per shard of the streaming read at the
	// largest N (0: none).
	streamItems int
	reps        int
	latency     time.Duration

	// 3: merge.
	mergeShards, mergeItems int
	mergeTime               time.Duration

	// 4: strategies.
	ids, skewN int

	// 5: bulk load.
	loadKeys    int
	loadSeconds float64 // items per key = wcu × loadSeconds

	// 6: chunks.
	chunkMiB, chunkReps int

	// 7: hot-day writes under the partition model (duration and warmup
	// are scenario 1's).
	partNs      []int
	partWCU     float64       // the provisioned table's WCU, DynamoDB's figure
	partScale   float64       // the model's TimeScale: simulated seconds per real second
	partBurst   time.Duration // the model's BurstWindow, simulated time
	partWriters int

	// 9: split items.
	splitReads int

	// 10: the client's own cost.
	costRounds, costOps, costMiB int

	out        string
	note       string
	plotFormat string
	cpuProfile string
}

// quickDefaults are the -quick values of flags the user did not set: small
// enough that every scenario together finishes in under a minute on a
// 2-core machine, large enough that each figure means something.
var quickDefaults = map[string]string{
	"n":            "2,8,32",
	"duration":     "2s",
	"warmup":       "500ms",
	"read-n":       "8,64,200",
	"read-items":   "5",
	"stream-items": "100",
	"reps":         "3",
	"merge-items":  "500",
	"merge-time":   "1s",
	"ids":          "50000",
	"load-keys":    "16",
	"load-seconds": "3",
	"chunk-mib":    "8",
	"chunk-reps":   "1",
	"part-n":       "1,4,16,200",
	"split-reads":  "100",
	"cost-rounds":  "3",
	"cost-ops":     "100",
	"cost-mib":     "2",
}

var scenarioNames = map[int]string{
	1:  "hot-day writes",
	2:  "day reads",
	3:  "merge",
	4:  "calculated strategies",
	5:  "bulk load",
	6:  "chunks",
	7:  "hot-day writes, partition model",
	8:  "online resharding",
	9:  "split items",
	10: "client cost",
}

// runBench is the whole command: it starts a server (or uses -endpoint),
// puts dynashardtest/faultproxy in front of it with DynamoDB's per-key limits
// scaled down, runs each selected scenario beside its naive baseline, and
// prints a Markdown report to stdout (progress goes to stderr). With -out it
// also writes results.md and the plots there. An interrupt stops the run and
// still prints what was measured.
func runBench(args []string, stdout, stderr io.Writer) error {
	cfg, err := parseBench(args, stderr)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	meter, err := newCPUMeter(cfg.cpuProfile)
	if err != nil {
		return err
	}
	b := &bencher{cfg: cfg, prog: newProgress(stderr), cpu: meter}
	defer b.close()
	rep, err := b.run(ctx)
	b.prog.done()
	err = errors.Join(err, meter.close())
	if rep != nil {
		fmt.Fprint(stdout, rep.markdown(""))
		if cfg.out != "" {
			if werr := rep.write(cfg.out, cfg.plotFormat); werr != nil {
				err = errors.Join(err, werr)
			} else {
				fmt.Fprintf(stderr, "wrote %s\n", filepath.Join(cfg.out, "results.md"))
			}
		}
	}
	return err
}

// parseBench parses the bench flags; -quick replaces the defaults of the
// flags not given.
func parseBench(args []string, stderr io.Writer) (benchConfig, error) {
	fs := flag.NewFlagSet("dynashard-bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfg := benchConfig{}
	fs.BoolVar(&cfg.quick, "quick", false, "small sizes and short runs: all scenarios in under a minute")
	fs.StringVar(&cfg.server, "server", "ddblocal", "local server to start: ddblocal (DynamoDB Local) or dynalite")
	fs.StringVar(&cfg.endpoint, "endpoint", "", "use this running DynamoDB endpoint (http://host:port) instead of starting a server")
	scen := fs.String("scenarios", "1,2,3,4,5,6,7,8,9,10", "scenarios to run: 1 writes, 2 reads, 3 merge, 4 strategies, 5 bulk load, 6 chunks, 7 writes on a provisioned table (partition model), 8 online resharding, 9 one item over three tables (split), 10 the client's CPU per operation against plain SDK calls")
	fs.Float64Var(&cfg.wcu, "wcu", 100, "modelled write capacity per partition-key value, WCU/s (DynamoDB: 1000, scaled down)")
	fs.Float64Var(&cfg.rcu, "rcu", 300, "modelled read capacity per partition-key value, RCU/s (DynamoDB: 3000, scaled down)")
	fs.DurationVar(&cfg.burst, "burst", 100*time.Millisecond, "unused capacity a key keeps, as a duration of its rate (DynamoDB: up to 300s, best effort)")
	fs.IntVar(&cfg.attempts, "attempts", 3, "SDK attempts per request (the SDK's retries stay on)")
	fs.DurationVar(&cfg.backoff, "backoff", 25*time.Millisecond, "base of the SDK retryer's full-jitter exponential backoff, capped at 1s; 0 keeps the SDK's default (0-2s on the first retry)")
	writeNs := fs.String("n", "2,4,8,16,32", "scenario 1: shard counts N (the unsharded baseline always runs)")
	fs.DurationVar(&cfg.duration, "duration", 5*time.Second, "scenarios 1 and 7: measured time per N")
	fs.DurationVar(&cfg.warmup, "warmup", time.Second, "scenarios 1 and 7: unmeasured time before each measurement (drains burst credit)")
	fs.IntVar(&cfg.workers, "workers", 4, "scenario 1: concurrent writers per shard (at least 8 in all)")
	readNs := fs.String("read-n", "8,16,32,64,128,200", "scenario 2: shard counts N")
	fs.IntVar(&cfg.readItems, "read-items", 20, "scenario 2: items per shard")
	fs.IntVar(&cfg.streamItems, "stream-items", 1000, "scenario 2: items per shard of the streaming read (first item, heap) at the largest -read-n; 0 skips it")
	fs.IntVar(&cfg.reps, "reps", 5, "scenario 2: timed reads per N and method (the median is reported)")
	fs.DurationVar(&cfg.latency, "latency", 5*time.Millisecond, "scenario 2: latency added to every request")
	fs.IntVar(&cfg.mergeShards, "merge-shards", 200, "scenario 3: shards merged")
	fs.IntVar(&cfg.mergeItems, "merge-items", 5000, "scenario 3: items per shard")
	fs.DurationVar(&cfg.mergeTime, "merge-time", 2*time.Second, "scenario 3: minimum time per method")
	fs.IntVar(&cfg.ids, "ids", 200000, "scenario 4: ids per family")
	fs.IntVar(&cfg.skewN, "skew-n", 200, "scenario 4: shard count N")
	fs.IntVar(&cfg.loadKeys, "load-keys", 32, "scenario 5: partition keys loaded")
	fs.Float64Var(&cfg.loadSeconds, "load-seconds", 10, "scenario 5: items per key as seconds of -wcu (the interleaved load's ideal duration)")
	fs.IntVar(&cfg.chunkMiB, "chunk-mib", 64, "scenario 6: payload size in MiB")
	fs.IntVar(&cfg.chunkReps, "chunk-reps", 3, "scenario 6: timed runs per method (the median is reported)")
	partNs := fs.String("part-n", "1,2,4,8,16,32,64,128,200", "scenario 7: shard counts N (the unsharded baseline always runs)")
	fs.Float64Var(&cfg.partWCU, "part-wcu", 4000, "scenario 7: the provisioned table's WCU, as on DynamoDB (4000: 4 partitions of 1000)")
	fs.Float64Var(&cfg.partScale, "part-scale", 0.1, "scenario 7: the partition model's time scale; the table admits part-wcu × part-scale WCU per real second")
	fs.DurationVar(&cfg.partBurst, "part-burst", 100*time.Millisecond, "scenario 7: burst window, in simulated time (DynamoDB: up to 300s, best effort)")
	fs.IntVar(&cfg.partWriters, "part-writers", 64, "scenario 7: concurrent writers in every step")
	fs.IntVar(&cfg.splitReads, "split-reads", 500, "scenario 9: timed reads of each kind (the median is reported)")
	fs.IntVar(&cfg.costRounds, "cost-rounds", 10, "scenario 10: rounds, each method of each operation measured once per round")
	fs.IntVar(&cfg.costOps, "cost-ops", 500, "scenario 10: calls per method per round (Load and the scatter read: 5 times as many items)")
	fs.IntVar(&cfg.costMiB, "cost-mib", 4, "scenario 10: chunk payload in MiB")
	fs.StringVar(&cfg.out, "out", "", "write results.md and plots to this directory")
	fs.StringVar(&cfg.note, "note", "", "a remark printed at the top of the results (e.g. what else ran on the machine)")
	fs.StringVar(&cfg.plotFormat, "plot", "png", "plot format: png or svg")
	fs.StringVar(&cfg.cpuProfile, "cpuprofile", "", "write a CPU profile of the whole run to this file (the proxy's samples carry the label dynashard-bench=proxy)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: dynashard-bench [-quick] [-server ddblocal|dynalite | -endpoint URL] [-scenarios 1,2,...] [-out DIR] [flags]")
		fmt.Fprintln(stderr, "Runs each scenario beside its naive baseline against a local server behind a proxy")
		fmt.Fprintln(stderr, "that models DynamoDB's per-partition-key limits (scenario 7: its partitions), and prints a Markdown report.")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return cfg, err
		}
		return cfg, fmt.Errorf("%w: %v", errUsage, err)
	}
	if fs.NArg() > 0 {
		return cfg, fmt.Errorf("%w: unexpected arguments %q", errUsage, fs.Args())
	}
	if cfg.quick {
		set := map[string]bool{}
		fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
		for name, v := range quickDefaults {
			if !set[name] {
				if err := fs.Set(name, v); err != nil {
					return cfg, err
				}
			}
		}
	}
	if err := cfg.check(*scen, *writeNs, *readNs, *partNs); err != nil {
		return cfg, fmt.Errorf("%w: %v", errUsage, err)
	}
	return cfg, nil
}

// check validates the flags and fills the parsed lists.
func (c *benchConfig) check(scen, writeNs, readNs, partNs string) error {
	var err error
	if c.endpoint == "" && c.server != string(localddb.DynamoDBLocal) && c.server != string(localddb.Dynalite) {
		return fmt.Errorf("-server %q: want ddblocal or dynalite", c.server)
	}
	if c.endpoint != "" && !strings.HasPrefix(c.endpoint, "http://") && !strings.HasPrefix(c.endpoint, "https://") {
		return fmt.Errorf("-endpoint %q: want http(s)://host:port", c.endpoint)
	}
	list, err := intList("scenarios", scen)
	if err != nil {
		return err
	}
	c.scenarios = map[int]bool{}
	for _, s := range list {
		if scenarioNames[s] == "" {
			return fmt.Errorf("-scenarios: no scenario %d (want 1..%d)", s, len(scenarioNames))
		}
		c.scenarios[s] = true
	}
	if c.writeNs, err = intList("n", writeNs); err != nil {
		return err
	}
	if c.readNs, err = intList("read-n", readNs); err != nil {
		return err
	}
	if c.partNs, err = intList("part-n", partNs); err != nil {
		return err
	}
	for _, n := range slices.Concat([]int{c.skewN, c.mergeShards}, c.writeNs, c.readNs, c.partNs) {
		if err := shard.CheckN(n); err != nil {
			return fmt.Errorf("shard count: %v", err)
		}
	}
	for _, f := range []struct {
		name string
		v    float64
	}{{"wcu", c.wcu}, {"rcu", c.rcu}, {"load-seconds", c.loadSeconds}, {"part-wcu", c.partWCU}, {"part-scale", c.partScale}} {
		if !(f.v > 0) || math.IsInf(f.v, 0) {
			return fmt.Errorf("-%s %v: want a positive number", f.name, f.v)
		}
	}
	for _, f := range []struct {
		name string
		v    int
	}{
		{"attempts", c.attempts}, {"workers", c.workers}, {"read-items", c.readItems}, {"reps", c.reps},
		{"merge-items", c.mergeItems}, {"ids", c.ids}, {"load-keys", c.loadKeys}, {"chunk-mib", c.chunkMiB}, {"chunk-reps", c.chunkReps},
		{"part-writers", c.partWriters}, {"split-reads", c.splitReads},
		{"cost-rounds", c.costRounds}, {"cost-ops", c.costOps}, {"cost-mib", c.costMiB},
	} {
		if f.v < 1 {
			return fmt.Errorf("-%s %d: want at least 1", f.name, f.v)
		}
	}
	if c.streamItems < 0 {
		return fmt.Errorf("-stream-items %d: want 0 or more", c.streamItems)
	}
	if c.duration <= 0 || c.warmup < 0 || c.latency < 0 || c.burst < 0 || c.backoff < 0 || c.mergeTime < 0 || c.partBurst < 0 {
		return fmt.Errorf("durations must not be negative (and -duration positive)")
	}
	if c.plotFormat != "png" && c.plotFormat != "svg" {
		return fmt.Errorf("-plot %q: want png or svg", c.plotFormat)
	}
	return nil
}

func intList(name, s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil {
			return nil, fmt.Errorf("-%s: %q is not an integer", name, f)
		}
		out = append(out, n)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("-%s: empty list", name)
	}
	return out, nil
}

// bencher runs the scenarios and owns the server they run against.
type bencher struct {
	cfg  benchConfig
	prog *progress
	cpu  *cpuMeter // profiles the measured windows (client and proxy CPU)

	kind     localddb.Kind
	srv      *localddb.Server // nil for an external endpoint
	endpoint string
	served   int // scenarios run on srv

	tableSeq atomic.Int64
}

// run runs the selected scenarios in order and returns the report, complete
// up to the first scenario that failed.
func (b *bencher) run(ctx context.Context) (*report, error) {
	rep := &report{cfg: b.cfg, machine: readMachine(), started: time.Now().UTC()}
	b.kind = localddb.Kind(b.cfg.server)
	if b.cfg.endpoint != "" {
		b.kind, b.endpoint = localddb.External, b.cfg.endpoint
	}
	rep.server = "none (the scenarios run need no server)"
	if b.cfg.scenarios[9] || b.cfg.scenarios[10] {
		rep.server = serverDescription(b.kind, b.endpoint) + ", without the proxy (scenarios 9 and 10)"
	}
	for _, n := range []int{1, 2, 5, 6, 7, 8} {
		if b.cfg.scenarios[n] {
			rep.server = serverDescription(b.kind, b.endpoint) + ", behind dynashardtest/faultproxy on loopback"
		}
	}
	steps := []struct {
		n   int
		run func(context.Context) (*section, error)
	}{{1, b.writes}, {2, b.reads}, {3, b.merge}, {4, b.skew}, {5, b.load}, {6, b.chunks}, {7, b.partitionWrites}, {8, b.reshard}, {9, b.splitItems}, {10, b.clientCost}}
	total := len(b.cfg.scenarios)
	i := 0
	for _, s := range steps {
		if !b.cfg.scenarios[s.n] {
			continue
		}
		i++
		b.prog.scenario(fmt.Sprintf("[%d/%d] %d %s", i, total, s.n, scenarioNames[s.n]))
		sec, err := s.run(ctx)
		if sec != nil {
			sec.number = s.n
			rep.sections = append(rep.sections, sec)
		}
		if err != nil {
			return rep, fmt.Errorf("scenario %d (%s): %w", s.n, scenarioNames[s.n], err)
		}
	}
	rep.elapsed = time.Since(rep.started)
	return rep, nil
}

func (b *bencher) close() {
	if b.srv != nil {
		b.srv.Close()
		b.srv = nil
	}
}

// server returns the endpoint of a running server, starting one if needed.
// dynalite leaks memory with every Query, so each scenario gets a fresh one.
func (b *bencher) server(ctx context.Context) (string, error) {
	if b.kind == localddb.External {
		return b.endpoint, nil
	}
	if b.srv != nil && b.kind == localddb.Dynalite && b.served > 0 {
		b.prog.status("restarting dynalite")
		b.srv.Close()
		b.srv = nil
	}
	if b.srv == nil {
		b.prog.status("starting " + string(b.kind))
		s, err := localddb.Start(ctx, b.kind)
		if err != nil {
			return "", err
		}
		b.srv, b.served = s, 0
	}
	b.served++
	return b.srv.Endpoint, nil
}

// dayTable starts (or reuses) the server and makes a fresh table keyed
// (pk S, sk S), the layout of every sharded-day scenario, with a direct
// client to it.
func (b *bencher) dayTable(ctx context.Context) (endpoint string, direct *dynamodb.Client, table string, drop func(), err error) {
	if endpoint, err = b.server(ctx); err != nil {
		return "", nil, "", nil, err
	}
	direct = b.client(endpoint, 16)
	table, drop, err = b.newTable(ctx, direct, "pk:S", "sk:S")
	return endpoint, direct, table, drop, err
}

// newTable creates an on-demand table keyed by the given "name:type" specs
// (partition key first, then sort key), on the server behind direct, and
// returns its name and a function deleting it.
func (b *bencher) newTable(ctx context.Context, direct *dynamodb.Client, keys ...string) (string, func(), error) {
	// Not ddbtest.TableInput: that package imports testing, which has no
	// place in the command's binary.
	name := fmt.Sprintf("bench_%d_%d_%d", os.Getpid(), time.Now().UnixNano()%1e6, b.tableSeq.Add(1))
	in := &dynamodb.CreateTableInput{TableName: aws.String(name), BillingMode: types.BillingModePayPerRequest}
	for i, spec := range keys {
		attr, typ, _ := strings.Cut(spec, ":")
		kt := types.KeyTypeHash
		if i == 1 {
			kt = types.KeyTypeRange
		}
		in.AttributeDefinitions = append(in.AttributeDefinitions, types.AttributeDefinition{
			AttributeName: aws.String(attr), AttributeType: types.ScalarAttributeType(typ),
		})
		in.KeySchema = append(in.KeySchema, types.KeySchemaElement{AttributeName: aws.String(attr), KeyType: kt})
	}
	if err := localddb.CreateTable(ctx, direct, in); err != nil {
		return "", nil, err
	}
	return name, func() {
		dctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		direct.DeleteTable(dctx, &dynamodb.DeleteTableInput{TableName: aws.String(name)})
	}, nil
}

// proxy starts a fault proxy in front of endpoint with the capacity model
// and the given latency.
func (b *bencher) proxy(endpoint string, latency time.Duration) (*faultproxy.Proxy, error) {
	return newProxy(endpoint, faultproxy.Config{
		WCU: b.cfg.wcu, RCU: b.cfg.rcu, Burst: b.burst(), Latency: latency, Seed: 1,
	})
}

// burst is the proxy's bucket depth; the proxy reads zero as one second.
func (b *bencher) burst() time.Duration {
	if b.cfg.burst <= 0 {
		return time.Nanosecond
	}
	return b.cfg.burst
}

// client returns an SDK client for endpoint set up for fan-out: the SDK's
// retries on (cfg.attempts), no client-side retry quota (a shared quota
// drained by many throttled goroutines fails every call at once), enough
// idle connections for conns concurrent requests, and, unless -backoff 0,
// a full-jitter backoff from cfg.backoff instead of the SDK's 0-2 s first
// retry, which leaves a throttled key idle for most of a second. optFns
// apply after these settings.
func (b *bencher) client(endpoint string, conns int, optFns ...func(*dynamodb.Options)) *dynamodb.Client {
	conns = max(conns, 16)
	hc := awshttp.NewBuildableClient().WithTransportOptions(func(tr *http.Transport) {
		tr.MaxIdleConns = conns
		tr.MaxIdleConnsPerHost = conns
	})
	return localddb.NewClient(endpoint, append([]func(*dynamodb.Options){func(o *dynamodb.Options) {
		o.HTTPClient = hc
		o.Retryer = retry.NewStandard(func(so *retry.StandardOptions) {
			dynashard.RetryForFanOut(so)
			so.MaxAttempts = b.cfg.attempts
			if b.cfg.backoff > 0 {
				so.Backoff = fullJitter(b.cfg.backoff, time.Second)
			}
		})
	}}, optFns...)...)
}

// fullJitter waits a random time in [0, min(maxDelay, base·2^attempt)),
// the library's own backoff.
func fullJitter(base, maxDelay time.Duration) retry.BackoffDelayerFunc {
	return func(attempt int, _ error) (time.Duration, error) {
		return backoff.Jitter(backoff.Cap(base, maxDelay, attempt)), nil
	}
}

// isThrottle reports whether err is a throttle, as the library decides it.
func isThrottle(err error) bool { return backoff.IsThrottle(err) }
