package strategies

import (
	"errors"
	"strings"
	"testing"
)

// TestCheckSyntax checks what the Lua parser takes before a run: what
// Redis's Lua 5.1 takes (a Functions library's or a script's "#!" line,
// a form feed or a vertical tab as a space, long strings, bit and cjson
// calls), and what it refuses, naming the line.
func TestCheckSyntax(t *testing.T) {
	t.Parallel()
	good := map[string]string{
		"shebang":        "#!lua flags=no-writes\nreturn {1, 1}\n",
		"library":        "#!lua name=lib\nredis.register_function('f', function(keys, args) return {1} end)\n",
		"form feed":      "local n = 1\f\nreturn {1, n}\n",
		"vertical tab":   "local n =\v1\nreturn {1, n}\n",
		"long string":    "local s = [[a\nb]] return {1, #s}\n",
		"bit and cjson":  "local x = bit.band(3, 1) local j = cjson.encode({x}) return {1, x}\n",
		"escapes":        "local s = \"\\65\\n\\t\" return {1, #s}\n",
		"crlf":           "local n = 1\r\nreturn {1, n}\r\n",
		"comment blocks": "--[[ a\nb ]] return {1, 1}\n",
	}
	for name, src := range good {
		if _, err := checkSyntax("x.lua", src); err != nil {
			t.Errorf("%s: checkSyntax(%q) = %v; want nil", name, src, err)
		}
	}
	bad := map[string]struct{ src, want string }{
		"unclosed call": {"local n = redis.call('INCR', KEYS[1]\nreturn {1, n}\n", "x.lua:2 does not compile"},
		"stray end":     {"local n = 1\nend\n", "x.lua:2 does not compile"},
		"unclosed":      {"return {1, 1\n", "at the end of the file"},
	}
	for name, tc := range bad {
		_, err := checkSyntax("x.lua", tc.src)
		if !errors.Is(err, ErrBadUserStrategy) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: checkSyntax(%q) = %v; want ErrBadUserStrategy saying %q", name, tc.src, err, tc.want)
		}
	}
}
