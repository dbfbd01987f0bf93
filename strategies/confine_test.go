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

// TestConfineCheckRefusesEscapes is the table of escapes through the
// standard library and metatables (issue 34, items 1 and 2): each row is
// a script that, passed, would leave behind on the server code that
// another tenant's script runs with that tenant's keys and rights (a
// hook in the strings' metatable, a redefined standard function), or
// would reach redis around the check; each is refused at parse time,
// naming the file and the line.
func TestConfineCheckRefusesEscapes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		src     string
		library bool
		want    string // the refusal starts with it
	}{
		// Issue 34's first: every string's k:len() then runs DEL on the
		// caller's KEYS[1] (writable on Redis 5.0, 6.2, 7.4, Valkey 8.0).
		{name: "strings' metatable hooked", src: "local mt = getmetatable('')\nlocal s = string\nmt.__index = function(str, k) redis.call('DEL', KEYS[1]) return s[k] end\nreturn {1, 1}\n",
			want: "x.lua:1: refused: uses getmetatable"},
		// The same metatable through the field of a call's result.
		{name: "metatable's field of a call", src: "local n = 1\ngetmetatable('').__index = function() return 1 end\n", want: "x.lua:2: refused: uses getmetatable"},
		// rawset writes a metatable's field around __newindex.
		{name: "rawset of a metatable", src: "rawset(getmetatable('x'), '__index', {})\n", want: "x.lua:1: refused: uses rawset"},
		// The globals' metatable: a hook on every missing global's read.
		{name: "globals' metatable", src: "local mt = getmetatable(_G)\n", want: "x.lua:1: refused: uses getmetatable"},
		// setmetatable cannot be followed: __index runs code at a read.
		{name: "setmetatable", src: "local t = setmetatable({}, {__index = function(t, k) return KEYS[1] end})\nredis.call('DEL', t.x)\n", want: "x.lua:1: refused: uses setmetatable"},
		// Before Redis 6.2 every cached script was a global f_<sha1>: a
		// tenant's script, run unread by this check.
		{name: "a cached script's global", src: "return f_0123456789abcdef0123456789abcdef01234567()\n",
			want: "x.lua:1: refused: reads the global f_0123456789abcdef0123456789abcdef01234567"},
		{name: "an unknown global's field", src: "local n = 1\nreturn tenantlib.x\n", want: "x.lua:2: refused: reads the global tenantlib"},
		// Issue 34's second: table.unpack stays redefined for every tenant.
		{name: "table.unpack redefined", src: "table.unpack = function(t) return 'tenant:key' end\nredis.call('DEL', table.unpack(KEYS))\n",
			want: "x.lua:1: refused: assigns table.unpack, a field of the global table"},
		// unpack, ipairs and pairs are trusted by name: none may be redefined.
		{name: "unpack redefined", src: "unpack = function(t) return 'tenant:key' end\nredis.call('DEL', unpack(KEYS))\n", want: "x.lua:1: refused: assigns the global unpack"},
		{name: "ipairs redefined", src: "function ipairs(t) return next, {'tenant:key'} end\n", want: "x.lua:1: refused: assigns the global ipairs"},
		{name: "pairs redefined", src: "local n = 1\npairs = nil\n", want: "x.lua:2: refused: assigns the global pairs"},
		// A standard function hooked: every tenant's string.len then runs it.
		{name: "string function hooked", src: "function string.len(s) redis.call('DEL', KEYS[1]) return 0 end\n", want: "x.lua:1: refused: assigns string.len, a field of the global string"},
		{name: "string method defined", src: "function string:evil() return redis.call('DEL', KEYS[1]) end\n", want: "x.lua:1: refused: assigns string.evil, a field of the global string"},
		{name: "nested field of a global", src: "cjson.x = {}\n", want: "x.lua:1: refused: assigns cjson.x, a field of the global cjson"},
		{name: "computed field of a global", src: "string['l' .. 'en'] = nil\n", want: "x.lua:1: refused: assigns string[...], a field of the global string"},
		// A global left behind is read by later scripts (Redis < 7.0 keeps it).
		{name: "a global defined", src: "function decide() return 1 end\n", want: "x.lua:1: refused: assigns the global decide"},
		{name: "ARGV changed", src: "ARGV[1] = 0\n", want: "x.lua:1: refused: assigns ARGV[...], a field of the global ARGV"},
		// A standard table held in a local is changed through it.
		{name: "standard table aliased", src: "local s = string\ns.len = function() return 0 end\n", want: "x.lua:1: refused: uses the standard table string other than to read a field"},
		{name: "standard table shadowed by itself", src: "local string = string\n", want: "x.lua:1: refused: uses the standard table string"},
		{name: "standard table in a table", src: "local t = {math}\nt[1].floor = nil\n", want: "x.lua:1: refused: uses the standard table math"},
		{name: "standard table passed", src: "local function hook(lib) lib.insert = nil end\nhook(table)\n", want: "x.lua:2: refused: uses the standard table table"},
		{name: "standard table walked", src: "for k, f in pairs(string) do end\n", want: "x.lua:1: refused: uses the standard table string"},
		{name: "standard table as a receiver", src: "local n = bit:tobit()\n", want: "x.lua:1: refused: uses the standard table bit"},
		// cjson's settings outlive the script: every tenant's cjson changes.
		{name: "cjson's settings", src: "cjson.encode_max_depth(1)\n", want: "x.lua:1: refused: uses cjson.encode_max_depth: it changes cjson's settings"},
		{name: "computed field of cjson", src: "local f = cjson['encode_' .. 'max_depth']\n", want: "x.lua:1: refused: reads cjson[...]"},
		// The scripts' random generator: Redis >= 7.0 keeps its seed for
		// every tenant's next script (6.2 reseeds each script).
		{name: "math.randomseed", src: "math.randomseed(7)\nreturn {1, 1}\n", want: "x.lua:1: refused: uses math.randomseed: it sets the random generator"},
		// Valkey names redis server too: the same rules, by either name.
		{name: "valkey's server.call", src: "server.call('FLUSHALL')\n", want: "x.lua:1: refused: server.call('FLUSHALL'): FLUSHALL is refused"},
		{name: "valkey's server, a literal key", src: "server.pcall('DEL', 'tenant:key')\n", want: "x.lua:1: refused: server.pcall('DEL', ...): its key must be derived from KEYS"},
		{name: "valkey's server aliased", src: "local r = server\n", want: "x.lua:1: refused: uses server other than in a call"},
		{name: "valkey's server.call aliased", src: "local c = server.call\n", want: "x.lua:1: refused: uses server.call other than in a call"},
		{name: "redis's field assigned", src: "redis.call = nil\n", want: "x.lua:1: refused: assigns redis.call, a field of the global redis"},
		// The Lua state's collector, which every tenant's scripts share.
		{name: "collectgarbage", src: "collectgarbage('stop')\n", want: "x.lua:1: refused: uses collectgarbage"},
		{name: "debug's metatables", src: "debug.setmetatable('', {})\n", want: "x.lua:1: refused: uses debug"},
		// A library: the same rules, in its body and in its callbacks.
		{name: "library hooks strings", library: true, src: "#!lua name=l\nlocal mt = getmetatable('')\nredis.register_function('f', function(keys, args) return {1} end)\n",
			want: "x.lua:2: refused: uses getmetatable"},
		{name: "library's callback redefines", library: true, src: "#!lua name=l\nredis.register_function('f', function(keys, args)\n  table.unpack = function() return 'tenant:key' end\n  return {1}\nend)\n",
			want: "x.lua:3: refused: assigns table.unpack, a field of the global table"},
		// A registered function's first parameter is trusted as its keys:
		// nothing but the server may call it, or it gets a forged table.
		{name: "callback called with a forged table", library: true,
			src:  "#!lua name=l\nlocal function del(keys, args) return {1, redis.call('DEL', keys[1])} end\nredis.register_function('f', function(keys, args) return del({'tenant:key'}, args) end)\nredis.register_function('g', del)\n",
			want: "x.lua:3: refused: uses del, a function redis.register_function registers, other than to register it"},
		{name: "callback calls itself with a forged table", library: true,
			src:  "#!lua name=l\nlocal function f(keys, args)\n  if keys[1] ~= 'tenant:key' then f({'tenant:key'}, args) end\n  return {1, redis.call('DEL', keys[1])}\nend\nredis.register_function('f', f)\n",
			want: "x.lua:3: refused: uses f, a function redis.register_function registers"},
		{name: "callback's name bound twice", library: true,
			src:  "#!lua name=l\nlocal function f(keys, args) return {1, redis.call('INCR', keys[1])} end\nredis.register_function('f', f)\nredis.register_function('g', function(keys, args)\n  local function f(t) return redis.call('DEL', t[1]) end\n  return {1, 1}\nend)\n",
			want: "x.lua:3: refused: registers f, a name bound to 2 functions"},
		{name: "library defines a global", library: true, src: "#!lua name=l\nfunction f(keys, args) return {1} end\nredis.register_function('f', f)\n",
			want: "x.lua:2: refused: assigns the global f"},
	} {
		_, err := confined(t, tc.src, tc.library)
		if !errors.Is(err, ErrUnconfined) || !strings.Contains(err.Error(), ": "+tc.want) {
			t.Errorf("%s: confineCheck(%q) = %v; want ErrUnconfined saying %q", tc.name, tc.src, err, tc.want)
		}
	}
}

// TestConfineCheckTakesStandardLibrary: what scripts do with the standard
// library and their own tables passes: read a function by name, call it,
// fill and change their own tables.
func TestConfineCheckTakesStandardLibrary(t *testing.T) {
	t.Parallel()
	for _, src := range []string{
		"local floor = math.floor\nlocal n = floor(tonumber(ARGV[1]) / 2)\nreturn {1, n}\n",
		"local s = string.format('%d', 1) .. ('x'):rep(2) .. string.sub(KEYS[1], 1, 2)\nreturn {1, #s}\n",
		"local t = {}\nt.a = {}\nt.a.b = 1\nt[#t + 1] = 2\ntable.insert(t, 3)\nreturn {1, table.getn(t)}\n",
		"local v = cjson.decode(cjson.encode({n = 1}))\nv.n = 2\nlocal a = ARGV\nreturn {1, v.n + #a + bit.band(3, 1) + os.clock() * 0}\n",
		"local function f(t) t.x = 1 return t end\nlocal r = f({})\nr.y = 2\nreturn {1, r.x}\n",
		"local server = {call = function() return 1 end}\nserver.call('FLUSHALL')\nreturn {1, 1}\n",
	} {
		if _, err := confined(t, src, false); err != nil {
			t.Errorf("confineCheck(%q) = %v; want nil", src, err)
		}
	}
}

// TestScriptFlags is issue 34, item 3: a flag that widens what a script
// may do (allow-oom writes past maxmemory) is refused, in a script's
// "#!lua flags=" line and in a library function's flags, on every
// server; the flags that only narrow it pass.
func TestScriptFlags(t *testing.T) {
	t.Parallel()
	const body = "return {1, redis.call('INCR', KEYS[1])}\n"
	const fn = "redis.register_function{function_name = 'f', callback = function(keys, args) return {1, redis.call('INCR', keys[1])} end, flags = %s}\n"
	for _, tc := range []struct {
		name, src string
		library   bool
		want      string // "" when it passes
	}{
		{name: "no flags", src: "#!lua\n" + body},
		{name: "no-writes", src: "#!lua flags=no-writes\nreturn {1, 1}\n"},
		{name: "no-cluster", src: "#!lua flags=no-writes,no-cluster\nreturn {1, 1}\n"},
		{name: "allow-oom", src: "#!lua flags=allow-oom\n" + body, want: "x.lua:1: refused: the script flag allow-oom is refused: it lets the script write past maxmemory"},
		{name: "allow-oom after another", src: "#!lua flags=no-cluster,allow-oom\n" + body, want: "x.lua:1: refused: the script flag allow-oom is refused"},
		{name: "allow-stale", src: "#!lua flags=allow-stale\n" + body, want: "the script flag allow-stale is refused: it lets the script run on a replica"},
		{name: "allow-cross-slot-keys", src: "#!lua  flags=allow-cross-slot-keys\n" + body, want: "the script flag allow-cross-slot-keys is refused"},
		{name: "unknown flag", src: "#!lua flags=bogus\n" + body, want: `the script flag "bogus" is refused: a user strategy may give no-writes, no-cluster`},
		{name: "function no-writes", library: true, src: "#!lua name=l\n" + strings.Replace(fn, "%s", "{'no-writes'}", 1)},
		{name: "function allow-oom", library: true, src: "#!lua name=l\n" + strings.Replace(fn, "%s", "{'no-writes', 'allow-oom'}", 1),
			want: "x.lua:2: refused: redis.register_function's flag allow-oom is refused: it lets the script write past maxmemory"},
		{name: "function flags computed", library: true, src: "#!lua name=l\nlocal f = {'allow-oom'}\n" + strings.Replace(fn, "%s", "f", 1),
			want: "x.lua:3: refused: gives redis.register_function flags computed at run time"},
		{name: "function flag computed", library: true, src: "#!lua name=l\nlocal f = 'allow-oom'\n" + strings.Replace(fn, "%s", "{f}", 1),
			want: "x.lua:3: refused: gives redis.register_function flags computed at run time"},
		// Redis unquotes the #! line's words (sdssplitargs) and reads the
		// table's fields by their value, whatever the key's expression.
		{name: "allow-oom quoted", src: "#!lua \"flags=allow-oom\"\n" + body, want: "x.lua:1: refused: the #! line has a quote"},
		{name: "allow-oom single-quoted", src: "#!lua 'flags=allow-oom'\n" + body, want: "x.lua:1: refused: the #! line has a quote"},
		{name: "function flags' key computed", library: true,
			src:  "#!lua name=l\nredis.register_function{function_name = 'f', ['fl' .. 'ags'] = {'allow-oom'}, callback = function(keys, args) return {1} end}\n",
			want: "x.lua:2: refused: calls redis.register_function with a field named at run time"},
		{name: "function table built elsewhere", library: true,
			src:  "#!lua name=l\nlocal spec = {function_name = 'f', callback = function(keys, args) return {1} end, flags = {'allow-oom'}}\nredis.register_function(spec)\n",
			want: "x.lua:3: refused: calls redis.register_function with a table built elsewhere"},
	} {
		_, err := userInfo("n", "x.lua", tc.src, tc.library)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: userInfo(%q) = %v; want nil", tc.name, tc.src, err)
		case tc.want != "" && (!errors.Is(err, ErrUnconfined) || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: userInfo(%q) = %v; want ErrUnconfined saying %q", tc.name, tc.src, err, tc.want)
		}
	}
}
