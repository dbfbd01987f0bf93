// Command bareloop is peers.BareLoop's command line: rlbench's closed loop
// of the lua strategy with nothing of rlbench's own (no clock reads,
// histogram or admission tracking), so that scripts/bench-peers.sh can
// measure rlbench's own cost against it. It prints its figures as one line
// of JSON (peers.BareResult).
//
//	bareloop --addr 127.0.0.1:PORT --client rueidis --clients 500 --keys 100000 --duration 10s
//
// Exit status: 0 when every decision succeeded, 1 when something failed,
// 2 for bad flags.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"github.com/rlbench/rlbench"
	"github.com/rlbench/rlbench/clients"
	"github.com/rlbench/rlbench/peers"
	"github.com/rlbench/rlbench/workload"
)

// Exit statuses.
const (
	exitOK      = 0
	exitFailure = 1
	exitUsage   = 2
)

func main() {
	rlbench.SetDefaultGC() // as the rlbench command's
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var c peers.BareConfig
	fs := pflag.NewFlagSet("bareloop", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.SortFlags = false
	fs.StringVar(&c.Addr, "addr", "", "host:port of the server (required)")
	fs.StringVar(&c.Client, "client", "go-redis", "client library: "+strings.Join(clients.Names, ", "))
	fs.IntVar(&c.Workers, "workers", 500, "concurrent workers, each in a closed loop")
	fs.IntVar(&c.Workers, "clients", 500, "alias of --workers")
	fs.IntVar(&c.Connections, "connections", 0, "connections to the server, as rlbench's --connections (0: the client's default)")
	fs.IntVar(&c.Keys, "keys", 100_000, "distinct keys, chosen uniformly")
	fs.StringVar(&c.Prefix, "prefix", "rl:bare:", "key prefix; the keys are deleted at the end")
	fs.DurationVar(&c.Warmup, "warmup", time.Second, "uncounted loop before the counted one")
	fs.DurationVar(&c.Duration, "duration", 10*time.Second, "how long the counted loop runs")
	fs.Int64Var(&c.Limit, "limit", 1_000_000_000, "the lua strategy's limit per key per window")
	fs.Int64Var(&c.Window, "window", 60, "the lua strategy's window, in whole seconds")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return exitOK
		}
		fmt.Fprintf(stderr, "bareloop: %v\n", err)
		return exitUsage
	}
	if err := check(fs, c); err != nil {
		fmt.Fprintf(stderr, "bareloop: %v\n", err)
		return exitUsage
	}
	res, err := peers.BareLoop(ctx, c)
	if err != nil {
		fmt.Fprintf(stderr, "bareloop: %v\n", err)
		return exitFailure
	}
	data, _ := json.Marshal(res) // plain numbers and a string: cannot fail
	fmt.Fprintf(stdout, "%s\n", data)
	return exitOK
}

// check refuses bad flags, naming the flag.
func check(fs *pflag.FlagSet, c peers.BareConfig) error {
	switch {
	case fs.NArg() > 0:
		return fmt.Errorf("unexpected argument %q (see --help)", fs.Arg(0))
	case c.Addr == "":
		return errors.New("--addr is required")
	case !slices.Contains(clients.Names, c.Client):
		return fmt.Errorf("--client: unknown client %q (accepted: %s)", c.Client, strings.Join(clients.Names, ", "))
	case c.Workers < 1:
		return fmt.Errorf("%s must be >= 1, got %d", workersFlag(fs), c.Workers)
	case c.Keys < 1 || c.Keys > workload.MaxKeys:
		return fmt.Errorf("--keys must be from 1 to %d, got %d", workload.MaxKeys, c.Keys)
	case c.Prefix == "":
		return errors.New("--prefix must not be empty")
	case c.Warmup < 0:
		return fmt.Errorf("--warmup must be >= 0, got %s", c.Warmup)
	case c.Duration <= 0:
		return fmt.Errorf("--duration must be > 0, got %s", c.Duration)
	case c.Limit < 1 || c.Window < 1:
		return fmt.Errorf("--limit and --window must be >= 1, got %d and %d", c.Limit, c.Window)
	}
	if err := clients.CheckOptions(c.Client, clients.Options{Connections: c.Connections}); err != nil {
		return fmt.Errorf("--connections: %w", err)
	}
	return nil
}

// workersFlag names the flag that set the workers as the user typed it:
// --clients, the alias, when only it was given; else --workers.
func workersFlag(fs *pflag.FlagSet) string {
	if fs.Changed("clients") && !fs.Changed("workers") {
		return "--clients"
	}
	return "--workers"
}
