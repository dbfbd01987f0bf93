package rlbench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/rlbench/rlbench/audit"
	"github.com/rlbench/rlbench/clients"
	"github.com/rlbench/rlbench/redisserver"
	"github.com/rlbench/rlbench/strategies"
	// The published limiters register their strategies.
	_ "github.com/rlbench/rlbench/strategies/published"
	// The models of deployed limiters register theirs.
	_ "github.com/rlbench/rlbench/strategies/deployed"
)

// ErrOutsidePrefix is returned when a user strategy's first decision
// touched a key outside the cell's prefix.
var ErrOutsidePrefix = errors.New("touches a key outside the cell's prefix")

// registerUserStrategies registers Config.Scripts and Config.Functions as
// strategies, before the strategies are selected.
func (c *Config) registerUserStrategies() error {
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
// --function) before its load, as an ACL user that may touch only keys
// under the cell's prefix: the server itself refuses any other key, read
// or write, with NOPERM, and the strategy is refused with
// ErrOutsidePrefix, naming its file. The same decision shows a script that
// fails to load or replies in another shape. The user is created on every
// master and deleted afterwards, and the decision's keys are deleted. It
// checks the first decision only: a script that reaches another key later,
// on some branch, is not caught. ACL needs Redis >= 6.0; before that only
// the load and the reply are checked, and log says so.
func (c *cell) checkUserStrategy(ctx context.Context, log io.Writer) error {
	info, err := strategies.Lookup(c.strategy)
	if err != nil || info.Source == "" {
		return err
	}
	s, err := strategies.New(c.strategy, strategies.Config{Limit: c.cfg.Limit, Window: c.cfg.Window})
	if err != nil {
		return err
	}
	t := c.target
	nodes, err := t.nodes(ctx)
	if err != nil {
		return err
	}
	o := t.clientOptions(c.cfg, 1, "")
	acl := redisserver.VersionAtLeast(t.info.RedisVersion, "6.0.0")
	if acl {
		user, drop, err := prefixUser(ctx, nodes, c.prefix)
		if err != nil {
			return fmt.Errorf("%s (%s): check its keys: %w", c.strategy, info.Source, err)
		}
		defer drop()
		o.Username, o.Password = user[0], user[1]
	} else {
		fmt.Fprintf(log, "rlbench: %s (%s): keys not checked: ACL needs Redis >= 6.0\n", c.strategy, info.Source)
	}
	conn, err := clients.New(c.client, o)
	if err != nil {
		return fmt.Errorf("%s (%s): check: %w", c.strategy, info.Source, err)
	}
	defer conn.Close()
	_, err = s.Decide(ctx, conn, c.prefix+"{0}")
	if cerr := t.cleanup(context.WithoutCancel(ctx), c.prefix); cerr != nil && err == nil {
		err = cerr
	}
	if re, ok := errors.AsType[strategies.ReplyError](err); ok && acl && keyRefused(string(re)) {
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

// prefixUser creates, on every node, an ACL user that may run any command
// on keys under prefix only, and returns its name and password and a
// function that deletes it.
func prefixUser(ctx context.Context, nodes []*redis.Client, prefix string) ([2]string, func(), error) {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		return [2]string{}, nil, err
	}
	user := [2]string{"rlbench-check-" + hex.EncodeToString(b[:8]), hex.EncodeToString(b[8:])}
	drop := func() {
		for _, n := range nodes {
			n.Do(context.WithoutCancel(ctx), "ACL", "DELUSER", user[0])
		}
	}
	for _, n := range nodes {
		err := n.Do(ctx, "ACL", "SETUSER", user[0], "reset", "on", ">"+user[1], "~"+audit.MatchPattern(prefix), "+@all").Err()
		if err != nil {
			drop()
			return user, nil, fmt.Errorf("%s: acl setuser: %w", n.Options().Addr, err)
		}
	}
	return user, drop, nil
}
