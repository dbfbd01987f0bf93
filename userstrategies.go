package rlbench

import (
	"context"
	"errors"
	"fmt"
	"io"
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
