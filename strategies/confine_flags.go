package strategies

import (
	"fmt"
	"slices"
	"strings"

	"github.com/yuin/gopher-lua/ast"
)

// functionFlags checks the flags of a library's registered function:
// string literals in a table, each one checkFlag takes.
func (c *confiner) functionFlags(v ast.Expr) {
	t, ok := v.(*ast.TableExpr)
	if !ok {
		c.refuse(v.Line(), "gives redis.register_function flags computed at run time: list them as string literals, flags = {'no-writes'}")
		return
	}
	for _, f := range t.Fields {
		lit, ok := f.Value.(*ast.StringExpr)
		if f.Key != nil || !ok {
			c.refuse(v.Line(), "gives redis.register_function flags computed at run time: list them as string literals, flags = {'no-writes'}")
			return
		}
		if err := checkFlag(lit.Value); err != "" {
			c.refuse(v.Line(), "redis.register_function's flag %s", err)
		}
	}
}

// Script flags (a script's "#!lua flags=..." line, a function's flags).
var (
	// narrowingFlags are the flags a user strategy may give: each makes
	// the server refuse the script in more cases, never fewer.
	narrowingFlags = []string{"no-writes", "no-cluster"}
	// wideningFlags are refused: each lets a script do what the server
	// refuses other scripts, on any server (rlbench's or not).
	wideningFlags = map[string]string{
		"allow-oom":             "it lets the script write past maxmemory, which the server refuses every other client",
		"allow-stale":           "it lets the script run on a replica that lost its master, on stale data",
		"allow-cross-slot-keys": "it lets the script touch keys of several slots, beyond the cell's",
	}
)

// checkFlag says why a script flag is refused ("FLAG is refused: ..."),
// or "" for one that only narrows what the script may do.
func checkFlag(flag string) string {
	if slices.Contains(narrowingFlags, flag) {
		return ""
	}
	if why := wideningFlags[flag]; why != "" {
		return fmt.Sprintf("%s is refused: %s (a user strategy may give %s)", flag, why, strings.Join(narrowingFlags, ", "))
	}
	return fmt.Sprintf("%q is refused: a user strategy may give %s", flag, strings.Join(narrowingFlags, ", "))
}

// checkShebang checks a script's first line, "#!lua flags=F1,F2": its
// flags (checkFlag), so that none widens what the script may do; a quote
// is refused, since the server unquotes the line's words ("flags=..."
// and 'flags=...' give it the flags). A library's first line ("#!lua
// name=LIB") gives no flags; its functions' flags are checked with the
// register_function call.
func checkShebang(file, src string, function bool) error {
	line, _, _ := strings.Cut(src, "\n")
	rest, ok := strings.CutPrefix(strings.TrimSpace(line), "#!")
	if !ok || function {
		return nil
	}
	if strings.ContainsAny(rest, `"'`) {
		return fmt.Errorf("%w: %s:1: %w: the #! line has a quote, which the server takes away, so that the flags it gives cannot be read here: write #!lua flags=%s",
			ErrBadUserStrategy, file, ErrUnconfined, strings.Join(narrowingFlags, ","))
	}
	words := strings.Fields(rest)
	for _, w := range words[min(1, len(words)):] {
		flags, ok := strings.CutPrefix(w, "flags=")
		if !ok {
			continue // Redis refuses it, at the first decision
		}
		for _, f := range strings.Split(flags, ",") {
			if why := checkFlag(f); why != "" && f != "" {
				return fmt.Errorf("%w: %s:1: %w: the script flag %s", ErrBadUserStrategy, file, ErrUnconfined, why)
			}
		}
	}
	return nil
}
