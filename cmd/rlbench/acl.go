package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/spf13/pflag"

	"github.com/rlbench/rlbench/acl"
	"github.com/rlbench/rlbench/faults"
	"github.com/rlbench/rlbench/keyspace"
	"github.com/rlbench/rlbench/strategies"
)

// Defaults of rlbench acl.
const (
	// defaultACLPrefix is the key prefix the printed user may touch. The
	// load run's own default prefix, "rlbench:<run-id>:", starts with it
	// (keyspace.RunPrefix), so that runs with no --prefix fit the user.
	defaultACLPrefix = keyspace.DefaultPrefix
	// defaultACLUser is the name of the printed user.
	defaultACLUser = "rlbench"
)

// aclOptions are the settings of `rlbench acl`.
type aclOptions struct {
	strategies         []string
	faults             []faults.Fault
	prefix, user       string
	password           string
	db                 int
	cluster, sentinel  bool
	verbose            bool
	scripts, functions []string
	sequences          []string
}

func newACLFlagSet(o *aclOptions, stderr io.Writer) *pflag.FlagSet {
	fs := pflag.NewFlagSet("rlbench acl", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.SortFlags = false
	fs.Var(newListValue(&o.strategies, []string{"lua"}, "--strategy", strategies.Names()), "strategy", "strategies the user will run, comma-separated, or all ("+strings.Join(strategies.Names(), ", ")+")")
	o.prefix = defaultACLPrefix
	fs.Var(textValue{p: &o.prefix, flag: "--prefix", hint: `leave out --prefix for "` + defaultACLPrefix + `"`}, "prefix", `the only keys the user may touch are those that start with it; the runs' --prefix must start with it too (default "`+defaultACLPrefix+`", which the load run's own default "rlbench:<run-id>:" does)`)
	o.user = defaultACLUser
	fs.Var(textValue{p: &o.user, flag: "--user", hint: `leave out --user for "` + defaultACLUser + `"`}, "user", `name of the ACL user (default "`+defaultACLUser+`")`)
	fs.StringVar(&o.password, "password", "", "the user's password, printed only as its SHA-256 (#...) (default: $REDISCLI_AUTH; without either, the line holds >PASSWORD to replace)")
	fs.Var(faultsValue{p: &o.faults}, "fault", "a fault the runs will inject, as the load run's --fault (KIND@T), repeatable: adds its commands")
	fs.BoolVar(&o.cluster, "cluster-target", false, "the runs target a Redis Cluster (--cluster, --managed-cluster): adds CLUSTER SLOTS and CLUSTER SHARDS")
	fs.BoolVar(&o.sentinel, "sentinel-target", false, "the runs reach the master through Sentinel (--sentinel): adds ROLE")
	fs.IntVar(&o.db, "db", 0, "the runs' --db: a database other than 0 adds SELECT")
	fs.BoolVarP(&o.verbose, "verbose", "v", false, "after the line, list each command and why the runs send it")
	addUserStrategyFlags(fs, &o.scripts, &o.functions, &o.sequences)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: rlbench acl [flags]\n\n"+
			"Print the ACL SETUSER line of a least-privilege user for the load runs of\n"+
			"these strategies: exactly the commands their cells send (the strategies',\n"+
			"rlbench's own: PING, INFO, CONFIG GET, CLIENT SETNAME, SCAN, PTTL, UNLINK,\n"+
			"MULTI, COMMAND INFO; and each fault's; for a --script or --function, the\n"+
			"commands the file calls and the --script-timeout watchdog's), on the keys\n"+
			"under --prefix, and nothing else. It connects to nothing; pipe the line to\n"+
			"redis-cli as an admin:\n\n"+
			"  rlbench acl --strategy lua,multi-nx | redis-cli -u \"$ADMIN_URL\"\n"+
			"  REDISCLI_AUTH=... rlbench --url redis://rlbench@host:6379 --strategy lua,multi-nx\n\n"+
			"With --prefix P, give the runs --prefix P (or a longer prefix that starts\n"+
			"with P); with the default %q, the runs' default prefix fits.\n\nFlags:\n%s", defaultACLPrefix, fs.FlagUsages())
	}
	return fs
}

// acl is `rlbench acl`: it prints the ACL SETUSER line for the cells the
// flags describe, and with -v each command's reason.
func (c cli) acl(_ context.Context, args []string, stdout, stderr io.Writer) error {
	var o aclOptions
	fs := newACLFlagSet(&o, stderr)
	if err := parseFlagsOnly(fs, args); err != nil {
		return err
	}
	reg, err := registerUserStrategies(fs, o.scripts, o.functions, o.sequences, &o.strategies)
	if err != nil {
		return err
	}
	if o.strategies, err = reg.Select(o.strategies); err != nil {
		return badInput(fmt.Errorf("--strategy: %w", err))
	}
	if o.db < 0 {
		return badInput(fmt.Errorf("--db: must be >= 0, got %d", o.db))
	}
	if !fs.Changed("password") {
		o.password = os.Getenv("REDISCLI_AUTH")
	}
	kinds := make([]string, len(o.faults))
	for i, f := range o.faults {
		kinds[i] = f.Kind
	}
	cmds, err := acl.Commands(acl.Needs{Strategies: o.strategies, Registry: reg, Faults: kinds, Cluster: o.cluster, Sentinel: o.sentinel, DB: o.db})
	if err != nil {
		return badInput(err)
	}
	if o.password == "" {
		fmt.Fprintln(stderr, "rlbench acl: no --password or $REDISCLI_AUTH: replace >PASSWORD in the line with >your-password")
	}
	return printed(printACL(stdout, acl.SetUser(o.user, o.password, o.prefix, cmds), cmds, o.verbose))
}

// printACL writes the line and, when verbose, a table of each command and
// why the cells send it.
func printACL(w io.Writer, line string, cmds []acl.Command, verbose bool) error {
	if _, err := fmt.Fprintln(w, line); err != nil || !verbose {
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw)
	for _, c := range cmds {
		fmt.Fprintf(tw, "+%s\t%s\n", c.Name, c.Why)
	}
	return tw.Flush()
}
