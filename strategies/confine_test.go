package strategies

import (
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
)

// confined parses and checks src as a script (or a library), as
// registration does.
func confined(t *testing.T, src string, library bool) ([]string, error) {
	t.Helper()
	chunk, err := checkSyntax("x.lua", src)
	if err != nil {
		t.Fatalf("checkSyntax(%q) = %v; want nil", src, err)
	}
	return confineCheck("x.lua", chunk, library)
}

// TestConfineCheckTakes checks that what a rate limiter writes passes:
// rlbench's own scripts, the examples, keys derived from KEYS in the
// ways scripts derive them, a library's callback by value and by name.
func TestConfineCheckTakes(t *testing.T) {
	t.Parallel()
	good := map[string]struct {
		src     string
		library bool
		calls   []string
	}{
		"lua":              {src: SeedScript.Src, calls: []string{"incr", "expire", "ttl"}},
		"gcra":             {src: gcraScript.Src, calls: []string{"time", "get", "set"}},
		"sliding-log":      {src: slidingLogScript.Src, calls: []string{"time", "zremrangebyscore", "zcard", "incr", "zadd", "pexpire"}},
		"token-bucket":     {src: tokenBucketScript.Src, calls: []string{"time", "hmget", "exists", "hset", "pexpire"}},
		"hash-lua":         {src: HashFieldScript.Src, calls: []string{"hincrby", "hexpire", "httl"}},
		"example":          {src: readExample(t, "fixed_window.lua"), calls: []string{"incr", "ttl", "expire"}},
		"example function": {src: readExample(t, "fixed_window_function.lua"), library: true, calls: []string{"incr", "ttl", "expire"}},
		"derived keys": {src: "local k = KEYS[1] .. ':seq'\nlocal j = k\nj = KEYS[1]\nredis.pcall('incr', k)\nredis.call('MGET', KEYS[1], j)\nredis.call('EXISTS', unpack(KEYS))\nreturn {1, #KEYS}\n",
			calls: []string{"incr", "mget", "exists"}},
		"helpers":             {src: "redis.log(redis.LOG_NOTICE, 'x')\nlocal h = redis.sha1hex('a')\nfor i, k in ipairs(KEYS) do end\nif false then return redis.error_reply('no') end\nreturn {1, 1}\n"},
		"shadowed":            {src: "local redis = {call = function() end}\nredis.call('FLUSHALL')\nlocal loadstring = tostring\nloadstring(1)\nreturn {1, 1}\n"},
		"callback by name":    {src: "#!lua name=l\nlocal function f(keys, args)\n  return {1, redis.call('INCR', keys[1])}\nend\nredis.register_function('f', f)\n", library: true, calls: []string{"incr"}},
		"callback in a table": {src: "#!lua name=l\nredis.register_function{function_name='f', callback=function(ks, args) return {1, redis.call('INCR', ks[1] .. ':x')} end}\n", library: true, calls: []string{"incr"}},
	}
	for name, tc := range good {
		calls, err := confined(t, tc.src, tc.library)
		if err != nil || !slices.Equal(calls, tc.calls) {
			t.Errorf("%s: confineCheck = %v, %v; want %v, nil", name, calls, err, tc.calls)
		}
	}
}

func readExample(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile("../examples/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestConfineCheckRefuses checks what is refused, each naming the line:
// the commands that reach beyond the script's keys, a command named at
// run time, keys not from KEYS, and every way around the check.
func TestConfineCheckRefuses(t *testing.T) {
	t.Parallel()
	bad := map[string]struct {
		src     string
		library bool
		want    string
	}{
		"flushall":             {src: "redis.call('FLUSHALL')\nreturn {1, 1}\n", want: "x.lua:1: refused: redis.call('FLUSHALL'): FLUSHALL is refused"},
		"flushdb later":        {src: "local n = 1\nif n then\n  redis.pcall('flushdb')\nend\n", want: "x.lua:3: refused: redis.pcall('flushdb'): FLUSHDB is refused"},
		"keys":                 {src: "redis.call('KEYS', '*')\n", want: "x.lua:1: refused: redis.call('KEYS'): KEYS is refused: it walks every key"},
		"computed flushdb":     {src: "local c = 'FLUSH' .. 'DB'\nredis.call(c)\n", want: "x.lua:2: refused: redis.call names its command at run time"},
		"computed keys":        {src: "redis.call('KE' .. 'YS', '*')\n", want: "x.lua:1: refused: redis.call names its command at run time"},
		"select":               {src: "redis.call('SELECT', 1)\nredis.call('INCR', KEYS[1])\n", want: "SELECT is refused: it leaves the run's database"},
		"scan":                 {src: "redis.call('SCAN', 0)\n", want: "SCAN is refused"},
		"script":               {src: "redis.call('SCRIPT', 'FLUSH')\n", want: "SCRIPT is refused"},
		"function":             {src: "redis.call('FUNCTION', 'FLUSH')\n", want: "FUNCTION is refused"},
		"config":               {src: "redis.call('CONFIG', 'SET', 'maxmemory', '1')\n", want: "CONFIG is refused"},
		"debug":                {src: "redis.call('DEBUG', 'SLEEP', 1)\n", want: "DEBUG is refused"},
		"shutdown":             {src: "redis.call('SHUTDOWN')\n", want: "SHUTDOWN is refused"},
		"swapdb":               {src: "redis.call('SWAPDB', 0, 1)\n", want: "SWAPDB is refused"},
		"move":                 {src: "redis.call('MOVE', KEYS[1], 1)\n", want: "MOVE is refused"},
		"eval":                 {src: "redis.call('EVAL', 'return 1', 0)\n", want: "EVAL is refused"},
		"acl":                  {src: "redis.call('ACL', 'SETUSER', 'x', 'on', '+@all')\n", want: "ACL is refused: a user strategy may call the string"},
		"literal key":          {src: "redis.call('SET', 'not-the-prefix', 1)\n", want: "x.lua:1: refused: redis.call('SET', ...): its key must be derived from KEYS"},
		"prefixed key":         {src: "redis.call('GET', 'x' .. KEYS[1])\n", want: "its key must be derived from KEYS"},
		"second mset key":      {src: "redis.call('MSET', KEYS[1], 1, 'other', 2)\n", want: "its key must be derived from KEYS"},
		"reassigned key":       {src: "local k = KEYS[1]\nk = 'other'\nredis.call('GET', k)\n", want: "x.lua:2: refused: assigns k, which holds a key from KEYS"},
		"key from a param":     {src: "local function get(k) return redis.call('GET', k) end\nreturn get(KEYS[1])\n", want: "x.lua:1: refused: redis.call('GET', ...): its key must be derived"},
		"changed KEYS":         {src: "KEYS[1] = 'other'\nredis.call('GET', KEYS[1])\n", want: "x.lua:1: refused: changes KEYS"},
		"KEYS replaced":        {src: "KEYS = {'other'}\n", want: "assigns the global KEYS"},
		"KEYS aliased":         {src: "local t = KEYS\nt[1] = 'other'\n", want: "x.lua:1: refused: uses KEYS other than to read it"},
		"KEYS inserted into":   {src: "table.insert(KEYS, 'other')\n", want: "uses KEYS other than to read it"},
		"alias":                {src: "local c = redis.call\nc('FLUSHALL')\n", want: "x.lua:1: refused: uses redis.call other than in a call"},
		"bracket alias":        {src: "local c = redis['call']\nc('FLUSHALL')\n", want: "uses redis.call other than in a call"},
		"computed field":       {src: "redis['ca' .. 'll']('FLUSHALL')\n", want: "calls redis[...]"},
		"redis as a value":     {src: "local r = redis\nr.call('FLUSHALL')\n", want: "uses redis other than in a call"},
		"pcall of call":        {src: "pcall(redis.call, 'FLUSHALL')\n", want: "uses redis.call other than in a call"},
		"method":               {src: "redis:call('FLUSHALL')\n", want: "calls redis:call(...)"},
		"loadstring":           {src: "loadstring(\"return redis.call('FLUSHALL')\")()\n", want: "x.lua:1: refused: uses loadstring: it compiles code"},
		"load":                 {src: "load(function() return 'x' end)\n", want: "uses load"},
		"getfenv":              {src: "getfenv(1).redis.call('FLUSHALL')\n", want: "uses getfenv"},
		"setfenv":              {src: "setfenv(1, {})\n", want: "uses setfenv"},
		"rawget":               {src: "rawget(_G, 'redis').call('FLUSHALL')\n", want: "uses rawget"},
		"_G":                   {src: "_G['re' .. 'dis'].call('FLUSHALL')\n", want: "uses _G"},
		"set_repl":             {src: "redis.set_repl(redis.REPL_NONE)\n", want: "calls redis.set_repl"},
		"register in a script": {src: "redis.register_function('f', function(keys) end)\n", want: "outside a Functions library"},
		"library flushall":     {src: "#!lua name=l\nredis.register_function('f', function(keys, args)\n  redis.call('FLUSHALL')\nend)\n", library: true, want: "x.lua:3: refused: redis.call('FLUSHALL')"},
		"library literal key":  {src: "#!lua name=l\nredis.register_function('f', function(keys, args) return redis.call('INCR', 'not-the-prefix') end)\n", library: true, want: "x.lua:2: refused: redis.call('INCR', ...): its key must be derived"},
		"library keys changed": {src: "#!lua name=l\nredis.register_function('f', function(keys, args) keys[1] = 'x' end)\n", library: true, want: "changes KEYS"},
		"no command":           {src: "redis.call()\n", want: "names no command"},
	}
	for name, tc := range bad {
		_, err := confined(t, tc.src, tc.library)
		if !errors.Is(err, ErrBadUserStrategy) || !errors.Is(err, ErrUnconfined) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: confineCheck(%q) = %v; want ErrBadUserStrategy and ErrUnconfined saying %q", name, tc.src, err, tc.want)
		}
	}
}
