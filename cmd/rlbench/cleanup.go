package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/pflag"

	"github.com/rlbench/rlbench"
)

// cleanup is `rlbench cleanup --prefix P --addr A`: it deletes the keys of
// a run that was killed before it could (SIGKILL, or a second interrupt).
func (c cli) cleanup(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var cfg rlbench.Config
	var addrs, clusters []rlbench.TargetSpec
	fs := pflag.NewFlagSet("rlbench cleanup", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.SortFlags = false
	fs.Var(textValue{p: &cfg.Workload.Prefix, flag: "--prefix", hint: "give the prefix the killed run printed"}, "prefix", "delete every key that starts with this prefix (the killed run's, as its first lines printed it)")
	fs.Var(targetValue{specs: &addrs, flag: "--addr", kind: targetAddr}, "addr", "[LABEL=]host:port of the server the run used, repeatable")
	fs.Var(targetValue{specs: &clusters, flag: "--cluster", kind: targetCluster}, "cluster", "[LABEL=]host:port[,host:port...] of nodes of the Redis Cluster the run used, repeatable; every master is cleaned")
	var conn connectionFlags
	conn.add(fs)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: rlbench cleanup --prefix P --addr host:port\n\nDelete the keys a killed run left: every key under --prefix, with SCAN and\nUNLINK, on every master of every target. Nothing else is touched.\n\nFlags:\n%s", fs.FlagUsages())
	}
	if err := parseFlagsOnly(fs, args); err != nil {
		return err
	}
	if cfg.Workload.Prefix == "" {
		return badInputHelp(errors.New("--prefix: give the prefix of the keys to delete"))
	}
	cfg.Targets = append(addrs, clusters...)
	if err := conn.apply(fs, &cfg); err != nil {
		return err
	}
	if len(cfg.Targets) == 0 {
		return badInputHelp(errors.New("--addr, --url, --cluster or --sentinel: give the server the run used"))
	}
	n, err := rlbench.Cleanup(ctx, cfg)
	if uerr, ok := errors.AsType[*rlbench.UsageError](err); ok {
		return badInput(errors.New(usageMessage(uerr, runFlags)))
	}
	if err != nil {
		return err
	}
	return printed(fmtLine(stdout, "deleted %d keys under %q\n", n, cfg.Workload.Prefix))
}

// fmtLine writes one formatted line to w.
func fmtLine(w io.Writer, format string, args ...any) error {
	_, err := fmt.Fprintf(w, format, args...)
	return err
}
