package main

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/rlbench/rlbench"
	"github.com/rlbench/rlbench/strategies"
)

// registerUserStrategies registers --script, --function and --sequence
// strategies into the invocation's registry (rlbench.Config.Registry, the
// run's one way), which it returns, so that --list-strategies and
// --strategy know them, and, when --strategy is not given, makes them the
// strategies to run (*run).
func registerUserStrategies(fs *pflag.FlagSet, scripts, functions, sequences []string, run *[]string) (*strategies.Registry, error) {
	reg, err := rlbench.Config{Scripts: scripts, Functions: functions, Sequences: sequences}.Registry()
	if uerr, ok := errors.AsType[*rlbench.UsageError](err); ok {
		flag := map[string]string{"Scripts": "--script", "Functions": "--function", "Sequences": "--sequence"}[uerr.Field]
		return nil, badInput(fmt.Errorf("%s: %w", flag, uerr.Err))
	}
	if err != nil {
		return nil, badInput(err)
	}
	var names []string
	for _, spec := range slices.Concat(scripts, functions, sequences) {
		name, _, _ := strings.Cut(spec, "=")
		names = append(names, name)
	}
	if names != nil && !fs.Changed("strategy") {
		*run = names // "all" brings them in beside the built-in ones (strategies.Registry.Select)
	}
	return reg, nil
}

// addScriptTimeoutFlag adds --script-timeout, the user code's watchdog,
// to fs (the load run's and verify's).
func addScriptTimeoutFlag(fs *pflag.FlagSet, p *time.Duration) {
	fs.DurationVar(p, "script-timeout", rlbench.DefaultScriptTimeout, "a --script or --function that runs longer gets SCRIPT KILL (FUNCTION KILL) and fails the run (a server reads nothing before its busy-reply-threshold, 5s by default)")
}

// addUserStrategyFlags adds --script, --function and --sequence to fs.
func addUserStrategyFlags(fs *pflag.FlagSet, scripts, functions, sequences *[]string) {
	fs.StringArrayVar(scripts, "script", nil, "NAME=FILE.lua: a Lua script of yours as strategy NAME, repeatable (contract: KEYS[1] the counter, ARGV[1] --limit, ARGV[2] the window in seconds, reply {1|0, count} or the count; claims in a header: -- rlbench: atomic heals fixed-window|sliding)")
	fs.StringArrayVar(functions, "function", nil, "NAME=FILE.lua: function NAME of a Redis Functions library of yours as strategy NAME, repeatable (FUNCTION LOAD before the run, FCALL per request; the --script contract)")
	fs.StringArrayVar(sequences, "sequence", nil, "NAME=SPEC: a limiter of yours as the commands it sends per request, repeatable, e.g. 'mine=INCRBY {key} {n} | EXPIRE {key} {window}' ('|' joins a pipeline, ';' starts a round trip, MULTI ... EXEC a transaction; placeholders {key} (as the start of every key: {key}:{stamp}), {stamp}, {stamp_ms}, {index}, {window}, {window_ms}, {limit}, {n}; the first counter reply is the count; claims at the end: -- rlbench: atomic heals fixed-window|sliding)")
}
