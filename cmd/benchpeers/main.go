// Command benchpeers is the command line of package peers: it measures
// rlbench against redis-benchmark and against a bare loop of the same
// client (cmd/bareloop) on one private redis-server.
// scripts/bench-peers.sh builds it and bin/rlbench, then runs it:
//
//	scripts/bench-peers.sh                 # 5 pairs x 10 s per side
//	scripts/bench-peers.sh --short         # CI: 1 pair x 2 s per side
//	scripts/bench-peers.sh --runs 7 --seconds 20 --out peers.json
//
// It measures; it does not judge speed: the exit status is 0 whatever the
// ratios, 1 when something failed to run, 2 for bad flags.
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

	"github.com/rlbench/rlbench/peers"
	"github.com/rlbench/rlbench/workload"
)

// Exit statuses.
const (
	exitOK      = 0
	exitFailure = 1 // a run, the server or the script check failed
	exitUsage   = 2 // bad flags
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	o := peers.Options{Command: append([]string{"benchpeers"}, args...)}
	fs := pflag.NewFlagSet("benchpeers", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.SortFlags = false
	fs.IntVar(&o.Runs, "runs", peers.DefaultRuns, "A B pairs per target")
	fs.IntVar(&o.Seconds, "seconds", peers.DefaultSeconds, "seconds each side of a pair runs")
	fs.IntVar(&o.Keys, "keys", peers.DefaultKeys, fmt.Sprintf("random keys, 1 to %d (rlbench and bare loop --keys, redis-benchmark -r)", workload.MaxKeys))
	short := fs.Bool("short", false, fmt.Sprintf("CI mode: --runs %d --seconds %d unless given", peers.ShortRuns, peers.ShortSeconds))
	fs.StringVar(&o.Out, "out", peers.DefaultOut, "write every figure as JSON to this file")
	fs.IntVar(&o.RBThreads, "rb-threads", 0, "redis-benchmark --threads (0: leave the flag out, its classic single-threaded mode)")
	fs.StringVar(&o.Rlbench, "rlbench", "bin/rlbench", "rlbench binary")
	fs.StringVar(&o.BareLoop, "bare-loop", "bin/bareloop", "bare loop binary (cmd/bareloop)")
	fs.StringVar(&o.RedisBenchmark, "redis-benchmark", "redis-benchmark", "redis-benchmark binary")
	fs.StringVar(&o.RedisCLI, "redis-cli", "redis-cli", "redis-cli binary")
	fs.StringVar(&o.RedisServer, "redis-server", "", "redis-server binary (default: redis-server on PATH)")
	fs.StringSliceVar(&o.Clients, "client", nil, "run only the targets of these rlbench clients, comma-separated: go-redis, rueidis, valkey-go, redigo (default: every target)")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: benchpeers [flags]\n\nAlternate rlbench, bare-loop and redis-benchmark runs on one private\nredis-server and print rlbench's throughput ratio to each.\n\nFlags:\n%s", fs.FlagUsages())
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
			o.Runs = peers.ShortRuns
		}
		if !fs.Changed("seconds") {
			o.Seconds = peers.ShortSeconds
		}
	}
	if o.Runs < 1 {
		fmt.Fprintf(stderr, "benchpeers: --runs must be >= 1, got %d\n", o.Runs)
		return exitUsage
	}
	if o.Seconds < 1 {
		fmt.Fprintf(stderr, "benchpeers: --seconds must be >= 1, got %d\n", o.Seconds)
		return exitUsage
	}
	if o.Keys < 1 || o.Keys > workload.MaxKeys {
		fmt.Fprintf(stderr, "benchpeers: --keys must be 1 to %d, got %d\n", workload.MaxKeys, o.Keys)
		return exitUsage
	}
	if o.RBThreads < 0 {
		fmt.Fprintf(stderr, "benchpeers: --rb-threads must be >= 0, got %d\n", o.RBThreads)
		return exitUsage
	}
	if err := peers.CheckClients(o.Clients); err != nil {
		fmt.Fprintf(stderr, "benchpeers: --client: %v\n", err)
		return exitUsage
	}
	if err := peers.Run(ctx, o, stdout); err != nil {
		fmt.Fprintf(stderr, "benchpeers: %v\n", err)
		return exitFailure
	}
	return exitOK
}
