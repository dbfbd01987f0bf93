// Command benchpeers measures rlbench against redis-benchmark, the C load
// generator people already trust, on one private redis-server and the second
// seed's Lua script, so that a slow load generator cannot pass unnoticed.
// scripts/bench-peers.sh builds it and bin/rlbench, then runs it:
//
//	scripts/bench-peers.sh                 # 5 pairs x 10 s per side
//	scripts/bench-peers.sh --short         # CI: 1 pair x 2 s per side
//	scripts/bench-peers.sh --runs 7 --seconds 20 --out peers.json
//
// For each target it alternates the two tools, A B A B ..., on the same
// server and workload (500 clients, 100,000 random keys of the same length,
// EVALSHA of the same script), prints each pair's ratio rlbench/redis-benchmark and the median
// ratio, and writes every figure as JSON. It measures; it does not judge
// speed: the exit status is 0 whatever the ratios, 1 when something failed to
// run, 2 for bad flags.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/pflag"
)

// Exit statuses.
const (
	exitOK      = 0
	exitFailure = 1 // a run, the server or the script check failed
	exitUsage   = 2 // bad flags
)

// Defaults, also the flags'.
const (
	// DefaultRuns is the number of A B pairs per target.
	DefaultRuns = 5
	// DefaultSeconds is how long each side of a pair runs, in seconds.
	DefaultSeconds = 10
	// ShortRuns and ShortSeconds are --short's pairs and seconds per side.
	ShortRuns    = 1
	ShortSeconds = 2
	// DefaultOut is the JSON file written.
	DefaultOut = "bench-peers.json"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	o := options{command: append([]string{"benchpeers"}, args...)}
	fs := pflag.NewFlagSet("benchpeers", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.SortFlags = false
	fs.IntVar(&o.runs, "runs", DefaultRuns, "A B pairs per target")
	fs.IntVar(&o.seconds, "seconds", DefaultSeconds, "seconds each side of a pair runs")
	short := fs.Bool("short", false, fmt.Sprintf("CI mode: --runs %d --seconds %d unless given", ShortRuns, ShortSeconds))
	fs.StringVar(&o.out, "out", DefaultOut, "write every figure as JSON to this file")
	fs.IntVar(&o.rbThreads, "rb-threads", 0, "redis-benchmark --threads (0: leave the flag out, its classic single-threaded mode)")
	fs.StringVar(&o.rlbench, "rlbench", "bin/rlbench", "rlbench binary")
	fs.StringVar(&o.redisBenchmark, "redis-benchmark", "redis-benchmark", "redis-benchmark binary")
	fs.StringVar(&o.redisCLI, "redis-cli", "redis-cli", "redis-cli binary")
	fs.StringVar(&o.redisServer, "redis-server", "", "redis-server binary (default: redis-server on PATH)")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: benchpeers [flags]\n\nAlternate rlbench and redis-benchmark runs on one private redis-server and\nprint each pair's throughput ratio.\n\nFlags:\n%s", fs.FlagUsages())
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return exitOK
		}
		fmt.Fprintf(stderr, "benchpeers: %v\n", err)
		return exitUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "benchpeers: unexpected argument %q (see --help)\n", fs.Arg(0))
		return exitUsage
	}
	if *short {
		if !fs.Changed("runs") {
			o.runs = ShortRuns
		}
		if !fs.Changed("seconds") {
			o.seconds = ShortSeconds
		}
	}
	if o.runs < 1 {
		fmt.Fprintf(stderr, "benchpeers: --runs must be >= 1, got %d\n", o.runs)
		return exitUsage
	}
	if o.seconds < 1 {
		fmt.Fprintf(stderr, "benchpeers: --seconds must be >= 1, got %d\n", o.seconds)
		return exitUsage
	}
	if o.rbThreads < 0 {
		fmt.Fprintf(stderr, "benchpeers: --rb-threads must be >= 0, got %d\n", o.rbThreads)
		return exitUsage
	}
	if err := compare(ctx, o, stdout); err != nil {
		fmt.Fprintf(stderr, "benchpeers: %v\n", err)
		return exitFailure
	}
	return exitOK
}
