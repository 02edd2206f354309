package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/go-cmp/cmp"

	"github.com/dynashard/dynashard/dynashardtest"
	"github.com/dynashard/dynashard/dynashardtest/faultproxy"
)

// buildCLI builds the command into a temporary directory and returns the
// binary's path.
func buildCLI(t *testing.T) string {
	t.Helper()
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command, to build the CLI: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "dynashard")
	if runtime.GOOS == "windows" {
		bin += ".exe"
	}
	out, err := exec.Command(goCmd, "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// firstLine is an io.Writer for a process's stdout that hands over its
// first line.
type firstLine struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	once sync.Once
	line chan string
}

func (w *firstLine) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if l, _, ok := strings.Cut(w.buf.String(), "\n"); ok {
		w.once.Do(func() { w.line <- l })
	}
	return len(p), nil
}

// cliProxy is "dynashard proxy" running as a process of its own.
type cliProxy struct {
	cmd    *exec.Cmd
	url    string
	stderr bytes.Buffer // read only after wait
	exited chan struct{}
	err    error // of cmd.Wait, set before exited is closed
}

var urlLine = regexp.MustCompile(`^listening on (http://\S+) `)

// startCLIProxy starts the binary's proxy subcommand and waits for the line
// with its URL.
func startCLIProxy(t *testing.T, bin string, args ...string) *cliProxy {
	t.Helper()
	p := &cliProxy{exited: make(chan struct{})}
	out := &firstLine{line: make(chan string, 1)}
	p.cmd = exec.Command(bin, append([]string{"proxy"}, args...)...)
	p.cmd.Stdout, p.cmd.Stderr = out, &p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.err = p.cmd.Wait(); close(p.exited) }()
	t.Cleanup(func() {
		select {
		case <-p.exited:
		default:
			p.cmd.Process.Kill()
			<-p.exited
		}
	})
	select {
	case l := <-out.line:
		m := urlLine.FindStringSubmatch(l)
		if m == nil {
			t.Fatalf("first line %q: want listening on http://...", l)
		}
		p.url = m[1]
	case <-p.exited:
		t.Fatalf("dynashard proxy exited before its URL line: %v\n%s", p.err, p.stderr.String())
	case <-time.After(time.Minute): // a guard against a hang, not a measurement
		t.Fatal("no URL line from dynashard proxy within a minute")
	}
	return p
}

// TestProxyCommand runs "dynashard proxy" as a process in front of DynamoDB
// Local and drives it with the Go SDK: a provisioned table created through
// it throttles writes beyond its capacity, -unprocessed 1 hands batch
// writes back, and SIGTERM stops it with status 0.
func TestProxyCommand(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the test stops the proxy with SIGTERM")
	}
	bin := buildCLI(t)
	srv := dynashardtest.Start(t)
	p := startCLIProxy(t, bin, "-target", srv.Endpoint(), "-listen", "127.0.0.1:0", "-model", "partitioned",
		"-burst-window", "1ms", "-adaptive", "off", "-unprocessed", "1", "-stats", "50ms")

	// The kit on an Endpoint: its CreateTable and Client go through the
	// CLI's proxy, which reads the table's throughput as it passes.
	via := dynashardtest.Start(t, func(o *dynashardtest.Options) { o.Endpoint = p.url })
	ctx := context.Background()
	table := dynashardtest.TableName(t.Name())
	if err := via.CreateTable(ctx, provisionedTable(table, 1, 1)); err != nil {
		t.Fatal(err)
	}
	c := via.Client(func(o *dynamodb.Options) { o.RetryMaxAttempts = 1 })

	// One partition of 1 WCU and no burst: a run of writes is throttled.
	var pte *types.ProvisionedThroughputExceededException
	for i := 0; i < 100 && pte == nil; i++ {
		_, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: item(i)})
		if err != nil && !errors.As(err, &pte) {
			t.Fatal(err)
		}
	}
	if pte == nil {
		t.Error("100 writes to a 1 WCU table: got no ProvisionedThroughputExceededException")
	}

	out, err := c.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{
		table: {{PutRequest: &types.PutRequest{Item: item(1000)}}, {PutRequest: &types.PutRequest{Item: item(1001)}}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if got := len(out.UnprocessedItems[table]); got != 2 {
		t.Errorf("BatchWriteItem with -unprocessed 1: got %d unprocessed items, want 2", got)
	}

	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	<-p.exited
	if p.err != nil {
		t.Errorf("after SIGTERM: %v, want exit status 0; stderr:\n%s", p.err, p.stderr.String())
	}
	// The last line: totals and the table's one partition.
	stderr := p.stderr.String()
	t.Logf("stderr:\n%s", stderr)
	for _, want := range []string{"stopped after", "1 throttled", "2 unprocessed", table + " (1 RCU, 1 WCU): 1 partition,"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
}

func provisionedTable(name string, rcu, wcu int64) *dynamodb.CreateTableInput {
	return &dynamodb.CreateTableInput{
		TableName:             aws.String(name),
		AttributeDefinitions:  []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:             []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
		ProvisionedThroughput: &types.ProvisionedThroughput{ReadCapacityUnits: aws.Int64(rcu), WriteCapacityUnits: aws.Int64(wcu)},
	}
}

func item(i int) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: fmt.Sprintf("key-%d", i)}}
}

// TestProxyCommandBadFlags: the binary exits 2 and names the flag.
func TestProxyCommandBadFlags(t *testing.T) {
	bin := buildCLI(t)
	for _, tc := range []struct {
		args []string
		flag string
	}{
		{[]string{"proxy"}, "-target"},
		{[]string{"proxy", "-target", "http://127.0.0.1:1", "-unprocessed", "2"}, "-unprocessed"},
	} {
		cmd := exec.Command(bin, tc.args...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		err := cmd.Run()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 2 {
			t.Errorf("%q: got %v, want exit status 2", tc.args, err)
		}
		if !strings.Contains(stderr.String(), tc.flag) {
			t.Errorf("%q: stderr does not name %s:\n%s", tc.args, tc.flag, stderr.String())
		}
	}
}

// TestProxyFlags: the flags map onto faultproxy.Config.
func TestProxyFlags(t *testing.T) {
	f, err := parseProxy([]string{"-target", "http://127.0.0.1:8001", "-listen", ":0", "-model", "partitioned",
		"-table", "orders=5000,2000", "-table", "orders/byDay=on-demand", "-burst-window", "10s",
		"-adaptive", "instant", "-adaptive-delay", "1m", "-partition-size", "64KB", "-time-scale", "60",
		"-unprocessed", "0.5", "-throttle", "0.1", "-error", "0.2", "-error-after", "0.3", "-reset-before", "0.4",
		"-reset-after", "0.05", "-truncate", "0.06", "-latency", "5ms", "-jitter", "2ms",
		"-ops", "BatchWriteItem, Query", "-keys", "a,b", "-seed", "7"}, &bytes.Buffer{}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	want := faultproxy.Config{
		Model: faultproxy.Partitioned,
		Partition: faultproxy.PartitionConfig{
			Tables: map[faultproxy.TableKey]faultproxy.Throughput{
				{Table: "orders"}:                 {RCU: 5000, WCU: 2000},
				{Table: "orders", Index: "byDay"}: {OnDemand: true},
			},
			BurstWindow: 10 * time.Second, Adaptive: faultproxy.AdaptiveInstant, AdaptiveDelay: time.Minute,
			PartitionSize: 64 << 10, TimeScale: 60,
		},
		UnprocessedRate: 0.5, ThrottleRate: 0.1, ErrorRate: 0.2, ErrorAfterRate: 0.3, ResetBeforeRate: 0.4,
		ResetAfterRate: 0.05, TruncateRate: 0.06, Latency: 5 * time.Millisecond, Jitter: 2 * time.Millisecond,
		Ops: []string{"BatchWriteItem", "Query"}, Keys: []string{"a", "b"}, Seed: 7,
	}
	if diff := cmp.Diff(f.cfg, want); diff != "" {
		t.Errorf("partition model flags (-got +want):\n%s", diff)
	}
	f, err = parseProxy([]string{"-target", "http://127.0.0.1:8001", "-model", "perkey", "-wcu", "100", "-rcu", "300", "-burst", "2s"}, &bytes.Buffer{}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	want = faultproxy.Config{Model: faultproxy.PerKey, WCU: 100, RCU: 300, Burst: 2 * time.Second}
	if diff := cmp.Diff(f.cfg, want); diff != "" {
		t.Errorf("per-key model flags (-got +want):\n%s", diff)
	}
	if f.listen != "127.0.0.1:8000" || f.stats != time.Second {
		t.Errorf("defaults: -listen %q, -stats %v, want 127.0.0.1:8000, 1s", f.listen, f.stats)
	}
}

// TestProxyDefaults: with no model or capacity flags the command configures
// exactly faultproxy.Config's zero value, so the command and the package
// share one default.
func TestProxyDefaults(t *testing.T) {
	f, err := parseProxy([]string{"-target", "http://127.0.0.1:8001"}, &bytes.Buffer{}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(f.cfg, faultproxy.Config{}); diff != "" {
		t.Errorf("defaults differ from faultproxy.Config{} (-got +want):\n%s", diff)
	}
}

// TestProxyLowCapacityThrottles is the user: 300 writes against a
// capacity of 10 WCU, through the command with nothing but the capacity
// given, in either model. Both keep one second of unused capacity by
// default, so the run is throttled (with DynamoDB's 300 s of burst, the
// partition model admitted all 300).
func TestProxyLowCapacityThrottles(t *testing.T) {
	bin := buildCLI(t)
	srv := dynashardtest.Start(t)
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"per-key model, -wcu 10", []string{"-wcu", "10", "-rcu", "10"}},
		{"partition model, a table of 10 WCU", []string{"-model", "partitioned"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := startCLIProxy(t, bin, append([]string{"-target", srv.Endpoint(), "-listen", "127.0.0.1:0", "-stats", "0"}, tc.args...)...)
			via := dynashardtest.Start(t, func(o *dynashardtest.Options) { o.Endpoint = p.url })
			ctx := context.Background()
			table := dynashardtest.TableName("low")
			if err := via.CreateTable(ctx, provisionedTable(table, 10, 10)); err != nil {
				t.Fatal(err)
			}
			c := via.Client(func(o *dynamodb.Options) { o.RetryMaxAttempts = 1 })
			throttled := 0
			for i := range 300 {
				_, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: item(i % 3)})
				var pte *types.ProvisionedThroughputExceededException
				switch {
				case errors.As(err, &pte):
					throttled++
				case err != nil:
					t.Fatal(err)
				}
			}
			if throttled == 0 {
				t.Errorf("300 writes against 10 WCU: none throttled")
			}
		})
	}
}
