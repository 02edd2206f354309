package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
)

// errUsage marks an error caused by the command line (exit status 2).
var errUsage = errors.New("usage")

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run runs the bench with args and returns the exit status.
func run(args []string, stdout, stderr io.Writer) int {
	err := runBench(args, stdout, stderr)
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, errUsage):
		fmt.Fprintf(stderr, "dynashard-bench: %v\n", err)
		return 2
	default:
		fmt.Fprintf(stderr, "dynashard-bench: %v\n", err)
		return 1
	}
}
