// Package strategies holds the rate-limiter counter strategies that rlbench
// measures. Each strategy is one file, written once against Client, a small
// client-neutral interface that the adapters in package clients implement with
// each Redis client's native calls.
//
// A strategy turns one request for a key into a Decision: allowed or rejected,
// and the counter value the decision was based on.
package strategies

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rlbench/rlbench/excerpt"
)

// DefaultLimit is the number of requests a key may make in one window.
const DefaultLimit = 100

// DefaultWindow is the counter's lifetime, in whole seconds.
const DefaultWindow = 60

// DefaultFields is the number of fields a hash-field strategy spreads each
// key's requests over.
const DefaultFields = 1

// LayoutHashField is the Info.Layout of the strategies whose counter is a
// field of a hash (one hash per key, one field per endpoint), each field
// with its own TTL (HEXPIRE, Redis >= 7.4).
const LayoutHashField = "hash-field"

// Sentinel errors returned by New and Config.Validate.
var (
	// ErrInvalidLimit is returned for a limit below 1.
	ErrInvalidLimit = errors.New("limit must be >= 1")
	// ErrInvalidWindow is returned for a window below 1 second.
	ErrInvalidWindow = errors.New("window must be a whole number of seconds >= 1")
	// ErrUnknownStrategy is returned for a name that is not registered.
	ErrUnknownStrategy = errors.New("unknown strategy")
	// ErrInvalidFields is returned for a field count below 1.
	ErrInvalidFields = errors.New("fields must be >= 1")
)

// Config configures a strategy. Its zero value means the defaults.
type Config struct {
	// Limit is the number of requests allowed per key per window; 0 means DefaultLimit.
	Limit int64
	// Window is the counter's lifetime, in whole seconds; 0 means DefaultWindow.
	Window int64
	// Fields is the number of fields of each key's hash that a hash-field
	// strategy (Info.Layout LayoutHashField) spreads the key's requests
	// over, each field a counter of its own (an endpoint); 0 means
	// DefaultFields. Other strategies ignore it.
	Fields int
}

// WithDefaults returns c with zero fields replaced by the defaults.
func (c Config) WithDefaults() Config {
	if c.Limit == 0 {
		c.Limit = DefaultLimit
	}
	if c.Window == 0 {
		c.Window = DefaultWindow
	}
	if c.Fields == 0 {
		c.Fields = DefaultFields
	}
	return c
}

// Validate reports ErrInvalidLimit, ErrInvalidWindow or ErrInvalidFields
// for a config that no strategy can run. It does not apply defaults.
func (c Config) Validate() error {
	if c.Limit < 1 {
		return fmt.Errorf("%w, got %d", ErrInvalidLimit, c.Limit)
	}
	if c.Window < 1 {
		return fmt.Errorf("%w, got %d", ErrInvalidWindow, c.Window)
	}
	if c.Fields < 1 {
		return fmt.Errorf("%w, got %d", ErrInvalidFields, c.Fields)
	}
	return nil
}

// Decision is the outcome of one request.
type Decision struct {
	// Allowed is true when the request was admitted.
	Allowed bool
	// Count is the counter value the decision was based on: the value after
	// the increment, or for a strategy that reads before it writes, the value
	// it read (0 when the key was missing).
	Count int64
}

// Strategy decides one request for one key.
type Strategy interface {
	// Name is the strategy's registered name, e.g. "lua".
	Name() string
	// Decide counts one request against key and says whether it is allowed.
	Decide(ctx context.Context, c Client, key string) (Decision, error)
}

// Preparer is implemented by strategies that need server-side set-up
// before their first decision, such as loading a Redis Function. Prepare is
// called once per client connection set, before the load starts.
type Preparer interface {
	Prepare(ctx context.Context, c Client) error
}

// Client is the client-neutral set of Redis operations strategies use. The
// adapters in package clients implement it with each client's native calls.
// Every method is one round trip unless its comment says otherwise.
type Client interface {
	// Get reads an integer counter. ok is false when the key does not exist.
	Get(ctx context.Context, key string) (n int64, ok bool, err error)
	// SetExAt sets key to n with an absolute expiry: SET key n EXAT unixSeconds.
	SetExAt(ctx context.Context, key string, n int64, unixSeconds int64) error
	// Incr increments key and returns the new value: INCR key.
	Incr(ctx context.Context, key string) (int64, error)
	// Expire sets a TTL: EXPIRE key seconds. set is false when the key does not exist.
	Expire(ctx context.Context, key string, seconds int64) (set bool, err error)
	// IncrExpireNX runs MULTI; INCR key; EXPIRE key seconds NX; EXEC as one
	// transaction and returns the INCR reply.
	IncrExpireNX(ctx context.Context, key string, seconds int64) (int64, error)
	// EvalInts runs s with EVALSHA, falling back to EVAL when the server
	// answers NOSCRIPT, and returns its reply, which must be an array of
	// integers; a bare integer reply is the error IntegerReply.
	EvalInts(ctx context.Context, s *Script, keys []string, args Args) ([]int64, error)
	// FunctionLoad loads a library of Redis Functions where it is absent
	// (FUNCTION LOAD code), and leaves the same code loaded already as it
	// is. It returns ErrForeignLibrary, and loads nothing, when a library
	// of that name with other code is loaded. Redis >= 7.0.
	FunctionLoad(ctx context.Context, code string) error
	// FCallInts calls a loaded Redis Function: FCALL fn numkeys keys...
	// args..., and returns its reply, which must be an array of integers
	// (a bare integer is the error IntegerReply, as for EvalInts). Redis >= 7.0.
	FCallInts(ctx context.Context, fn string, keys []string, args Args) ([]int64, error)
	// HIncrBy increments a hash field and returns its new value: HINCRBY
	// key field n.
	HIncrBy(ctx context.Context, key, field string, n int64) (int64, error)
	// HExpire sets a hash field's TTL: HEXPIRE key seconds FIELDS 1 field,
	// and returns the reply for the field: 1 when set, -2 when the field
	// (or the key) does not exist. Redis >= 7.4.
	HExpire(ctx context.Context, key, field string, seconds int64) (int64, error)
	// HIncrExpireNX runs MULTI; HINCRBY key field 1; HEXPIRE key seconds
	// NX FIELDS 1 field; EXEC as one transaction and returns the HINCRBY
	// reply. Redis >= 7.4.
	HIncrExpireNX(ctx context.Context, key, field string, seconds int64) (int64, error)
	// HTTL reads a hash field's TTL in seconds: HTTL key FIELDS 1 field;
	// -1 when the field has none, -2 when it (or the key) does not exist.
	// Redis >= 7.4.
	HTTL(ctx context.Context, key, field string) (int64, error)
	// Pipeline sends cmds in one write, as a pipeline (not a transaction:
	// other clients' commands may run between them), and returns one
	// Reply per command; a command's error reply is in its Reply. A Tap
	// sees it as one round trip. err is for the round trip as a whole (a
	// network error, a crash).
	Pipeline(ctx context.Context, cmds []Cmd) ([]Reply, error)
	// Transaction sends MULTI, cmds and EXEC in one write, and returns
	// the replies EXEC gave for cmds, one per command. A Tap sees it as
	// one round trip. It returns ErrTransactionAborted, or the queuing
	// error, when EXEC ran nothing.
	Transaction(ctx context.Context, cmds []Cmd) ([]Reply, error)
}

// Script is a Lua script that adapters run with EVALSHA and an EVAL fallback.
// Declare scripts as package-level values with NewScript.
type Script struct {
	// Src is the script's source.
	Src string
	// SHA1 is the hex SHA-1 of Src, the name EVALSHA uses.
	SHA1 string
}

// ReplyError is an error reply from the Redis server (as opposed to a
// network or client error). Adapters return it for every error reply, so
// that strategies and reports treat both clients' errors the same way.
type ReplyError string

// Error returns the server's message, e.g. "WRONGTYPE Operation against
// ...", shortened by excerpt.Text beyond a few hundred bytes: a script's
// error reply may be megabytes long.
func (e ReplyError) Error() string { return excerpt.Text(string(e)) }

// Prefix returns the error's first word, e.g. "WRONGTYPE", "NOSCRIPT" or
// "ERR" (shortened as Error is).
func (e ReplyError) Prefix() string {
	s := string(e)
	if i := strings.IndexByte(s, ' '); i >= 0 {
		s = s[:i]
	}
	return excerpt.Text(s)
}

// IntegerReply is the error EvalInts and FCallInts return for a reply that
// is a bare integer, not an array: the integer. A user strategy takes it
// as the count its decision is based on (the script contract, in
// userscript.go); to any other caller it is a reply of the wrong shape.
type IntegerReply int64

// Error names the integer and the shape wanted.
func (r IntegerReply) Error() string {
	return "integer reply " + strconv.FormatInt(int64(r), 10) + ", not an array"
}

// ErrorKind is the kind reports give the error (results.KindedError): its
// Prefix.
func (e ReplyError) ErrorKind() string { return e.Prefix() }

// Info describes a registered strategy.
type Info struct {
	// Name selects the strategy on the command line.
	Name string
	// Summary is a one-line description.
	Summary string
	// Commands lists the Redis commands one decision sends.
	Commands string
	// EVALSHA is true when a decision runs a script by EVALSHA (with a
	// fallback on NOSCRIPT), so that it meets NOSCRIPT once the server's
	// script cache is flushed.
	EVALSHA bool
	// Atomic is true when one decision's reads and writes, the expiry
	// included, run as one atomic unit (a transaction or a script).
	Atomic bool
	// Heals is true when a fixed-window counter that already lost its TTL
	// gets one back on the next request. It is false for the designs that
	// keep no fixed-window counter (FixedWindow false), where the question
	// does not arise; their Summary says how they set their TTL.
	Heals bool
	// MinRedis is the lowest Redis version that runs the strategy, e.g. "7.0.0".
	MinRedis string
	// FixedWindow is true for a fixed-window counter: at most Limit
	// requests per key per window, the window starting at the key's first
	// request and never extended by traffic. A user strategy is checked
	// as one unless it claims sliding or its key carries a stamp (see
	// checkedAsFixedWindow), whatever else it claims.
	FixedWindow bool
	// ChangesWrongType is true when a decision changes a key of another
	// type (a hash, a list) that sits at the counter's name, instead of
	// failing and leaving it as it was.
	ChangesWrongType bool
	// CountIsRead is true when Decision.Count is the value the strategy read
	// before writing (naive), not the counter's value after its own
	// increment, which is the request's rank in its window.
	CountIsRead bool
	// RejectsUnincremented is true for an increment-first counter whose
	// rejections read the counter and leave it as it is (laravel:
	// tooManyAttempts before hit), so that its decisions are not one
	// increment each.
	RejectsUnincremented bool
	// Clients lists the clients the strategy runs on, by their names in
	// package clients; nil means every client. A published Go library that
	// takes a go-redis client runs on "go-redis" only.
	Clients []string
	// Module is the Go module of the published library the strategy calls,
	// e.g. "github.com/ulule/limiter/v3"; "" for rlbench's own code. Its
	// version is the build's (debug.ReadBuildInfo).
	Module string
	// Keys says which keys one decision writes, in terms of the decision's
	// key K; "" means K alone.
	Keys string
	// Layout is where a decision's counter lives: "" for a key of its own
	// (the key K), LayoutHashField for a field of the hash at K, with a
	// TTL of its own. Audits and checks read the counter, and its TTL,
	// where Layout says.
	Layout string
	// Source is the file a user strategy was registered from (--script,
	// --function), or "--sequence" for a sequence; "" for a built-in one.
	Source string
	// Calls are the commands a user strategy's source calls (redis.call,
	// redis.pcall), by their ACL names, each once; confineCheck allowed
	// each of them. Nil for a built-in one.
	Calls []string
	// Stamp is the stamp a decision's key carries after K, when its name
	// holds its window: StampUnix (the window's start in Unix seconds),
	// StampUnixMS (in milliseconds), StampUnixNS (in nanoseconds), StampIndex (the window's number,
	// start / window), StampHashed (the stamp is hashed into the name and
	// cannot be read from it); "" for a key without one. Such a window is
	// the clock's (aligned to the epoch), so FixedWindow is false.
	Stamp string
	// StampHidden is set when the stamp is not the last number of every
	// key's name (a sequence's {key}:{stamp}:{window}, or stamped keys
	// beside unstamped ones): an audit cannot read the window from it.
	StampHidden bool
	// WindowEnd, when not nil, returns when the window that a decision on
	// key at now counts in ends, for a stamped strategy whose windows are
	// not the epoch's multiples of the window (in seconds); nil means they
	// are.
	WindowEnd func(key string, window int64, now time.Time) time.Time
	// TTLSlack is how many seconds beyond the window a key's TTL may be
	// by design (rack-attack's +1, django-ratelimit's +5); 0 for none.
	TTLSlack int64
	// TTLWindows is how many windows long a key's TTL may be by design
	// (spring-gateway's 2: twice its bucket's fill time); 0 means 1.
	TTLWindows int64
	// NoTTL is true when a decision never gives a key a TTL, by design
	// (bucket4j without an expiration strategy, its default): every key it
	// writes stays until deleted, which the checks report as leaks.
	NoTTL bool
	// KeysBeside is true when a decision writes only keys named after K
	// (spring-gateway's K.tokens and K.timestamp), never K itself: the
	// checks that seed a key at K do not apply.
	KeysBeside bool
	// ACLCommands are the ACL names of the commands one decision sends,
	// for the strategies that package acl's own table does not list (the
	// models of deployed limiters, sequences); nil for the others.
	ACLCommands []string
	// New builds the strategy from a validated config with defaults applied.
	New func(Config) Strategy
}

// Supports reports whether the strategy runs on the named client.
func (i Info) Supports(client string) bool {
	return i.Clients == nil || slices.Contains(i.Clients, client)
}

// MaxTTL is the longest TTL, in seconds, the strategy gives a key by
// design for a window of window seconds: TTLWindows windows (at least
// one), and TTLSlack.
func (i Info) MaxTTL(window int64) int64 {
	return window*max(1, i.TTLWindows) + i.TTLSlack
}

// The stamps of Info.Stamp.
const (
	StampUnix   = "unix"
	StampUnixMS = "unix-ms"
	StampIndex  = "index"
	StampUnixNS = "unix-ns"
	StampHashed = "hashed"
)

// now is the client clock that naive reads for its EXAT, as the first
// seed's limiter does.
var now = time.Now
