// Package acl lists the Redis commands a benchmark cell sends (its
// strategy's, rlbench's own, and its faults'), prints the least-privilege
// ACL SETUSER line for them, and checks before a run, as the run's own
// user, that the server knows every command (COMMAND INFO, with the
// documented fallback UNLINK -> DEL) and lets the user send it.
package acl

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/rlbench/rlbench/audit"
	"github.com/rlbench/rlbench/faults"
	"github.com/rlbench/rlbench/strategies"
)

// ErrNoStrategy is returned by Commands for a Needs without a strategy.
var ErrNoStrategy = errors.New("acl: name at least one strategy")

// Command is one command a cell sends, by its ACL name.
type Command struct {
	// Name is the ACL name: lowercase, "container|subcommand" for a
	// subcommand, e.g. "incr" or "client|setname".
	Name string
	// Why says who sends it, e.g. "strategy lua (inside its script)" or
	// "rlbench: the audit".
	Why string
	// MinRedis is the Redis version that the strategy which sends it
	// needs (strategies.Info.MinRedis), for the error of a server that
	// does not know it; "" when it needs none, or for rlbench's own.
	MinRedis string
}

// Needs describes a set of cells: the commands they send follow from it.
type Needs struct {
	// Strategies are strategy names, as Registry holds them.
	Strategies []string
	// Registry holds the strategies: the run's, with its user strategies;
	// nil means the built-in ones only.
	Registry *strategies.Registry
	// Faults are fault kinds (faults.Kinds) the cells inject.
	Faults []string
	// Cluster is true for a Redis Cluster target: the clients read the
	// slot map.
	Cluster bool
	// Sentinel is true for a Sentinel target: rueidis asks the master for
	// its ROLE.
	Sentinel bool
	// DB is the database the clients SELECT; SELECT is needed when it is
	// not 0.
	DB int
}

// strategyCommands are the commands each strategy's decisions send,
// inside their scripts too: ACL checks a script's redis.call()s as if the
// client had sent them. TestStrategyCommandsMatchInfo keeps them in step
// with strategies.Info.Commands.
var strategyCommands = map[string][]string{
	"naive":        {"get", "set", "incr"},
	"incr-expire":  {"incr", "expire"},
	"multi-nx":     {"multi", "incr", "expire", "exec"},
	"lua":          {"evalsha", "eval", "incr", "expire", "ttl"},
	"lua-heal":     {"evalsha", "eval", "incr", "ttl", "expire"},
	"function":     {"fcall", "function|list", "function|load", "function|delete", "incr", "ttl", "expire"},
	"gcra":         {"evalsha", "eval", "time", "get", "set"},
	"sliding-log":  {"evalsha", "eval", "time", "zremrangebyscore", "zcard", "incr", "zadd", "pexpire"},
	"token-bucket": {"evalsha", "eval", "time", "hmget", "exists", "hset", "pexpire"},
	// The hash-field counters (Redis >= 7.4).
	"hash-incr-expire": {"hincrby", "hexpire"},
	"hash-multi-nx":    {"multi", "hincrby", "hexpire", "exec"},
	"hash-lua":         {"evalsha", "eval", "hincrby", "hexpire", "httl"},
	// The published limiters, from their sources (v10.0.1, v3.11.2, v2.15.0).
	"redis_rate": {"evalsha", "eval", "time", "get", "set"},
	"ulule":      {"script|load", "evalsha", "get", "incrby", "pexpire", "pttl"},
	"throttled":  {"time", "get", "set", "expire", "eval", "setex"},
}

// userCommands returns the commands of a user strategy (--script,
// --function): how it is called, then what its source calls (its Calls,
// which the parse-time check found, each a literal).
func userCommands(info strategies.Info) []string {
	cmds := []string{"evalsha", "eval"}
	if isFunction(info) {
		cmds = []string{"fcall", "function|load", "function|list", "function|delete"}
	}
	for _, c := range info.Calls {
		if !slices.Contains(cmds, c) {
			cmds = append(cmds, c)
		}
	}
	return cmds
}

func isFunction(info strategies.Info) bool { return strings.Contains(info.Commands, "FCALL") }

// watchdogCommands are what rlbench's own connection sends, beside
// ownCommands, to stop a user strategy that runs longer than
// --script-timeout: SCRIPT KILL, or for a function FUNCTION STATS (which
// function runs, on which key) then FUNCTION KILL.
func watchdogCommands(info strategies.Info) []Command {
	if isFunction(info) {
		return []Command{{Name: "function|stats", Why: "rlbench: the --script-timeout watchdog (which function runs)"}, {Name: "function|kill", Why: "rlbench: the --script-timeout watchdog"}}
	}
	return []Command{{Name: "script|kill", Why: "rlbench: the --script-timeout watchdog"}}
}

// userProbe is what rlbench's own connection sends, beside ownCommands'
// GET, to learn the shape of a user strategy's counter before its load:
// INCRBY of its first key to the limit, whose next decision must reject.
var userProbe = Command{Name: "incrby", Why: "rlbench: learning a user strategy's counter before its load (INCRBY of its first key to the limit)"}

// ownCommands are what rlbench itself sends beside the strategies, to
// every kind of target.
var ownCommands = []Command{
	{Name: "ping", Why: "rlbench: the first contact with the server"},
	{Name: "info", Why: "rlbench: the self-check (INFO clients, INFO for CPU), the server's version, and the pre-flight check that it is no replica (INFO replication)"},
	{Name: "config|get", Why: "rlbench: the self-check of maxclients (CONFIG GET maxclients); without it the check is skipped"},
	{Name: "client|setname", Why: "rlbench: naming the run's connections"},
	{Name: "scan", Why: "rlbench: the audit and the clean-up (SCAN MATCH prefix*)"},
	{Name: "pttl", Why: "rlbench: the audit of each key's TTL"},
	{Name: "unlink", Why: "rlbench: the clean-up (DEL on a server without UNLINK)"},
	{Name: "set", Why: "rlbench: the run's claim on its prefix (SET NX), and the pre-flight check that the target takes writes (SET of one key under the prefix)"},
	{Name: "get", Why: "rlbench: the run's claim on its prefix (which run holds it), and the exact counts: each counter the admission figures follow, read at the end of the load"},
	{Name: "watch", Why: "rlbench: renewing and deleting the run's claim only while it is the run's (WATCH, MULTI, EXEC)"},
	{Name: "exec", Why: "rlbench: renewing and deleting the run's claim (WATCH, MULTI, EXEC)"},
	{Name: "pexpire", Why: "rlbench: renewing the run's claim on its prefix"},
	{Name: "del", Why: "rlbench: the pre-flight check that the target takes writes (DEL of that key), and deleting the run's claim at its end"},
	{Name: "multi", Why: "rlbench: the pre-flight permission check (MULTI with nothing executed)"},
	{Name: "command|info", Why: "rlbench: the pre-flight check that the server knows every command"},
}

// FieldAuditCommands are what the field audit sends (rlbench audit
// --fields, and beside ownCommands when a cell's counters are hash fields,
// strategies.LayoutHashField): it reads each hash's fields and their TTLs.
var FieldAuditCommands = []Command{
	{Name: "type", Why: "rlbench: the field audit (which keys are hashes)"},
	{Name: "hscan", Why: "rlbench: the field audit (each hash's fields, HSCAN ... NOVALUES)"},
	{Name: "hpttl", Why: "rlbench: the field audit of each field's TTL"},
}

// faultCommands are the commands each fault kind sends to the target. The
// kinds not listed act on private servers only, through rlbench's own
// connections to them.
var faultCommands = map[string][]string{
	faults.ScriptFlush: {"script|flush"},
	faults.Stall:       {"client|pause"},
	faults.KillClients: {"client|list", "client|kill"},
}

// Commands returns every command the cells n describes send, each once,
// in the order strategies, faults, topology, then rlbench's own. An
// unknown strategy or fault kind is an error that lists the accepted ones.
func Commands(n Needs) ([]Command, error) {
	if len(n.Strategies) == 0 {
		return nil, ErrNoStrategy
	}
	var out []Command
	add := func(name, why string) {
		if !slices.ContainsFunc(out, func(c Command) bool { return c.Name == name }) {
			out = append(out, Command{Name: name, Why: why})
		}
	}
	fieldAudit := false
	var watchdog []Command
	for _, s := range n.Strategies {
		info, err := n.Registry.Lookup(s)
		if err != nil {
			return nil, fmt.Errorf("acl: %w", err)
		}
		fieldAudit = fieldAudit || info.Layout == strategies.LayoutHashField
		cmds, ok := strategyCommands[s]
		if !ok && info.ACLCommands != nil {
			cmds, ok = info.ACLCommands, true
		}
		if info.Source != "" {
			watchdog = append(watchdog, userProbe)
		}
		if !ok && info.Source != "" {
			cmds = userCommands(info)
			watchdog = append(watchdog, watchdogCommands(info)...)
		} else if !ok {
			return nil, fmt.Errorf("acl: strategy %q has no command list in package acl", s)
		}
		for _, c := range cmds {
			add(c, "strategy "+s)
		}
		for i := range out {
			if out[i].Why == "strategy "+s {
				out[i].MinRedis = info.MinRedis
			}
		}
	}
	for _, f := range n.Faults {
		if !slices.Contains(faults.Kinds, f) {
			return nil, fmt.Errorf("acl: unknown fault kind %q (accepted: %s)", f, strings.Join(faults.Kinds, ", "))
		}
		for _, c := range faultCommands[f] {
			add(c, "fault "+f)
		}
	}
	if n.Cluster {
		add("cluster|slots", "the clients: the cluster's slot map")
		add("cluster|shards", "the clients: the cluster's slot map (rueidis on Redis >= 7)")
	}
	if n.Sentinel {
		add("role", "rueidis: checking that the master the sentinels name is one")
	}
	if n.DB != 0 {
		add("select", "the clients: SELECT of the database")
	}
	own := slices.Concat(ownCommands, watchdog)
	if fieldAudit {
		own = slices.Concat(own, FieldAuditCommands)
	}
	for _, c := range own {
		add(c.Name, c.Why)
	}
	return out, nil
}

// clientCommands are what a cell's client sends beside its strategy's
// commands and the topology's: HELLO and AUTH, which every user may send,
// and these.
var clientCommands = []string{"ping", "client|setname"}

// ClientCommands returns what the client under test of the cells n
// describes sends: the strategies' commands, the topology's (SELECT, the
// slot map, ROLE), PING and CLIENT SETNAME; neither rlbench's own nor the
// faults', which rlbench's own connections send. A cell of a user
// strategy runs as a user holding exactly these.
func ClientCommands(n Needs) ([]Command, error) {
	n.Faults = nil
	all, err := Commands(n)
	if err != nil {
		return nil, err
	}
	return slices.DeleteFunc(all, func(c Command) bool {
		return strings.HasPrefix(c.Why, "rlbench:") && !slices.Contains(clientCommands, c.Name)
	}), nil
}

// Names returns the commands' names.
func Names(cmds []Command) []string {
	names := make([]string, len(cmds))
	for i, c := range cmds {
		names[i] = c.Name
	}
	return names
}

// KeyPattern is the ACL key pattern that gives access to the keys under
// prefix, and only those: the prefix with glob characters escaped, then
// "*" (the audit's SCAN MATCH pattern).
func KeyPattern(prefix string) string { return audit.MatchPattern(prefix) }

// SetUser returns the ACL SETUSER line that gives user exactly cmds on the
// keys under prefix and nothing else (no channels, no other keys, no
// other commands): "ACL SETUSER user reset on #HASH ~prefix* +cmd ...".
// The password appears only as its SHA-256 (#HASH), which ACL SETUSER
// takes, so that the line can be printed and logged; an empty password
// makes a line with ">PASSWORD" to be replaced by hand. A word that holds
// a space, a quote or a byte that is not printable ASCII is quoted as
// redis-cli reads it ("...", with \" \\ and \xHH), so that the line can
// be piped to redis-cli as it is.
func SetUser(user, password, prefix string, cmds []Command) string {
	words := SetUserArgs(user, password, prefix, cmds)
	for i, w := range words {
		words[i] = quote(w)
	}
	return strings.Join(words, " ")
}

// SetUserArgs returns the words of SetUser's line, unquoted, as a client
// sends them (e.g. to redis.Client.Do).
func SetUserArgs(user, password, prefix string, cmds []Command) []string {
	secret := ">PASSWORD"
	if password != "" {
		sum := sha256.Sum256([]byte(password))
		secret = "#" + hex.EncodeToString(sum[:])
	}
	words := []string{"ACL", "SETUSER", user, "reset", "on", secret, "~" + KeyPattern(prefix)}
	for _, c := range cmds {
		words = append(words, "+"+c.Name)
	}
	return words
}

// quote returns w as one word for redis-cli: as it is when it needs no
// quotes, else in double quotes with \", \\ and \xHH escapes.
func quote(w string) string {
	plain := w != ""
	for i := 0; i < len(w) && plain; i++ {
		c := w[i]
		plain = c > ' ' && c < 0x7f && c != '"' && c != '\''
	}
	if plain {
		return w
	}
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(w); i++ {
		switch c := w[i]; {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c < ' ' || c >= 0x7f:
			fmt.Fprintf(&b, "\\x%02x", c)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}
