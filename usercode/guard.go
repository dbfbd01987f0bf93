// Package usercode confines a user strategy's cell (--script, --function,
// --sequence) at run time: the whole load as a temporary ACL user holding
// the cell's commands on the cell's keys, and the --script-timeout
// watchdog (SCRIPT KILL, FUNCTION KILL). Confine is its entry point.
package usercode

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlbench/rlbench/acl"
	"github.com/rlbench/rlbench/clients"
	"github.com/rlbench/rlbench/faults"
	"github.com/rlbench/rlbench/keyspace"
	"github.com/rlbench/rlbench/results"
	"github.com/rlbench/rlbench/serverinfo"
	"github.com/rlbench/rlbench/strategies"
	"github.com/rlbench/rlbench/topology"
)

// Guard is what confines a user strategy's cell (--script,
// --function) beside the parse-time check (strategies.ErrUnconfined): a
// temporary ACL user, holding exactly the commands the cell's client
// sends on the cell's keys, that the client logs in as for the whole
// load (warm-up, first decision, measured load); and the watchdog of
// Config.ScriptTimeout (scriptwatch.go). A nil guard, a built-in
// strategy's, does nothing.
type Guard struct {
	// guard is results.GuardStatic or results.GuardStaticACL.
	guard string
	// user and password are the temporary user's; "" with GuardStatic.
	user, password string
	nodes          []*redis.Client
	watch          *scriptWatch
	// target and runPrefix are where the user's record is
	// (topology.RecordObject), for rlbench cleanup after a SIGKILL.
	target    *topology.Target
	runPrefix string
	// users checks that the temporary user stays as made (userwatch.go;
	// it checks nothing without one); nil when neither it nor watch runs.
	users *userWatch
}

// Cell is the cell a Guard confines.
type Cell struct {
	// Strategy is the name of the cell's strategy, Info its Info (the
	// run's plan cell's), Registry the run's strategies, which hold it;
	// Label names the cell in the log.
	Strategy, Label string
	Info            strategies.Info
	Registry        *strategies.Registry
	// Prefix and WarmupPrefix are those of the cell's keys and of its
	// warm-up keys, which the temporary user may touch; RunPrefix is the
	// run's on the target, which names the watchdog's scripts.
	Prefix, WarmupPrefix, RunPrefix string
	// ScriptTimeout is Config.ScriptTimeout; Faults are the cell's.
	ScriptTimeout time.Duration
	Faults        []faults.Fault
	Target        *topology.Target
}

// Confine sets up the guard of a user strategy's cell, and returns the
// context of the cell's load, which the watchdog cancels when it kills
// a script. The temporary user is created on every master; the run's own
// user may not be allowed to (NOPERM), or the server may have no ACL
// (Redis < 6.0), and then the parse-time check alone applies, and log
// says why.
func Confine(ctx context.Context, log io.Writer, c Cell) (context.Context, *Guard, error) {
	info := c.Info
	if info.Source == "" {
		return ctx, nil, nil
	}
	nodes, err := c.Target.Nodes(ctx)
	if err != nil {
		return ctx, nil, err
	}
	g := &Guard{guard: results.GuardStatic, nodes: nodes, target: c.Target, runPrefix: c.RunPrefix}
	why := c.noACLUser()
	if why == "" {
		if why, err = g.createUser(ctx, c); err != nil {
			return ctx, nil, fmt.Errorf("%s (%s): temporary ACL user: %w", c.Strategy, info.Source, err)
		}
	}
	if why != "" {
		fmt.Fprintf(log, "rlbench: %s: %s is confined by the parse-time check alone: %s\n", c.Label, info.Source, why)
	} else {
		fmt.Fprintf(log, "rlbench: %s: %s runs as the temporary ACL user %s (the cell's commands only, on keys %s and %s)\n",
			c.Label, info.Source, g.user, acl.KeyPattern(c.Prefix), acl.KeyPattern(c.WarmupPrefix))
	}
	ctx = g.startWatch(ctx, c, info)
	return ctx, g, nil
}

// DefaultScriptTimeout is Cell.ScriptTimeout's usual value (the load
// run's and verify's default): Redis's own busy-reply-threshold, before
// which a busy server reads no command.
const DefaultScriptTimeout = 5 * time.Second

// Watch starts the --script-timeout watchdog of a user strategy's code
// alone, without the temporary ACL user: rlbench verify's, whose checks
// log in as the run's user. It returns the context that the watchdog
// cancels when it kills a script, and the guard to Close (or Settle)
// once the strategy's code no longer runs, so that no script of it is
// left blocking the server; a nil guard for a built-in strategy or a
// sequence.
func Watch(ctx context.Context, c Cell) (context.Context, *Guard, error) {
	info := c.Info
	if info.Source == "" || info.Source == strategies.SequenceSource {
		return ctx, nil, nil
	}
	nodes, err := c.Target.Nodes(ctx)
	if err != nil {
		return ctx, nil, err
	}
	g := &Guard{guard: results.GuardStatic, nodes: nodes}
	return g.startWatch(ctx, c, info), g, nil
}

// startWatch starts the check of the temporary user (when there is one)
// and the guard's watchdog, for a script or a function (a sequence sends
// commands, never a script: there is nothing of the cell's for a watchdog
// to kill, and a SCRIPT KILL would stop another tenant's script), and
// returns the context they cancel.
func (g *Guard) startWatch(ctx context.Context, c Cell, info strategies.Info) context.Context {
	scripts := info.Source != strategies.SequenceSource
	if g.user == "" && !scripts {
		return ctx
	}
	ctx, cancel := context.WithCancelCause(ctx)
	g.users = g.watchUser(cancel)
	if scripts {
		g.watch = watchScripts(c, info, g.nodes, cancel)
	}
	return ctx
}

// noACLUser says why the cell cannot run as a temporary ACL user, or "".
func (c Cell) noACLUser() string {
	if !serverinfo.VersionAtLeast(c.Target.Info.RedisVersion, "6.0.0") {
		return "ACL needs Redis >= 6.0"
	}
	for _, f := range c.Faults {
		if slices.Contains([]string{faults.Restart, faults.Failover, faults.SentinelFailover}, f.Kind) {
			return "the " + f.Kind + " fault (on a server rlbench started) gives the cell servers that do not have the user"
		}
	}
	return ""
}

// createUser creates the temporary user on every master. A server that
// refuses ACL SETUSER to the run's user (NOPERM) or does not have it
// gives a reason to go without; another error is returned.
func (g *Guard) createUser(ctx context.Context, c Cell) (why string, err error) {
	cmds, err := acl.ClientCommands(acl.Needs{Strategies: []string{c.Strategy}, Registry: c.Registry, Cluster: c.Target.Spec.IsCluster(),
		Sentinel: c.Target.Spec.IsSentinel(), DB: c.Target.Login.DB})
	if err != nil {
		return "", err
	}
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	user, password := topology.ACLUserPrefix+hex.EncodeToString(b[:8]), hex.EncodeToString(b[8:])
	words := append(acl.SetUserArgs(user, password, c.Prefix, cmds), "~"+acl.KeyPattern(c.WarmupPrefix))
	// Recorded first: a run killed from here on leaves a record of the
	// user under its prefix, by which rlbench cleanup finds it.
	if err := g.target.RecordObject(ctx, g.runPrefix, keyspace.ObjectACLUser, user, ""); err != nil {
		return "", err
	}
	args := make([]any, len(words))
	for i, w := range words {
		args[i] = w
	}
	for i, n := range g.nodes {
		if err := n.Do(ctx, args...).Err(); err != nil {
			if i == 0 { // made nowhere: its record goes
				_ = g.target.ForgetObject(ctx, g.runPrefix, keyspace.ObjectACLUser, user)
			} else {
				g.user = user
				g.dropUser(ctx) // on the nodes done so far, then its record
				g.user = ""
			}
			if s := err.Error(); strings.HasPrefix(s, "NOPERM") || strings.HasPrefix(s, "ERR unknown") {
				return "the run's user may not create ACL users (ACL SETUSER: " + s + ")", nil
			}
			return "", fmt.Errorf("%s: acl setuser: %w", n.Options().Addr, err)
		}
	}
	g.user, g.password, g.guard = user, password, results.GuardStaticACL
	return "", nil
}

// Login makes o log in as the temporary user, when there is one.
func (g *Guard) Login(o *clients.Options) {
	if g != nil && g.user != "" {
		o.Username, o.Password = g.user, g.password
	}
}

// Kind is the guard's name for results.Run.UserCodeGuard: GuardStatic
// once the temporary user was lost (ErrUserLost), which no longer confined
// the cell.
func (g *Guard) Kind() string {
	if g == nil {
		return ""
	}
	if g.guard == results.GuardStaticACL && g.users.stop() != nil {
		return results.GuardStatic
	}
	return g.guard
}

// Close ends the guard after the cell, whatever stopped it (an error, an
// interrupt, a timeout): it waits until no script of the cell runs on the
// server (the watchdog kills one that runs too long), then deletes the
// temporary user. A done abort (a second interrupt) ends the wait at
// once. It returns err, or the watchdog's error, which explains it; and
// the user's deletion's.
func (g *Guard) Close(abort context.Context, label string, err error) error {
	if g == nil {
		return err
	}
	if werr := g.Settle(abort); werr != nil {
		// The watchdog's error explains the cell's; both are kept.
		err = errors.Join(fmt.Errorf("%s: %w", label, werr), err)
	}
	return errors.Join(err, g.dropUser(abort))
}

// Settle waits until no script of the cell runs on the server any more
// (the watchdog kills one that runs too long), and stops the watchdog: the
// cell calls it when its load ends, before the audit and the deletion of
// its libraries, which a server still busy with the cell's script would
// refuse. It returns the user's loss (ErrUserLost) and the watchdog's
// error; calling it again returns the same.
func (g *Guard) Settle(abort context.Context) error {
	if g == nil {
		return nil
	}
	// The user's loss explains the scripts' errors: it comes first.
	err := g.users.stop()
	if g.watch != nil {
		err = errors.Join(err, g.watch.stop(abort))
	}
	return err
}

// dropUser deletes the temporary user on every master, even after an
// interrupt.
func (g *Guard) dropUser(ctx context.Context) error {
	if g.user == "" {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	var errs []error
	for _, n := range g.nodes {
		if err := n.Do(ctx, "ACL", "DELUSER", g.user).Err(); err != nil {
			errs = append(errs, fmt.Errorf("%s: acl deluser %s: %w (delete it by hand: ACL DELUSER %s, or with rlbench cleanup)", n.Options().Addr, g.user, err, g.user))
		}
	}
	if len(errs) == 0 {
		errs = append(errs, g.target.ForgetObject(ctx, g.runPrefix, keyspace.ObjectACLUser, g.user))
	}
	return errors.Join(errs...)
}
