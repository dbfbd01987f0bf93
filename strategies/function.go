package strategies

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// FunctionLibrary is the name of the Redis Function library the function
// strategy loads. A library is server-global state, not a key: it does not
// carry the run's key prefix, and every run against a server shares it.
// It is loaded (FUNCTION LOAD) only where it is absent; a library of that
// name with other code, a user's or another rlbench version's, is refused
// (ErrForeignLibrary), never replaced. The client that loaded it deletes
// it after the run (clients.Conn.DeleteLibraries).
const FunctionLibrary = "rlbench"

// FunctionName is the function in FunctionLibrary that the function
// strategy calls. Function names are global across libraries too, hence
// the rlbench_ prefix.
const FunctionName = "rlbench_fixed_window_heal"

func init() {
	register(Info{
		Name: "function",
		Summary: "lua-heal's script body as a Redis Function (library " + FunctionLibrary +
			", server-global, loaded before the run); no script cache, so no NOSCRIPT",
		Commands:    "FCALL " + FunctionName + " (FUNCTION LOAD before the run where it is absent, FUNCTION DELETE after it): INCR; TTL; EXPIRE (when TTL < 0)",
		Atomic:      true,
		Heals:       true,
		FixedWindow: true,
		MinRedis:    "7.0.0", // FUNCTION, FCALL
		New: func(c Config) Strategy {
			return &function{cfg: c, args: NewArgs(strconv.FormatInt(c.Window, 10))}
		},
	})
}

// functionLibraryCode is the library FUNCTION LOAD receives: healBody,
// unchanged, as the body of a function whose parameters are named KEYS and
// ARGV. It touches only the key passed in KEYS.
const functionLibraryCode = "#!lua name=" + FunctionLibrary + "\n" +
	"redis.register_function('" + FunctionName + "', function(KEYS, ARGV)\n" +
	healBody +
	"end)\n"

// function runs the healing script as a Redis Function. A function lives in
// the server's function library, not in the script cache: SCRIPT FLUSH does
// not remove it, and it is kept in RDB/AOF files and replicated, so there is
// no NOSCRIPT to fall back from.
type function struct {
	cfg  Config
	args Args // ARGV, built once: the window in seconds
}

var _ Preparer = (*function)(nil)

func (*function) Name() string { return "function" }

// Prepare loads FunctionLibrary (Client.FunctionLoad), unless a library of
// that name with other code is loaded (ErrForeignLibrary). The same code
// loaded already is left as it is, so concurrent runs may each call it.
func (*function) Prepare(ctx context.Context, c Client) error {
	if err := c.FunctionLoad(ctx, functionLibraryCode); err != nil {
		return fmt.Errorf("function: function load: %w", err)
	}
	return nil
}

// Decide calls the function with FCALL. A server that has lost the library
// since Prepare (FUNCTION FLUSH, or a restart without persistence) answers
// "ERR Function not found"; Decide then loads the library and calls again,
// once. The same path serves callers that never called Prepare.
func (s *function) Decide(ctx context.Context, c Client, key string) (Decision, error) {
	keys := [1]string{key}
	r, err := c.FCallInts(ctx, FunctionName, keys[:], s.args)
	if isFunctionNotFound(err) {
		if err := s.Prepare(ctx, c); err != nil {
			return Decision{}, err
		}
		r, err = c.FCallInts(ctx, FunctionName, keys[:], s.args)
	}
	if err != nil {
		return Decision{}, fmt.Errorf("function: fcall: %w", err)
	}
	if len(r) < 1 {
		return Decision{}, fmt.Errorf("function: fcall: reply has %d elements; want at least 1", len(r))
	}
	return countDecision(r, s.cfg.Limit), nil
}

// isFunctionNotFound reports whether err is the server's reply to an FCALL
// of a function that is not loaded. It runs after every FCALL: errors.AsType
// keeps it free of allocations, where errors.As would move its target to the
// heap.
func isFunctionNotFound(err error) bool {
	re, ok := errors.AsType[ReplyError](err)
	return ok && strings.Contains(string(re), "Function not found")
}

// ErrForeignLibrary is returned by Client.FunctionLoad when the server
// already holds a library of the same name with other code: a user's
// library that happens to share the name, or another version's. rlbench
// never replaces it; FUNCTION DELETE removes it if it is yours to drop.
var ErrForeignLibrary = errors.New("a library of that name with other code is loaded on the server; rlbench does not replace it")

// CheckLibrary says whether a server that holds the library name, with
// the code loaded, may be given code: nil when the two are the same, else
// ErrForeignLibrary (rlbench never replaces another library).
func CheckLibrary(name, code, loaded string) error {
	if loaded != code {
		return fmt.Errorf("%w: %q (FUNCTION DELETE %s removes it, if it is yours to drop)", ErrForeignLibrary, name, name)
	}
	return nil
}

// LibraryName returns the library name that code declares in its first
// line, "#!lua name=NAME", or "" when it declares none.
func LibraryName(code string) string {
	first, _, _ := strings.Cut(code, "\n")
	for _, f := range strings.Fields(first) {
		if n, ok := strings.CutPrefix(f, "name="); ok {
			return n
		}
	}
	return ""
}
