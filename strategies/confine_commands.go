package strategies

import "slices"

// keyRule says which arguments of a command a user strategy may call are
// keys: each of them must be derived from KEYS (see confine.go).
type keyRule int

const (
	keyFirst keyRule = iota // the first argument: GET K, HSET K f v
	keyAll                  // every argument: MGET K..., EXISTS K...
	keyPairs                // every other one, from the first: MSET K v K v
	keyNone                 // none: TIME
)

// scriptCommand is a command a user strategy may call.
type scriptCommand struct {
	keys keyRule
	// args is the fewest arguments the command takes after its name (its
	// arity less one): what a permission probe must send.
	args int
}

// scriptCommands are the commands a user strategy (--script, --function)
// may call, by their ACL names: the string, counter, hash, sorted-set and
// TTL families, TIME, EXISTS, TYPE, and DEL and UNLINK, each on keys from
// KEYS. None is @dangerous or @admin, none names a key it is not given,
// and none reaches another database (TestScriptCommandsAreSafe asks a
// server).
var scriptCommands = map[string]scriptCommand{
	// Strings.
	"get": {keyFirst, 1}, "set": {keyFirst, 2}, "setnx": {keyFirst, 2}, "setex": {keyFirst, 3},
	"psetex": {keyFirst, 3}, "getset": {keyFirst, 2}, "getdel": {keyFirst, 1}, "getex": {keyFirst, 1},
	"mget": {keyAll, 1}, "mset": {keyPairs, 2}, "msetnx": {keyPairs, 2}, "append": {keyFirst, 2},
	"strlen": {keyFirst, 1}, "getrange": {keyFirst, 3}, "setrange": {keyFirst, 3},
	// Counters.
	"incr": {keyFirst, 1}, "incrby": {keyFirst, 2}, "incrbyfloat": {keyFirst, 2},
	"decr": {keyFirst, 1}, "decrby": {keyFirst, 2},
	// Hashes, and their fields' TTLs (Redis >= 7.4).
	"hget": {keyFirst, 2}, "hset": {keyFirst, 3}, "hsetnx": {keyFirst, 3}, "hmget": {keyFirst, 2},
	"hmset": {keyFirst, 3}, "hincrby": {keyFirst, 3}, "hincrbyfloat": {keyFirst, 3}, "hdel": {keyFirst, 2},
	"hexists": {keyFirst, 2}, "hlen": {keyFirst, 1}, "hkeys": {keyFirst, 1}, "hvals": {keyFirst, 1},
	"hgetall": {keyFirst, 1}, "hstrlen": {keyFirst, 2},
	"hexpire": {keyFirst, 5}, "hpexpire": {keyFirst, 5}, "hexpireat": {keyFirst, 5}, "hpexpireat": {keyFirst, 5},
	"httl": {keyFirst, 4}, "hpttl": {keyFirst, 4}, "hexpiretime": {keyFirst, 4}, "hpexpiretime": {keyFirst, 4},
	"hpersist": {keyFirst, 4},
	// Sorted sets.
	"zadd": {keyFirst, 3}, "zrem": {keyFirst, 2}, "zcard": {keyFirst, 1}, "zcount": {keyFirst, 3},
	"zscore": {keyFirst, 2}, "zmscore": {keyFirst, 2}, "zincrby": {keyFirst, 3}, "zrange": {keyFirst, 3},
	"zrangebyscore": {keyFirst, 3}, "zrevrange": {keyFirst, 3}, "zrevrangebyscore": {keyFirst, 3},
	"zrangebylex": {keyFirst, 3}, "zrevrangebylex": {keyFirst, 3}, "zlexcount": {keyFirst, 3},
	"zrank": {keyFirst, 2}, "zrevrank": {keyFirst, 2}, "zremrangebyscore": {keyFirst, 3},
	"zremrangebyrank": {keyFirst, 3}, "zremrangebylex": {keyFirst, 3}, "zpopmin": {keyFirst, 1},
	"zpopmax": {keyFirst, 1},
	// TTLs.
	"expire": {keyFirst, 2}, "pexpire": {keyFirst, 2}, "expireat": {keyFirst, 2}, "pexpireat": {keyFirst, 2},
	"ttl": {keyFirst, 1}, "pttl": {keyFirst, 1}, "expiretime": {keyFirst, 1}, "pexpiretime": {keyFirst, 1},
	"persist": {keyFirst, 1},
	// The rest.
	"time": {keyNone, 0}, "exists": {keyAll, 1}, "type": {keyFirst, 1}, "del": {keyAll, 1}, "unlink": {keyAll, 1},
}

// refusedWhy says why the commands users most often reach for are
// refused; any other command outside scriptCommands is refused too.
var refusedWhy = map[string]string{
	"keys": "it walks every key of the database", "scan": "it walks every key of the database",
	"select": "it leaves the run's database", "swapdb": "it swaps whole databases", "move": "it moves a key to another database",
	"flushall": "it deletes every key of the server", "flushdb": "it deletes every key of the database",
	"script": "it acts on every tenant's scripts", "function": "it acts on every tenant's libraries",
	"config": "it changes the server", "debug": "it changes the server", "shutdown": "it stops the server",
	"eval": "it runs code this check has not read", "evalsha": "it runs code this check has not read",
	"eval_ro": "it runs code this check has not read", "evalsha_ro": "it runs code this check has not read",
	"fcall": "it runs code this check has not read", "fcall_ro": "it runs code this check has not read",
}

// forbidden are the globals through which code could reach redis.call
// without naming it, or build code this check has not read.
var forbidden = map[string]string{
	"loadstring": "it compiles code this check has not read", "load": "it compiles code this check has not read",
	"dofile": "it runs code this check has not read", "loadfile": "it runs code this check has not read",
	"require": "it runs code this check has not read", "module": "it changes the globals",
	"getfenv": "it reaches the globals, redis among them", "setfenv": "it changes the globals",
	"rawget": "it reaches a table's fields around this check", "rawset": "it changes a table's fields around this check",
	"_G": "it reaches the globals, redis among them", "debug": "it reaches the functions' environments",
	"newproxy":       "it reaches metatables around this check",
	"getmetatable":   "it reaches metatables, which outlive the script (the strings' one is every tenant's)",
	"setmetatable":   "it changes a metatable, which this check cannot follow",
	"collectgarbage": "it changes the Lua state that every tenant's scripts share",
}

// baseGlobals are the other globals a user strategy may read: the base
// library's functions that read their arguments only, and ARGV. Any other
// global (a name the server gives some scripts, such as the f_<sha1> each
// cached script was a global of before Redis 6.2, or one no script has)
// is refused: it could reach code or state this check has not read.
var baseGlobals = []string{"ARGV", "tonumber", "tostring", "type", "unpack", "ipairs", "pairs", "next", "select",
	"error", "assert", "pcall", "xpcall", "rawequal", "_VERSION"}

// standardTables are the tables of functions the server gives every
// script (Valkey's server, redis's alias, is checked as redis): a user
// strategy reads their fields by name (string.format, cjson.decode), and
// never holds, passes or changes one, since every tenant's scripts share
// them.
var standardTables = []string{"string", "table", "math", "bit", "cjson", "cmsgpack", "struct", "os", "coroutine"}

// refusedFields are the fields of standard tables that change them for
// every tenant's scripts: cjson's settings and the random generator's
// seed, which outlive the script.
var refusedFields = map[string]string{
	"math.randomseed":               "it sets the random generator that every tenant's scripts share (Redis >= 7.0 keeps the seed for the next script)",
	"cjson.encode_sparse_array":     "it changes cjson's settings for every tenant's scripts",
	"cjson.encode_max_depth":        "it changes cjson's settings for every tenant's scripts",
	"cjson.decode_max_depth":        "it changes cjson's settings for every tenant's scripts",
	"cjson.encode_number_precision": "it changes cjson's settings for every tenant's scripts",
	"cjson.encode_keep_buffer":      "it changes cjson's settings for every tenant's scripts",
	"cjson.encode_invalid_numbers":  "it changes cjson's settings for every tenant's scripts",
	"cjson.decode_invalid_numbers":  "it changes cjson's settings for every tenant's scripts",
}

// redisHelpers are the functions of redis a user strategy may call, beside
// redis.call and redis.pcall: none sends a command.
var redisHelpers = []string{"error_reply", "status_reply", "sha1hex", "log", "setresp", "replicate_commands", "acl_check_cmd"}

// redisConstants are the fields of redis a user strategy may read: the
// log levels and the server's version.
var redisConstants = []string{"LOG_DEBUG", "LOG_VERBOSE", "LOG_NOTICE", "LOG_WARNING", "REDIS_VERSION", "REDIS_VERSION_NUM"}

// ScriptCommands returns the ACL names of the commands a user strategy
// may call, sorted.
func ScriptCommands() []string {
	names := make([]string, 0, len(scriptCommands))
	for n := range scriptCommands {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// ScriptProbe returns arguments of the right arity for name, a command a
// user strategy may call, with "K" for each key (a permission probe sends
// them in a transaction that never runs); false for another command.
func ScriptProbe(name string) ([]string, bool) {
	c, ok := scriptCommands[name]
	if !ok {
		return nil, false
	}
	args := make([]string, c.args)
	for i := range args {
		key := c.keys == keyAll || (c.keys == keyFirst && i == 0) || (c.keys == keyPairs && i%2 == 0)
		args[i] = "1"
		if key {
			args[i] = "K"
		}
	}
	return args, true
}

// scriptCommandList is the refusal's reminder of what is allowed.
func scriptCommandList() string {
	return "the string, counter, hash, sorted-set and TTL commands, TIME, EXISTS, TYPE, DEL and UNLINK"
}
