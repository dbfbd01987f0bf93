package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"strings"

	"github.com/spf13/pflag"

	"github.com/rlbench/rlbench"
	"github.com/rlbench/rlbench/clients"
	"github.com/rlbench/rlbench/strategies"
	"github.com/rlbench/rlbench/verify"
)

// verifyOptions are the settings of `rlbench verify`.
type verifyOptions struct {
	cfg                verify.Config
	jsonPath           string
	scripts, functions []string
	sequences          []string
	// connection holds the login flags, --url and --sentinel.
	connection connectionFlags
	// addr and redisServer are --addr and --redis-server.
	addr, redisServer string
	// targets are those of --cluster, --managed-cluster and
	// --managed-sentinel: at most one, as of every target flag.
	targets []rlbench.TargetSpec
}

func newVerifyFlagSet(o *verifyOptions, stderr io.Writer) *pflag.FlagSet {
	fs := pflag.NewFlagSet("rlbench verify", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.SortFlags = false
	c := &o.cfg
	fs.Var(newListValue(&c.Strategies, []string{"all"}, "--strategy", strategies.Names()), "strategy", "strategies to check, comma-separated, or all ("+strings.Join(strategies.Names(), ", ")+")")
	fs.Var(newListValue(&c.Clients, []string{"all"}, "--client", clients.Names), "client", "Redis clients to drive, comma-separated, or all ("+strings.Join(clients.Names, ", ")+")")
	fs.Var(textValue{p: &o.addr, flag: "--addr", check: checkAddr, hint: "give host:port, or leave out --addr to start a private server"}, "addr", "host:port of an existing server (default: start a private redis-server on a free loopback port); the noscript and restart checks need the private server")
	fs.Var(targetValue{specs: &o.targets, flag: "--cluster", kind: targetCluster}, "cluster", "[LABEL=]host:port[,host:port...] of nodes of an existing Redis Cluster; the clients discover the rest and route by slot")
	fs.Var(targetValue{specs: &o.targets, flag: "--managed-cluster", kind: targetManagedCluster}, "managed-cluster", "[LABEL=]N[xR]: start a private Redis Cluster of N masters with R replicas each (redis-server on PATH) on free loopback ports; stopped at the end")
	fs.Var(targetValue{specs: &o.targets, flag: "--managed-sentinel", kind: targetManagedSentinel}, "managed-sentinel", "[LABEL=]R: start a private master with R replicas and three sentinels on free loopback ports; the clients reach it through the sentinels; stopped at the end")
	o.connection.add(fs)
	fs.Var(textValue{p: &o.redisServer, flag: "--redis-server", hint: "give PATH, or leave out --redis-server for redis-server on PATH"}, "redis-server", "redis-server binary for the private server (default: redis-server on PATH)")
	fs.Var(textValue{p: &c.Prefix, flag: "--prefix", hint: `leave out --prefix for "rlbench-verify:<id>:"`}, "prefix", `key prefix; every key the checks write starts with it, and is deleted at the end (default "rlbench-verify:<id>:")`)
	fs.StringVar(&o.jsonPath, "json", "", `write the matrix as JSON to this file ("-": to stdout, and the matrix to stderr)`)
	addUserStrategyFlags(fs, &o.scripts, &o.functions, &o.sequences)
	addScriptTimeoutFlag(fs, &c.ScriptTimeout)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: rlbench verify [flags]\n\n"+
			"Check each strategy's documented guarantees on each client against a real Redis\n"+
			"and print a matrix: one row per strategy x client, one column per check\n"+
			"(%s).\n"+
			"It checks one target: a private server, the server --addr or a single --url\n"+
			"names, a Redis Cluster (--cluster, --managed-cluster) or a master that\n"+
			"Sentinel manages (--sentinel, --managed-sentinel), logged in with the\n"+
			"connection flags (--user, --tls, ...). The noscript and restart checks act on\n"+
			"the whole server: they need a private single server, and are n/a elsewhere.\n"+
			"Exit status 0 when every cell is what its strategy documents, 1 otherwise,\n"+
			"2 for bad input.\n\nFlags:\n%s", strings.Join(verifyCheckNames(), ", "), fs.FlagUsages())
	}
	return fs
}

func verifyCheckNames() []string {
	var names []string
	for _, c := range verify.Checks() {
		names = append(names, c.Name)
	}
	return names
}

// verify is `rlbench verify`: it checks each strategy's guarantees and
// prints the matrix.
func (c cli) verify(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var o verifyOptions
	fs := newVerifyFlagSet(&o, stderr)
	if err := parseFlagsOnly(fs, args); err != nil {
		return err
	}
	reg, err := registerUserStrategies(fs, o.scripts, o.functions, o.sequences, &o.cfg.Strategies)
	if err != nil {
		return err
	}
	o.cfg.Registry = reg
	flags, err := o.login(fs)
	if err != nil {
		return err
	}
	o.cfg.Log = stderr
	var jsonFile *outputFile
	if o.jsonPath != "" {
		// Opened now: a path that cannot be written is bad input, found
		// before anything is written to Redis.
		if jsonFile, err = openOutputFlag("--json", o.jsonPath); err != nil {
			return err
		}
		defer jsonFile.discard()
	}
	// The matrix goes where the JSON does not: stderr under --json -.
	text := stdout
	if o.jsonPath == "-" {
		text = stderr
	}

	m, err := verify.Run(ctx, o.cfg)
	if uerr, ok := errors.AsType[*verify.UsageError](err); ok {
		return badInput(errors.New(usageMessage(uerr, flags)))
	}
	var errs []error
	if m != nil {
		if o.jsonPath != "" {
			errs = append(errs, writeJSONReport(jsonFile, verify.JSON(m), stdout))
		}
		errs = append(errs, printed(verify.Text(m)(text)))
		if !m.AsDocumented() {
			errs = append(errs, errReported)
		}
	}
	return errors.Join(append(errs, err)...)
}

// login puts the target flags and the connection flags into o.cfg's
// Target as the load run puts them into its targets (connectionFlags.apply):
// --addr, --redis-server (or none: the private server), --cluster,
// --managed-cluster or --managed-sentinel, each logged in with the flags'
// login, or a --url or --sentinel target with its own. verify checks one
// target, so it takes one target flag at most, given once. It returns the
// flag of each Config field, for the library's errors: --url sets
// Target.Addr when it names the server.
func (o *verifyOptions) login(fs *pflag.FlagSet) (map[string]string, error) {
	if _, err := o.connection.settings(fs); err != nil {
		return nil, badInput(err)
	}
	n := len(o.targets) + len(o.connection.urls) + len(o.connection.sentinels)
	if o.addr != "" {
		n++
	}
	switch {
	case len(o.connection.urls) > 1:
		return nil, badInput(fmt.Errorf("--url: verify checks one server; got %d URLs", len(o.connection.urls)))
	case len(o.connection.urls) == 1 && o.addr != "":
		return nil, badInput(errors.New("--url and --addr: give one server, not both"))
	case n > 1:
		return nil, badInput(fmt.Errorf("verify checks one target; got %d (give one of --addr, --url, --cluster, --managed-cluster, --sentinel and --managed-sentinel, once)", n))
	case n == 1 && o.addr == "" && o.redisServer != "":
		return nil, badInput(errors.New("--redis-server: it starts a private server, a target of its own; verify checks one target"))
	}
	run := rlbench.Config{Targets: o.targets}
	if len(o.targets)+len(o.connection.urls)+len(o.connection.sentinels) == 0 {
		run.Targets = []rlbench.TargetSpec{{Addr: o.addr, RedisServer: o.redisServer}}
	}
	if err := o.connection.apply(fs, &run); err != nil {
		return nil, err
	}
	o.cfg.Target = run.Targets[0]
	if len(o.connection.urls) == 0 {
		return verifyFlags, nil
	}
	flags := maps.Clone(verifyFlags)
	flags["Target.Addr"] = "--url"
	return flags, nil
}
