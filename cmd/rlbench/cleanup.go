package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/pflag"

	"github.com/rlbench/rlbench"
	"github.com/rlbench/rlbench/keyspace"
)

// cleanup is `rlbench cleanup --prefix P --addr A`: it deletes the keys of
// a run that was killed before it could (SIGKILL, or a second interrupt).
func (c cli) cleanup(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var cfg rlbench.Config
	var opts rlbench.CleanupOptions
	var addrs, clusters []rlbench.TargetSpec
	fs := pflag.NewFlagSet("rlbench cleanup", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.SortFlags = false
	fs.Var(textValue{p: &cfg.Workload.Prefix, flag: "--prefix", hint: "give the prefix the killed run printed"}, "prefix", "delete every key that starts with this prefix (the killed run's, as its first lines printed it)")
	fs.Var(targetValue{specs: &addrs, flag: "--addr", kind: targetAddr}, "addr", "[LABEL=]host:port of the server the run used, repeatable")
	fs.Var(targetValue{specs: &clusters, flag: "--cluster", kind: targetCluster}, "cluster", "[LABEL=]host:port[,host:port...] of nodes of the Redis Cluster the run used, repeatable; every master is cleaned")
	fs.BoolVar(&opts.DryRun, "dry-run", false, "count the keys under --prefix and name a sample of them; delete nothing")
	fs.BoolVar(&opts.Yes, "yes", false, fmt.Sprintf("delete without counting first: more than %d keys, or keys that do not look like rlbench's (%s)", rlbench.CleanupConfirmAbove, keyspace.RunKeyShape))
	var conn connectionFlags
	conn.add(fs)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: rlbench cleanup --prefix P --addr host:port [--dry-run | --yes]\n\nDelete the keys a killed run left: every key under --prefix, with SCAN and\nUNLINK, on every master of every target. Without\n--yes it counts them first and deletes nothing (exit status 2) when there\nare more than %d or some do not look like rlbench's. The temporary ACL\nusers and Functions libraries the run recorded under --prefix go too.\n\nFlags:\n%s", rlbench.CleanupConfirmAbove, fs.FlagUsages())
	}
	if err := parseFlagsOnly(fs, args); err != nil {
		return err
	}
	if cfg.Workload.Prefix == "" {
		return badInputHelp(errors.New("--prefix: give the prefix of the keys to delete"))
	}
	if opts.DryRun && opts.Yes {
		return badInputHelp(errors.New("--dry-run and --yes are exclusive: give one"))
	}
	cfg.Targets = append(addrs, clusters...)
	if err := conn.apply(fs, &cfg); err != nil {
		return err
	}
	if len(cfg.Targets) == 0 {
		return badInputHelp(errors.New("--addr, --url, --cluster or --sentinel: give the server the run used"))
	}
	opts.Abort = c.abort
	rep, err := rlbench.Cleanup(ctx, cfg, opts)
	if uerr, ok := errors.AsType[*rlbench.UsageError](err); ok {
		return badInput(errors.New(usageMessage(uerr, runFlags)))
	}
	if errors.Is(err, rlbench.ErrCleanupUnconfirmed) {
		return badInput(fmt.Errorf("--prefix: %w: check --prefix (--dry-run names a sample), or give --yes", err))
	}
	if err != nil {
		return err
	}
	if opts.DryRun {
		return printed(printDryRun(stdout, rep))
	}
	if err := printed(printObjects(stdout, rep, "")); err != nil {
		return err
	}
	return printed(fmtLine(stdout, "deleted %d keys under %q\n", rep.Deleted, cfg.Workload.Prefix))
}

// printObjects prints the objects other than keys a killed run left
// (temporary ACL users, libraries), and what became of each; with dry,
// what a cleanup would do.
func printObjects(w io.Writer, rep rlbench.CleanupReport, dry string) error {
	var b strings.Builder
	for _, o := range rep.Objects {
		switch {
		case dry != "" && o.Kept == "":
			fmt.Fprintf(&b, "%s %q on %s, recorded by %q: %s\n", o.Kind, o.Name, o.Node, o.Record, dry)
		default:
			fmt.Fprintf(&b, "%s (recorded by %q)\n", o, o.Record)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// printDryRun prints what a dry run found: the count, a sample, and what
// a cleanup without --yes would refuse.
func printDryRun(w io.Writer, rep rlbench.CleanupReport) error {
	var b strings.Builder
	fmt.Fprintf(&b, "dry run: %d keys under %q, none deleted\n", rep.Found, rep.Prefix)
	for _, k := range rep.Sample {
		fmt.Fprintf(&b, "  %q\n", k)
	}
	if n := rep.Found - int64(len(rep.Sample)); n > 0 {
		fmt.Fprintf(&b, "  ... and %d more\n", n)
	}
	if rep.Foreign > 0 {
		fmt.Fprintf(&b, "%d of them do not look like rlbench's (%s), such as:\n", rep.Foreign, keyspace.RunKeyShape)
		for _, k := range rep.ForeignSample {
			fmt.Fprintf(&b, "  %q\n", k)
		}
	}
	if err := printObjects(&b, rep, "would be deleted"); err != nil {
		return err
	}
	if rep.Foreign > 0 || rep.Found > rlbench.CleanupConfirmAbove {
		fmt.Fprintf(&b, "rlbench cleanup would delete them only with --yes\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// fmtLine writes one formatted line to w.
func fmtLine(w io.Writer, format string, args ...any) error {
	_, err := fmt.Fprintf(w, format, args...)
	return err
}
