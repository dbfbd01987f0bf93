package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/pflag"

	"github.com/rlbench/rlbench/clients"
	"github.com/rlbench/rlbench/strategies"
	"github.com/rlbench/rlbench/verify"
)

// verifyOptions are the settings of `rlbench verify`.
type verifyOptions struct {
	cfg                verify.Config
	jsonPath           string
	scripts, functions []string
}

func newVerifyFlagSet(o *verifyOptions, stderr io.Writer) *pflag.FlagSet {
	fs := pflag.NewFlagSet("rlbench verify", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.SortFlags = false
	c := &o.cfg
	fs.StringSliceVar(&c.Strategies, "strategy", []string{"all"}, "strategies to check, comma-separated, or all ("+strings.Join(strategies.Names(), ", ")+")")
	fs.StringSliceVar(&c.Clients, "client", []string{"all"}, "Redis clients to drive, comma-separated, or all ("+strings.Join(clients.Names, ", ")+")")
	fs.StringVar(&c.Addr, "addr", "", "host:port of an existing server (default: start a private redis-server on a free loopback port); the noscript and restart checks need the private server")
	fs.StringVar(&c.Password, "password", "", "password for --addr (default: $REDISCLI_AUTH)")
	fs.IntVar(&c.DB, "db", 0, "database number on --addr")
	fs.StringVar(&c.RedisServer, "redis-server", "", "redis-server binary for the private server (default: redis-server on PATH)")
	fs.StringVar(&c.Prefix, "prefix", "", `key prefix; every key the checks write starts with it, and is deleted at the end (default "rlbench-verify:<id>:")`)
	fs.StringVar(&o.jsonPath, "json", "", "write the matrix as JSON to this file")
	addUserStrategyFlags(fs, &o.scripts, &o.functions)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: rlbench verify [flags]\n\n"+
			"Check each strategy's documented guarantees on each client against a real Redis\n"+
			"and print a matrix: one row per strategy x client, one column per check\n"+
			"(%s).\n"+
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

// runVerify is `rlbench verify`: it checks each strategy's guarantees and
// prints the matrix.
func runVerify(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var o verifyOptions
	fs := newVerifyFlagSet(&o, stderr)
	if code, ok := parseFlags(fs, args, stderr); !ok {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "rlbench verify: unexpected argument %q (see rlbench verify --help)\n", fs.Arg(0))
		return exitUsage
	}
	if names, code, ok := registerUserStrategies(fs, "rlbench verify", o.scripts, o.functions, stderr); !ok {
		return code
	} else if names != nil {
		o.cfg.Strategies = names
	}
	if !fs.Changed("password") {
		o.cfg.Password = os.Getenv("REDISCLI_AUTH")
	}
	o.cfg.Log = stderr
	var jsonFile *os.File
	if o.jsonPath != "" {
		// Created now: a path that cannot be written is bad input, found
		// before anything is written to Redis.
		f, err := os.Create(o.jsonPath)
		if err != nil {
			fmt.Fprintf(stderr, "rlbench verify: --json: %v\n", err)
			return exitUsage
		}
		defer f.Close()
		jsonFile = f
	}

	m, err := verify.Run(ctx, o.cfg)
	if uerr, ok := errors.AsType[*verify.UsageError](err); ok {
		fmt.Fprintf(stderr, "rlbench verify: %s\n", usageMessage(uerr, verifyFlags))
		return exitUsage
	}
	code := exitOK
	if m != nil {
		if werr := verify.Text(m)(stdout); werr != nil {
			fmt.Fprintf(stderr, "rlbench verify: %v\n", werr)
			code = exitFailure
		}
		if jsonFile != nil {
			werr := verify.JSON(m)(jsonFile)
			if cerr := jsonFile.Close(); werr == nil {
				werr = cerr
			}
			if werr != nil {
				fmt.Fprintf(stderr, "rlbench verify: --json: %v\n", werr)
				code = exitFailure
			}
		}
		if !m.AsDocumented() {
			code = exitFailure
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "rlbench verify: %v\n", err)
		return exitFailure
	}
	return code
}
