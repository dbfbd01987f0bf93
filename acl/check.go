package acl

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/rlbench/rlbench/excerpt"
	"github.com/rlbench/rlbench/strategies"
)

// Doer is the one method Supported needs: *redis.Client,
// *redis.ClusterClient and redis.UniversalClient all have it.
type Doer interface {
	Do(ctx context.Context, args ...any) *redis.Cmd
}

// Fallbacks maps a command to the one rlbench sends instead on a server
// that lacks it: UNLINK arrived in Redis 4.0, and DEL does the same work
// (synchronously).
var Fallbacks = map[string]string{"unlink": "del"}

// MissingError is returned by Supported and Permitted for commands the
// run would send and the server would refuse. Its message names them and
// quotes the server.
type MissingError struct {
	// Commands are the ACL names of the refused commands.
	Commands []string
	// Said is the server's reply for each, in the order of Commands.
	Said []string
	// Denied is true when the server knows the commands but the user may
	// not send them (NOPERM); false when the server does not know them.
	Denied bool
	// Needed says, for each of Commands unknown to the server, who needs
	// it (Command.Why, e.g. "strategy hash-lua"); nil when not known.
	// NeededRedis is, for each of Needed, the Redis version it needs
	// (Command.MinRedis).
	Needed, NeededRedis []string
}

// Error says which commands and why, e.g. "the server does not know
// unlink (COMMAND INFO answered nil)".
func (e *MissingError) Error() string {
	parts := make([]string, len(e.Commands))
	for i, c := range e.Commands {
		parts[i] = fmt.Sprintf("%s (%s)", strings.ToUpper(strings.ReplaceAll(c, "|", " ")), excerpt.Text(e.Said[i]))
	}
	if e.Denied {
		return "the user may not send " + strings.Join(parts, ", ") + "; grant them (rlbench acl prints the ACL SETUSER line)"
	}
	return "the server does not know " + strings.Join(parts, ", ") + ": it is older than the strategy or fault needs" + e.neededText()
}

// neededText names the strategies that need the unknown commands, with the
// Redis version each needs: " (strategy hash-lua needs Redis >= 7.4.0)".
func (e *MissingError) neededText() string {
	var needs []string
	for i, why := range e.Needed {
		if !strings.HasPrefix(why, "strategy ") {
			continue
		}
		note := why
		if i < len(e.NeededRedis) && e.NeededRedis[i] != "" {
			note += " needs Redis >= " + e.NeededRedis[i]
		}
		if !slices.Contains(needs, note) {
			needs = append(needs, note)
		}
	}
	if len(needs) == 0 {
		return ""
	}
	return " (" + strings.Join(needs, "; ") + ")"
}

// Supported asks the server, with one COMMAND INFO, whether it knows every
// command of cmds. It returns cmds with each unknown command that has a
// fallback (Fallbacks) replaced by it, and a *MissingError for the unknown
// ones without; a fallback already in cmds is not listed twice. A subcommand ("client|setname") is checked as such where
// the server lists subcommands (Redis >= 7.0, Valkey); older servers are
// asked for the container command only.
func Supported(ctx context.Context, rdb Doer, cmds []Command) ([]Command, error) {
	known, err := commandInfo(ctx, rdb, cmds)
	if err != nil {
		return nil, err
	}
	out := make([]Command, 0, len(cmds))
	missing := &MissingError{}
	have := func(name string) bool {
		return slices.ContainsFunc(out, func(c Command) bool { return c.Name == name })
	}
	for _, c := range cmds {
		if known[c.Name] {
			if !have(c.Name) {
				out = append(out, c)
			}
			continue
		}
		if fb, ok := Fallbacks[c.Name]; ok && known[fb] {
			if !have(fb) {
				out = append(out, Command{Name: fb, Why: c.Why + " (" + strings.ToUpper(fb) + ": the server has no " + strings.ToUpper(c.Name) + ")"})
			}
			continue
		}
		missing.Commands = append(missing.Commands, c.Name)
		missing.Said = append(missing.Said, "COMMAND INFO answered nil")
		missing.Needed = append(missing.Needed, c.Why)
		missing.NeededRedis = append(missing.NeededRedis, c.MinRedis)
	}
	if len(missing.Commands) > 0 {
		return out, missing
	}
	return out, nil
}

// commandInfo returns which names (and fallbacks) the server knows.
func commandInfo(ctx context.Context, rdb Doer, cmds []Command) (map[string]bool, error) {
	// Containers are asked for by their own name, which every version
	// takes; each subcommand is then looked up in its container's reply.
	var names []string
	seen := map[string]bool{}
	for _, c := range cmds {
		for _, n := range []string{c.Name, Fallbacks[c.Name]} {
			container, _, _ := strings.Cut(n, "|")
			if n != "" && !seen[container] {
				seen[container] = true
				names = append(names, container)
			}
		}
	}
	args := []any{"command", "info"}
	for _, n := range names {
		args = append(args, n)
	}
	// RESP2 and RESP3 alike give an array with one entry per name asked:
	// nil for an unknown command.
	reply, err := rdb.Do(ctx, args...).Slice()
	if err != nil {
		return nil, fmt.Errorf("acl: %w", connectionFailed("COMMAND INFO", err))
	}
	if len(reply) != len(names) {
		return nil, fmt.Errorf("acl: command info: %d entries for %d commands", len(reply), len(names))
	}
	known := map[string]bool{}
	for i, entry := range reply {
		info, ok := entry.([]any)
		if !ok {
			continue
		}
		known[names[i]] = true
		subs, listed := subcommands(info)
		for _, c := range cmds {
			for _, n := range []string{c.Name, Fallbacks[c.Name]} {
				if container, _, isSub := strings.Cut(n, "|"); isSub && container == names[i] {
					known[n] = !listed || subs[n]
				}
			}
		}
	}
	return known, nil
}

// subcommands reads the names of the subcommands in a COMMAND INFO entry
// (its tenth element, Redis >= 7.0); listed is false for an older server,
// whose entry has no such element.
func subcommands(info []any) (names map[string]bool, listed bool) {
	if len(info) < 10 {
		return nil, false
	}
	list, ok := info[9].([]any)
	if !ok {
		return nil, false
	}
	names = map[string]bool{}
	for _, sub := range list {
		if s, ok := sub.([]any); ok && len(s) > 0 {
			names[strings.ToLower(fmt.Sprint(s[0]))] = true
		}
	}
	return names, true
}

// probes gives each command arguments of the right arity for Permitted.
// Nothing runs them: EXEC discards the transaction.
var probes = map[string][]string{
	"get": {"K"}, "set": {"K", "1"}, "incr": {"K"}, "expire": {"K", "1"}, "pexpire": {"K", "1"},
	"ttl": {"K"}, "pttl": {"K"}, "exists": {"K"}, "unlink": {"K"}, "del": {"K"},
	"evalsha": {"0000000000000000000000000000000000000000", "1", "K"}, "eval": {"return 1", "1", "K"},
	"fcall": {"f", "1", "K"}, "function|load": {"#!lua name=x"}, "function|list": nil, "function|delete": {"x"}, "time": nil,
	"zremrangebyscore": {"K", "0", "0"}, "zcard": {"K"}, "zadd": {"K", "0", "m"},
	"hmget": {"K", "f"}, "hset": {"K", "f", "v"}, "ping": nil, "info": nil,
	"setex": {"K", "1", "1"}, "incrby": {"K", "1"}, "script|load": {"return 1"},
	"config|get": {"maxclients"}, "client|setname": {"n"}, "scan": {"0"}, "select": {"0"},
	"cluster|slots": nil, "cluster|shards": nil, "role": nil, "script|flush": nil,
	"command|info": {"get"}, "client|pause": {"1"}, "client|list": nil, "client|kill": {"ID", "0"},
	"hincrby": {"K", "f", "1"}, "hexpire": {"K", "1", "FIELDS", "1", "f"}, "httl": {"K", "FIELDS", "1", "f"},
	"hpttl": {"K", "FIELDS", "1", "f"}, "hscan": {"K", "0"}, "type": {"K"}, "watch": {"K"},
	// The rest of strategies.SequenceCommands.
	"setnx": {"K", "1"}, "psetex": {"K", "1", "1"}, "getex": {"K"}, "decr": {"K"}, "decrby": {"K", "1"},
	"expireat": {"K", "1"}, "pexpireat": {"K", "1"}, "expiretime": {"K"}, "pexpiretime": {"K"},
	"hget": {"K", "f"}, "hsetnx": {"K", "f", "v"}, "hgetall": {"K"}, "hdel": {"K", "f"}, "hlen": {"K"},
	"hpexpire": {"K", "1", "FIELDS", "1", "f"}, "zcount": {"K", "0", "0"}, "zrem": {"K", "m"},
}

// Permitted checks, as the user rdb is logged in as, that the server lets
// it send every command of cmds on key (a key under the run's prefix; on
// a cluster node, one in a slot the node serves): on one connection of
// its own it sends MULTI, each command with arguments of the right arity,
// a command of the wrong arity and EXEC, so that the server checks every
// command's permission when it queues it, then discards the transaction
// without running any (WATCH, which MULTI does not take, is sent before
// it). It needs MULTI (in the list Commands returns).
// CONFIG GET is not required (see optional). A command refused returns a *MissingError that names it and quotes the
// server's NOPERM (or unknown-command) reply.
func Permitted(ctx context.Context, rdb *redis.Client, key string, cmds []Command) error {
	conn := rdb.Conn()
	defer conn.Close() // the server drops the MULTI state with the connection
	var names []string
	var errs []error
	if slices.ContainsFunc(cmds, func(c Command) bool { return c.Name == "watch" }) {
		// Not allowed inside MULTI; harmless before it (EXEC unwatches).
		names, errs = append(names, "watch"), append(errs, conn.Do(ctx, "watch", key).Err())
	}
	if err := conn.Do(ctx, "multi").Err(); err != nil {
		return classify([]string{"multi"}, []error{err}, "acl: permission check: multi")
	}
	results := make([]*redis.Cmd, 0, len(cmds))
	_, err := conn.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, c := range cmds {
			if c.Name == "multi" || c.Name == "exec" || c.Name == "watch" {
				continue // WATCH and MULTI were just sent; EXEC follows
			}
			if optional[c.Name] {
				continue
			}
			args := []any{}
			for _, word := range strings.Split(c.Name, "|") {
				args = append(args, word)
			}
			probe, ok := probes[c.Name]
			if !ok {
				probe, _ = strategies.ScriptProbe(c.Name) // what a user strategy calls
			}
			for _, a := range probe {
				if a == "K" {
					a = key
				}
				args = append(args, a)
			}
			names = append(names, c.Name)
			results = append(results, p.Do(ctx, args...))
		}
		p.Do(ctx, "get") // wrong arity: EXEC must discard the transaction
		names = append(names, "exec")
		results = append(results, p.Do(ctx, "exec"))
		return nil
	})
	if err != nil && len(results) == 0 {
		return fmt.Errorf("acl: permission check: %w", connectionFailed("MULTI ... EXEC", err))
	}
	for i, r := range results {
		err := r.Err()
		if i == len(results)-1 && err != nil && strings.HasPrefix(err.Error(), "EXECABORT") { // EXEC's
			err = nil // the transaction was discarded, as meant
		}
		errs = append(errs, err)
	}
	return classify(names, errs, "acl: permission check")
}

// optional are commands the run may be refused: rlbench goes without what
// they tell (without CONFIG GET maxclients, the pool-size check is
// skipped), so Permitted does not require them.
var optional = map[string]bool{"config|get": true}

// Denied returns a *MissingError naming command (an ACL name, "scan",
// "command|info") when err is the server's NOPERM reply to it, and nil
// for any other error: a permission missing from a check that runs
// before Permitted is named as Permitted names it.
func Denied(command string, err error) error {
	if err == nil || !strings.Contains(err.Error(), "NOPERM") {
		return nil
	}
	return &MissingError{Commands: []string{command}, Said: []string{err.Error()}, Denied: true}
}

// classify turns NOPERM and unknown-command replies into a *MissingError;
// any other error is returned as is, wrapped with op.
func classify(names []string, errs []error, op string) error {
	denied, unknown := &MissingError{Denied: true}, &MissingError{}
	var other []error
	for i, err := range errs {
		switch {
		case err == nil:
		case strings.HasPrefix(err.Error(), "NOPERM"):
			denied.Commands, denied.Said = append(denied.Commands, names[i]), append(denied.Said, err.Error())
		case strings.HasPrefix(err.Error(), "ERR unknown command"), strings.HasPrefix(err.Error(), "ERR unknown subcommand"):
			unknown.Commands, unknown.Said = append(unknown.Commands, names[i]), append(unknown.Said, err.Error())
		default:
			other = append(other, fmt.Errorf("%s: %w", names[i], err))
		}
	}
	switch {
	case len(denied.Commands) > 0:
		return denied
	case len(unknown.Commands) > 0:
		return unknown
	case len(other) > 0:
		return fmt.Errorf("%s: %w", op, errors.Join(other...))
	}
	return nil
}

// ConnectionError is a check whose connection failed before the server
// replied (closed, reset, timed out): no answer of the server's, so neither
// bad input nor a command the server refused. The pre-flight reports it as
// a failure, exit status 1.
type ConnectionError struct {
	// Command is what the check sent, e.g. "COMMAND INFO".
	Command string
	// Err is the connection's error, e.g. io.EOF.
	Err error
}

// Error names the command and what happened, with the usual cause of a
// connection the server closed mid-reply.
func (e *ConnectionError) Error() string {
	return fmt.Sprintf("%s: the connection failed before the reply (%v): the server closed it (a client-output-buffer-limit for normal clients below the reply's size does: CONFIG GET client-output-buffer-limit), or the network did; not bad input, try again once the server answers it",
		e.Command, e.Err)
}

func (e *ConnectionError) Unwrap() error { return e.Err }

// connectionFailed returns err as a *ConnectionError when it is no reply of
// the server's (redis.Error) nor a context's end; else err itself.
func connectionFailed(command string, err error) error {
	if _, isReply := errors.AsType[redis.Error](err); isReply || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return &ConnectionError{Command: command, Err: err}
}
