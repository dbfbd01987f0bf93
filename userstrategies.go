package rlbench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/rlbench/rlbench/results"
	"github.com/rlbench/rlbench/strategies"
	// The published limiters register their strategies.
	_ "github.com/rlbench/rlbench/strategies/published"
	// The models of deployed limiters register theirs.
	_ "github.com/rlbench/rlbench/strategies/deployed"
)

// ErrOutsidePrefix is returned when a user strategy's first decision
// touched a key outside the cell's prefix.
var ErrOutsidePrefix = errors.New("touches a key outside the cell's prefix")

// RegisterUserStrategies registers c's Scripts, Functions and Sequences
// as strategies (strategies.RegisterScript, RegisterFunction,
// RegisterSequence), in the process's registry: the one step of a run
// that writes it, before the strategies are selected. Registering the
// same ones again is allowed. Errors are *UsageError.
func RegisterUserStrategies(c Config) error {
	for _, spec := range c.Scripts {
		if err := strategies.RegisterScript(spec); err != nil {
			return usage("Scripts", err)
		}
	}
	for _, spec := range c.Functions {
		if err := strategies.RegisterFunction(spec); err != nil {
			return usage("Functions", err)
		}
	}
	for _, spec := range c.Sequences {
		if err := strategies.RegisterSequence(spec); err != nil {
			return usage("Sequences", err)
		}
	}
	return nil
}

// userStrategyNames returns the names of Config.Scripts, Config.Functions
// and Config.Sequences.
func (c Config) userStrategyNames() []string {
	var names []string
	for _, spec := range slices.Concat(c.Scripts, c.Functions, c.Sequences) {
		name, _, _ := strings.Cut(spec, "=")
		names = append(names, name)
	}
	return names
}

// checkClientSupport refuses a strategy named on a client named, both
// given by name (not by "all"), that the strategy cannot run on (a
// published library written for go-redis, on rueidis). A pair that "all"
// made is skipped by the run instead (unsupportedCell).
func checkClientSupport(given, givenClients, selected, selectedClients []string) error {
	for _, s := range selected {
		info, err := strategies.Lookup(s)
		if err != nil {
			return usage("Strategies", err)
		}
		for _, c := range selectedClients {
			if !info.Supports(c) && slices.Contains(given, s) && slices.Contains(givenClients, c) {
				return usage("Clients", fmt.Errorf("strategy %s runs on %s only (a library written for it); it cannot run on %s",
					s, strings.Join(info.Clients, ", "), c))
			}
		}
	}
	return nil
}

// unsupportedCell reports whether the strategy cannot run on the client;
// the run skips such a cell, and says so in log.
func unsupportedCell(strategy, client string, log io.Writer) bool {
	info, err := strategies.Lookup(strategy)
	if err != nil || info.Supports(client) {
		return false
	}
	fmt.Fprintf(log, "rlbench: skipping %s/%s: %s runs on %s only\n", strategy, client, strategy, strings.Join(info.Clients, ", "))
	return true
}

// checkUserStrategy makes the cell's first decision of a user strategy (--script,
// --function) before its load, on the cell's client (as the temporary ACL
// user, when the guard has one: see package usercode), and deletes its keys. It
// shows a script that fails to load or replies in another shape; a key
// the server refused (outside the prefix: the parse-time check lets none
// through that it can see) is ErrOutsidePrefix, naming the file.
func (c *cell) checkUserStrategy(ctx context.Context) error {
	info, err := strategies.Lookup(c.strategy)
	if err != nil || info.Source == "" {
		return err
	}
	_, err = c.impl.Decide(ctx, c.conn, c.prefix+"{0}")
	if cerr := c.target.Cleanup(context.WithoutCancel(ctx), c.prefix); cerr != nil && err == nil {
		err = cerr
	}
	if re, ok := errors.AsType[strategies.ReplyError](err); ok && c.guard.Kind() == results.GuardStaticACL && keyRefused(string(re)) {
		return fmt.Errorf("%s (%s): %w %q: %w", c.strategy, info.Source, ErrOutsidePrefix, c.prefix, err)
	}
	if err != nil {
		return fmt.Errorf("first decision: %w", err)
	}
	return nil
}

// keyRefused reports whether a reply is the server's refusal of a key the
// ACL user may not touch: NOPERM from a command (and from a script on Redis
// 6.2), "The user executing the script can't access ... keys" from a script
// on Redis 7, "ACL failure in script: No permissions to access a key" on
// Valkey 8.
func keyRefused(reply string) bool {
	for _, s := range []string{"NOPERM", "user executing the script can't access", "No permissions to access a key"} {
		if strings.Contains(reply, s) {
			return true
		}
	}
	return false
}
