package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"net/url"
	"os"
	"os/signal"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/dynashard/dynashard"
	"github.com/dynashard/dynashard/dynashardtest/faultproxy"
	"github.com/dynashard/dynashard/partition"
)

// proxyUsage is the first lines of "dynashard proxy -h".
const proxyUsage = `usage: dynashard proxy -target URL [-listen 127.0.0.1:8000] [flags]
  per-key model (the default, -model perkey, faultproxy.Config's zero value):
    [-wcu N] [-rcu N] [-burst D]
  partition model (-model partitioned):
    [-table NAME[/INDEX]=RCU,WCU | NAME=on-demand ...] [-burst-window D]
    [-adaptive delayed|instant|off] [-adaptive-delay D] [-partition-size S] [-time-scale X]
  faults: [-unprocessed R] [-throttle R] [-error R] [-error-after R] [-reset-before R]
    [-reset-after R] [-truncate R] [-latency D] [-jitter D] [-ops LIST] [-keys LIST] [-seed N]
  [-stats 1s]
Serves DynamoDB's JSON protocol on -listen and forwards to -target (DynamoDB
Local, dynalite or another server that does not check signatures: requests
are forwarded as signed for the proxy), throttling as DynamoDB does and
injecting faults. Point any SDK's endpoint at the URL it prints. The per-key
model gives every partition-key value -wcu and -rcu per second (unlimited
when not given); the partition model divides a provisioned table's
throughput among its partitions, taking it from -table, else from the
CreateTable and UpdateTable requests that pass through, else from a
DescribeTable of its own. Both keep one second of unused capacity by default
(-burst, -burst-window), so a low capacity throttles within seconds; give
-burst-window 5m for DynamoDB's 300 s. A counters line goes to stderr every -stats while
they change; SIGINT or SIGTERM stops the proxy (exit status 0). Rates are
fractions in [0, 1]; sizes need a unit (10KB, 1GB).`

// proxyFlags is what "dynashard proxy" was given.
type proxyFlags struct {
	target, listen    string
	model, adaptive   string
	tables            tableList
	partitionSize     byteSize
	ops, keys         string
	stats             time.Duration
	cfg               faultproxy.Config // the flags bound to a field directly
	set               map[string]bool   // flags given on the command line
	rates             map[string]*float64
	durations         map[string]*time.Duration
	perKey, partModel []string // flags of one model only
}

func runProxy(args []string, _ io.Reader, stdout, stderr io.Writer) error {
	f, err := parseProxy(args, stdout, stderr)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return serveProxy(ctx, f, stdout, stderr)
}

// parseProxy parses and checks the flags; every error names its flag.
func parseProxy(args []string, stdout, stderr io.Writer) (*proxyFlags, error) {
	f := &proxyFlags{set: map[string]bool{}}
	fs := newFlags("proxy", stderr)
	f.define(fs)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), proxyUsage)
		fs.PrintDefaults()
	}
	if err := parse(fs, args, stdout); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("%w: unexpected arguments %q", errUsage, fs.Args())
	}
	fs.Visit(func(fl *flag.Flag) { f.set[fl.Name] = true })
	if err := f.check(); err != nil {
		return nil, fmt.Errorf("%w: %v", errUsage, err)
	}
	return f, nil
}

// define binds the flags to f.
func (f *proxyFlags) define(fs *flag.FlagSet) {
	c := &f.cfg
	fs.StringVar(&f.target, "target", "", "base `URL` of the DynamoDB-compatible endpoint to forward to (required)")
	fs.StringVar(&f.listen, "listen", "127.0.0.1:8000", "`address` to listen on; port 0 picks a free one")
	fs.StringVar(&f.model, "model", "perkey", "capacity model `name`: perkey (a budget per partition-key value, as faultproxy.Config's zero value) or partitioned (DynamoDB's partitions)")
	fs.DurationVar(&f.stats, "stats", time.Second, "interval of the counters line on stderr; 0 turns it off")
	fs.Int64Var(&c.Seed, "seed", 0, "seeds the fault draws with this `number`: a sequential client meets the same faults on every run")
	f.partModel = []string{"table", "burst-window", "adaptive", "adaptive-delay", "partition-size", "time-scale"}
	fs.Var(&f.tables, "table", "partition model: the throughput of a table or index, overriding its CreateTable's, `spec` NAME[/INDEX]=RCU,WCU or NAME=on-demand; repeatable")
	fs.DurationVar(&c.Partition.BurstWindow, "burst-window", 0, "partition model: unused capacity a partition keeps (default 1s, as -burst; DynamoDB keeps up to 5m)")
	fs.StringVar(&f.adaptive, "adaptive", "delayed", "partition model: adaptive capacity `mode`, delayed, instant or off")
	fs.DurationVar(&c.Partition.AdaptiveDelay, "adaptive-delay", 0, "partition model: throttled time before adaptive capacity lends (default 5m0s)")
	fs.Var(&f.partitionSize, "partition-size", "partition model: `size` a partition holds before it splits, with a unit (default 10GB)")
	fs.Float64Var(&c.Partition.TimeScale, "time-scale", 0, "partition model: simulated seconds per real second, a `factor` (default 1)")
	f.perKey = []string{"wcu", "rcu", "burst"}
	fs.Float64Var(&c.WCU, "wcu", 0, "per-key model: write `units` per second per partition-key value (default unlimited)")
	fs.Float64Var(&c.RCU, "rcu", 0, "per-key model: read `units` per second per partition-key value (default unlimited)")
	fs.DurationVar(&c.Burst, "burst", 0, "per-key model: unused capacity a key keeps (default 1s)")
	f.defineFaults(fs)
}

// defineFaults binds the fault flags to f.cfg.
func (f *proxyFlags) defineFaults(fs *flag.FlagSet) {
	c := &f.cfg
	f.rates = map[string]*float64{
		"unprocessed": &c.UnprocessedRate, "throttle": &c.ThrottleRate, "error": &c.ErrorRate,
		"error-after": &c.ErrorAfterRate, "reset-before": &c.ResetBeforeRate, "reset-after": &c.ResetAfterRate,
		"truncate": &c.TruncateRate,
	}
	for name, usage := range rateUsage {
		fs.Float64Var(f.rates[name], name, 0, usage)
	}
	f.durations = map[string]*time.Duration{"latency": &c.Latency, "jitter": &c.Jitter, "stats": &f.stats,
		"burst-window": &c.Partition.BurstWindow, "adaptive-delay": &c.Partition.AdaptiveDelay, "burst": &c.Burst}
	fs.DurationVar(&c.Latency, "latency", 0, "fault: delay added to every selected request")
	fs.DurationVar(&c.Jitter, "jitter", 0, "fault: random extra delay, up to this")
	fs.StringVar(&f.ops, "ops", "", "faults apply only to this `list` of comma-separated DynamoDB operations (BatchWriteItem,Query), checked against the SDK's; default all")
	fs.StringVar(&f.keys, "keys", "", "faults apply only to requests touching this `list` of comma-separated partition-key values (S and N as written, B in base64); default all")
}

// rateUsage is the help of each fault rate flag.
var rateUsage = map[string]string{
	"unprocessed":  "fault: the `rate` (0 to 1) of batch entries returned in UnprocessedItems/UnprocessedKeys",
	"throttle":     "fault: the `rate` (0 to 1) of requests failed with ProvisionedThroughputExceededException",
	"error":        "fault: the `rate` (0 to 1) of requests answered HTTP 500 without forwarding",
	"error-after":  "fault: the `rate` (0 to 1) of requests answered HTTP 500 after forwarding (applied)",
	"reset-before": "fault: the `rate` (0 to 1) of connections reset before forwarding",
	"reset-after":  "fault: the `rate` (0 to 1) of connections reset after forwarding (applied)",
	"truncate":     "fault: the `rate` (0 to 1) of responses cut off half-way (applied)",
}

// check reports the first flag given wrongly, then fills in f.cfg.
func (f *proxyFlags) check() error {
	if err := checkTarget(f.target); err != nil {
		return err
	}
	if err := checkListen(f.listen); err != nil {
		return err
	}
	if err := f.checkModel(); err != nil {
		return err
	}
	if err := f.checkFigures(); err != nil {
		return err
	}
	f.cfg.Ops, f.cfg.Keys = list(f.ops), list(f.keys)
	if err := checkOps(f.cfg.Ops); err != nil {
		return err
	}
	f.cfg.Partition.PartitionSize = int64(f.partitionSize)
	f.cfg.Partition.Tables = f.tables.m
	return nil
}

func checkTarget(target string) error {
	u, err := url.Parse(target)
	switch {
	case target == "":
		return errors.New("-target: required: the base URL of the endpoint to forward to, e.g. http://127.0.0.1:8001")
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		return fmt.Errorf("-target %q: want an http(s) URL such as http://127.0.0.1:8001", target)
	}
	return nil
}

func checkListen(addr string) error {
	_, port, err := net.SplitHostPort(addr)
	if err == nil {
		if n, perr := strconv.Atoi(port); perr != nil || n < 0 || n > 65535 {
			err = fmt.Errorf("port %q is not a number from 0 to 65535", port)
		}
	}
	if err != nil {
		return fmt.Errorf("-listen %q: want host:port, e.g. 127.0.0.1:8000 or :8000: %v", addr, err)
	}
	return nil
}

// checkModel sets the model and the adaptive mode, and refuses flags of
// the other model.
func (f *proxyFlags) checkModel() error {
	other := f.perKey
	switch f.model {
	case "partitioned":
		f.cfg.Model = faultproxy.Partitioned
	case "perkey":
		f.cfg.Model, other = faultproxy.PerKey, f.partModel
	default:
		return fmt.Errorf("-model %q: want partitioned or perkey", f.model)
	}
	for _, name := range other {
		if f.set[name] {
			want := map[string]string{"perkey": "partitioned", "partitioned": "perkey"}[f.model]
			return fmt.Errorf("-%s: not a flag of -model %s: give -model %s", name, f.model, want)
		}
	}
	adaptive := map[string]faultproxy.Adaptive{
		"delayed": faultproxy.AdaptiveDelayed, "instant": faultproxy.AdaptiveInstant, "off": faultproxy.AdaptiveOff,
	}
	a, ok := adaptive[f.adaptive]
	if !ok {
		return fmt.Errorf("-adaptive %q: want delayed, instant or off", f.adaptive)
	}
	f.cfg.Partition.Adaptive = a
	return nil
}

// checkFigures refuses rates outside [0, 1], negative durations and
// capacities out of range, in the order of the flags' names.
func (f *proxyFlags) checkFigures() error {
	for _, name := range sortedKeys(f.rates) {
		if v := *f.rates[name]; !(v >= 0 && v <= 1) {
			return fmt.Errorf("-%s %v: want a fraction from 0 to 1", name, v)
		}
	}
	for _, name := range sortedKeys(f.durations) {
		if v := *f.durations[name]; v < 0 {
			return fmt.Errorf("-%s %v: must not be negative", name, v)
		}
	}
	c := f.cfg
	for _, u := range []struct {
		name string
		v    float64
	}{{"rcu", c.RCU}, {"wcu", c.WCU}} {
		if !(u.v >= 0) || math.IsInf(u.v, 0) {
			return fmt.Errorf("-%s %v: want a number of units, 0 or more (0: unlimited)", u.name, u.v)
		}
	}
	if ts := c.Partition.TimeScale; f.set["time-scale"] && !(ts > 0 && ts <= 1e6) {
		return fmt.Errorf("-time-scale %v: want more than 0 and at most 1000000", ts)
	}
	if f.set["partition-size"] && f.partitionSize <= 0 {
		return fmt.Errorf("-partition-size %s: want more than 0 B", f.partitionSize.String())
	}
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// checkOps refuses an -ops entry that names no DynamoDB operation: the
// proxy would select no request with it and inject nothing.
func checkOps(ops []string) error {
	known := dynamoOps()
	for _, op := range ops {
		if known[op] {
			continue
		}
		if near := nearestOp(op, known); near != "" {
			return fmt.Errorf("-ops: %q is no DynamoDB operation: did you mean %s?", op, near)
		}
		return fmt.Errorf("-ops: %q is no DynamoDB operation: want names such as BatchWriteItem or Query, as the SDKs spell them", op)
	}
	return nil
}

// dynamoOps is the set of DynamoDB operation names: the methods of the
// SDK's client that take the operation's input (PutItem, Query, …).
var dynamoOps = sync.OnceValue(func() map[string]bool {
	ops := map[string]bool{}
	t := reflect.TypeFor[*dynamodb.Client]()
	for i := range t.NumMethod() {
		m := t.Method(i)
		if in := m.Type; in.NumIn() >= 3 && in.In(2).Kind() == reflect.Pointer && in.In(2).Elem().Name() == m.Name+"Input" {
			ops[m.Name] = true
		}
	}
	return ops
})

// nearestOp returns the operation op was probably meant to be: the same
// name in another case, else the closest within three edits; "" if none.
func nearestOp(op string, known map[string]bool) string {
	best, bestD := "", 4
	for _, k := range sortedKeys(known) {
		if strings.EqualFold(k, op) {
			return k
		}
		if d := editDistance(strings.ToLower(k), strings.ToLower(op)); d < bestD {
			best, bestD = k, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance between a and b, in bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// list splits a comma-separated flag, dropping empty entries.
func list(s string) []string {
	var out []string
	for _, e := range strings.Split(s, ",") {
		if e = strings.TrimSpace(e); e != "" {
			out = append(out, e)
		}
	}
	return out
}

// tableList is the repeatable -table flag: NAME[/INDEX]=RCU,WCU or
// NAME[/INDEX]=on-demand.
type tableList struct {
	m map[faultproxy.TableKey]faultproxy.Throughput
}

func (l *tableList) String() string {
	if l == nil || len(l.m) == 0 {
		return ""
	}
	var parts []string
	for k, tp := range l.m {
		name := k.Table
		if k.Index != "" {
			name += "/" + k.Index
		}
		v := fmt.Sprintf("%g,%g", tp.RCU, tp.WCU)
		if tp.OnDemand {
			v = "on-demand"
		}
		parts = append(parts, name+"="+v)
	}
	slices.Sort(parts)
	return strings.Join(parts, " ")
}

func (l *tableList) Set(s string) error {
	name, v, ok := strings.Cut(s, "=")
	table, index, _ := strings.Cut(name, "/")
	if !ok || table == "" {
		return fmt.Errorf("%q: want NAME[/INDEX]=RCU,WCU or NAME=on-demand", s)
	}
	tp := faultproxy.Throughput{OnDemand: v == "on-demand"}
	if !tp.OnDemand {
		r, w, ok := strings.Cut(v, ",")
		var err1, err2 error
		tp.RCU, err1 = strconv.ParseFloat(strings.TrimSpace(r), 64)
		tp.WCU, err2 = strconv.ParseFloat(strings.TrimSpace(w), 64)
		if !ok || err1 != nil || err2 != nil {
			return fmt.Errorf("%q: want NAME[/INDEX]=RCU,WCU (e.g. orders=5000,2000) or NAME=on-demand", s)
		}
		if _, err := partition.ThroughputPartitions(tp.RCU, tp.WCU); err != nil {
			return fmt.Errorf("%q: %v", s, err)
		}
	}
	if l.m == nil {
		l.m = map[faultproxy.TableKey]faultproxy.Throughput{}
	}
	l.m[faultproxy.TableKey{Table: table, Index: index}] = tp
	return nil
}

// serveProxy runs the proxy until ctx ends, printing its URL to stdout and
// its counters to stderr.
func serveProxy(ctx context.Context, f *proxyFlags, stdout, stderr io.Writer) error {
	p, err := startProxy(f)
	if err != nil {
		return err
	}
	model := map[faultproxy.Model]string{faultproxy.Partitioned: "partition model", faultproxy.PerKey: "per-key model"}[f.cfg.Model]
	if f.cfg.Model == faultproxy.PerKey && f.cfg.WCU == 0 && f.cfg.RCU == 0 {
		model += " without limits: give -wcu and -rcu, or -model partitioned to hold tables to their provisioned throughput"
	}
	fmt.Fprintf(stdout, "listening on %s (forwarding to %s, %s; SIGINT or SIGTERM stops)\n", p.URL(), f.target, model)
	start := time.Now()
	var tick <-chan time.Time
	if f.stats > 0 {
		t := time.NewTicker(f.stats)
		defer t.Stop()
		tick = t.C
	}
	last := ""
	for {
		select {
		case <-ctx.Done():
			err := p.Close()
			fmt.Fprintf(stderr, "stopped after %s: %s\n", elapsed(start), statsLine(p.Stats()))
			return err
		case <-tick:
			if line := statsLine(p.Stats()); line != last { // quiet while nothing happens
				fmt.Fprintf(stderr, "%s: %s\n", elapsed(start), line)
				last = line
			}
		}
	}
}

// startProxy listens on -listen and starts the proxy there.
func startProxy(f *proxyFlags) (*faultproxy.Proxy, error) {
	ln, err := net.Listen("tcp", f.listen)
	if err != nil {
		return nil, fmt.Errorf("-listen %s: %w", f.listen, err)
	}
	p, err := faultproxy.NewListener(ln, f.target, f.cfg)
	if errors.Is(err, dynashard.ErrInvalid) {
		return nil, fmt.Errorf("%w: %v", errUsage, err) // the flags' checks should have caught it
	}
	return p, err
}

// elapsed prints the time since start to the millisecond below a second,
// else to the second: "250ms", "1m5s".
func elapsed(start time.Time) string {
	return fmtDuration(time.Since(start).Round(time.Millisecond))
}

// statsLine is one line of counters: the totals, then each table of the
// partition model.
func statsLine(s faultproxy.Stats) string {
	t := s.Total
	var b strings.Builder
	fmt.Fprintf(&b, "%s, %s forwarded, %s throttled, %s unprocessed", plural(t.Requests, "request"),
		num(float64(t.Forwarded)), num(float64(t.Throttled)), num(float64(t.Unprocessed)))
	if faults := t.Errors + t.ErrorsAfter + t.ResetsBefore + t.ResetsAfter + t.Truncated; faults > 0 {
		fmt.Fprintf(&b, ", %s", plural(faults, "injected fault"))
	}
	keys := make([]faultproxy.TableKey, 0, len(s.Tables))
	for k := range s.Tables {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b faultproxy.TableKey) int {
		return strings.Compare(a.Table+"/"+a.Index, b.Table+"/"+b.Index)
	})
	for _, k := range keys {
		b.WriteString("; ")
		b.WriteString(tableLine(k, s.Tables[k]))
	}
	return b.String()
}

// tableLine describes one table of the partition model: its partitions
// and what they used and refused.
func tableLine(k faultproxy.TableKey, ts faultproxy.TableStats) string {
	name := k.Table
	if k.Index != "" {
		name += "/" + k.Index
	}
	var wcu, rcu float64
	throttled := 0
	for _, p := range ts.Partitions {
		wcu, rcu = wcu+p.Write.Units, rcu+p.Read.Units
		throttled += p.Write.Throttled + p.Read.Throttled
	}
	tp := fmt.Sprintf("%s RCU, %s WCU", num(ts.RCU), num(ts.WCU))
	if ts.OnDemand {
		tp = "on demand"
	}
	return fmt.Sprintf("%s (%s): %s, %s WCU and %s RCU used, %s throttled", name, tp,
		plural(len(ts.Partitions), "partition"), num(wcu), num(rcu), num(float64(throttled)))
}
