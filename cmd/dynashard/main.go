// Command dynashard is the operator's tool for dynashard's write sharding.
//
// Usage:
//
//	dynashard analyze [-n 200] [-strategies hash,codepoint] [file|-]
//	dynashard plan [-rcu R -wcu W [-size 20GB] [-new-rcu R2 -new-wcu W2] [-split I ...]] [-writes X ...]
//	dynashard plan -load-items N -load-time D [-item-bytes B] [-steady-wcu W] [-writes X ...]
//	dynashard proxy -target URL [-listen 127.0.0.1:8000] [-model perkey|partitioned] [model and fault flags] [-stats 1s]
//	dynashard -version
//
// analyze reads ids, one per line, from a file or standard input. It shows,
// strategy beside strategy, how evenly each spreads them over N suffixes.
// Run it on a sample of real ids before choosing a strategy.
//
// plan answers the DynamoDB guide's partition questions with package
// partition, the arithmetic the fault proxy's partition model uses too:
//
//   - how many partitions a provisioned table has and what each serves,
//     after a throughput change (-new-rcu, -new-wcu) and after a partition
//     fills and splits (-split);
//   - what a bulk load in a given time needs, and what it leaves each
//     partition once throughput is lowered again (-load-items, -load-time,
//     -steady-wcu), with the slower load that leaves fewer;
//   - the shard count for one hot logical key (-writes). It is planned
//     against the table's smallest partition share when the table is
//     described, else against DynamoDB's 1,000 WCU per partition.
//
// Sizes need a unit (20GB, 512MiB): a bare number is refused. Some figures
// no plan could use: NaN, Inf, negative, -writes 0, or more than any table
// of partition.MaxPartitions partitions or shard.MaxN keys takes. Such a
// figure is a usage error naming its flag (exit status 2). Figures in range
// that have no plan together exit 1. A plan is printed whole or not at all.
//
// Help (-h) and every error go to standard error; only results go to
// standard output.
//
// proxy puts the test kit's fault proxy (package
// github.com/dynashard/dynashard/dynashardtest/faultproxy) in front of a
// local DynamoDB-compatible endpoint. So services written with any SDK can
// be tested against DynamoDB's throttling: point the service's endpoint at
// the URL it prints. It has two models:
//
//   - Its per-key model (the default, as for faultproxy.Config's zero
//     value) gives each partition-key value -wcu and -rcu of its own.
//   - -model partitioned divides a provisioned table's throughput among
//     partitions as DynamoDB does. It takes the throughput from the
//     CreateTable and UpdateTable requests that pass through; -table
//     NAME=RCU,WCU overrides them. It models burst (-burst-window),
//     adaptive capacity (-adaptive, -adaptive-delay), splits
//     (-partition-size) and a time scale (-time-scale).
//
// Both keep one second of unused capacity by default (-burst,
// -burst-window), as the package does. So a low capacity throttles within
// seconds; -burst-window 5m is DynamoDB's 300 s. Fault flags add
// UnprocessedItems (-unprocessed), throttling (-throttle), HTTP 500s
// (-error, -error-after), resets, truncated responses and latency, drawn
// from -seed.
//
// The proxy prints "listening on URL ..." to stdout. While its counters
// change, it prints a line of them to stderr every -stats: requests,
// forwarded, throttled, unprocessed, and each table's partitions. It stops
// cleanly on SIGINT or SIGTERM. The target must not check request
// signatures (DynamoDB Local and dynalite do not): requests are forwarded
// as signed for the proxy.
//
// -version (or --version) prints the module version: a release's, or
// "(devel)" for a build from a checkout.
//
// The benchmarks that measure the library against naive baselines are not
// here. They live in their own module, github.com/dynashard/dynashard/bench
// (the bench directory of the repository). Run them with "cd bench && go
// run . -quick". So neither this command nor the library pulls in the
// plotting code.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"sort"
	"strings"
)

// command is one subcommand: run gets the arguments after its name.
type command struct {
	summary string
	run     func(args []string, stdin io.Reader, stdout, stderr io.Writer) error
}

// commands is the subcommand table.
var commands = map[string]command{
	"analyze": {"show how evenly strategies spread a sample of ids", runAnalyze},
	"plan":    {"the guide's partition questions: a table's partitions, a split, a bulk load, a hot key's shard count", runPlan},
	"proxy":   {"DynamoDB's throttling and faults in front of a local endpoint, for any SDK", runProxy},
}

// benchHint says where the bench subcommand of earlier versions went.
const benchHint = "benchmarks: the bench module, github.com/dynashard/dynashard/bench (in a checkout: cd bench && go run . -h)"

// errUsage marks an error caused by the command line (exit status 2).
var errUsage = errors.New("usage")

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return 2
	}
	if isHelp(args[0]) || args[0] == "help" {
		usage(stdout) // asked for: the answer, on standard output
		return 0
	}
	switch args[0] {
	case "-version", "--version":
		fmt.Fprintln(stdout, "dynashard", version())
		return 0
	}
	cmd, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "dynashard: unknown command %q\n", args[0])
		usage(stderr)
		return 2
	}
	err := cmd.run(args[1:], stdin, stdout, stderr)
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, errUsage):
		fmt.Fprintf(stderr, "dynashard %s: %v\n", args[0], err)
		return 2
	default:
		fmt.Fprintf(stderr, "dynashard %s: %v\n", args[0], err)
		return 1
	}
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: dynashard <command> [flags] [args]")
	fmt.Fprintln(w, "commands:")
	names := make([]string, 0, len(commands))
	for name := range commands {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		fmt.Fprintf(w, "  %-8s %s\n", name, commands[name].summary)
	}
	fmt.Fprintln(w, "run 'dynashard <command> -h' for a command's flags; 'dynashard -version' for the version")
	fmt.Fprintln(w, benchHint)
}

// version returns the module version the binary was built from: a
// release's ("v1.2.0"), or "(devel)" for a build from a checkout, with the
// commit when the build recorded one.
func version() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "(devel)"
	}
	v := info.Main.Version
	if v == "" {
		v = "(devel)"
	}
	var rev, dirty string
	for _, s := range info.Settings {
		switch {
		case s.Key == "vcs.revision" && len(s.Value) >= 12:
			rev = s.Value[:12]
		case s.Key == "vcs.modified" && s.Value == "true":
			dirty = ", modified"
		}
	}
	if rev != "" && v == "(devel)" {
		v += " (commit " + rev + dirty + ")"
	}
	return v
}

// newFlags returns a FlagSet that reports errors instead of exiting.
func newFlags(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("dynashard "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	return fs
}

func isHelp(arg string) bool { return arg == "-h" || arg == "-help" || arg == "--help" }

// parse parses args, turning a flag error into errUsage. The usage goes
// to the FlagSet's output after a usage error, to stdout when a flag
// asks for it.
func parse(fs *flag.FlagSet, args []string, stdout io.Writer) error {
	for _, a := range args {
		if a == "--" || !strings.HasPrefix(a, "-") {
			break
		}
		if isHelp(a) {
			fs.SetOutput(stdout)
			break
		}
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	return nil
}
