package verify

import (
	"context"
	"slices"
	"sort"

	"github.com/rlbench/rlbench/serverinfo"
	"github.com/rlbench/rlbench/strategies"
)

// Check describes one column of the matrix.
type Check struct {
	// Name is the column's name, e.g. "healing".
	Name string
	// Doc says in one line what the check does.
	Doc string
	// ServerWide is true for the checks that act on the whole server
	// (SCRIPT FLUSH, a restart): they run one row at a time, after the
	// others, and only on a private server.
	ServerWide bool
}

// checkDef is everything about one check, declared once in the check's
// own file (check_*.go) and passed to register from that file's init.
type checkDef struct {
	Check
	// window is the window, in seconds, of the strategy the check builds;
	// 0 means Config.Window. Checks that must stay inside one window
	// however slow the machine is use longWindow.
	window int64
	// notApplicable, when set, returns why the check does not apply to the
	// row ("" when it does). It is asked before the strategy and the client
	// are built.
	notApplicable func(r *row) string
	// run runs the check on one row. The trial holds the strategy, the
	// client and the check's keys; run returns the cell, without its Check.
	run func(ctx context.Context, t *trial) Cell
	// expected returns the outcomes that a strategy of Info p is
	// documented to give on the check against server s, the server's
	// version already known to run the strategy. A check whose outcome
	// depends on the client sets expectedOn instead.
	expected func(p strategies.Info, s Server) []Outcome
	// expectedOn, when set, is expected for the client named client; ""
	// (no client named) lists the outcomes of every client.
	expectedOn func(client string, p strategies.Info, s Server) []Outcome
	// leakNotClaimed is set when the leak that expected may list comes
	// from what rlbench reads of the strategy's commands, not from a
	// claim: a user strategy is expected to leak there as a built-in one
	// is (see Expected). A check with expectedOn is such a check too: its
	// leak is the client's.
	leakNotClaimed bool
}

// columns is the order of the matrix's columns. A check that is not listed
// comes after these, in name order.
var columns = []string{
	CheckFirst, CheckRepeated, CheckExpiry, CheckNotExtended, CheckWrongType,
	CheckConcurrent, CheckCrash, CheckRace, CheckHealing,
	CheckNoscript, CheckRestart, CheckRetry, CheckSplitBrain,
}

// allChecks holds every registered check, in column order.
var allChecks []checkDef

// register adds a check; each check file calls it from init.
func register(def checkDef) {
	if def.Name == "" || def.Doc == "" || def.run == nil || (def.expected == nil) == (def.expectedOn == nil) {
		panic("verify: check " + def.Name + " registered without its name, doc, run or one of expected and expectedOn")
	}
	if slices.ContainsFunc(allChecks, func(c checkDef) bool { return c.Name == def.Name }) {
		panic("verify: duplicate check " + def.Name)
	}
	allChecks = append(allChecks, def)
	sort.SliceStable(allChecks, func(i, j int) bool {
		ci, cj := columnOf(allChecks[i].Name), columnOf(allChecks[j].Name)
		if ci != cj {
			return ci < cj
		}
		return allChecks[i].Name < allChecks[j].Name
	})
}

// columnOf is name's place in columns, or len(columns) when it is not listed.
func columnOf(name string) int {
	if i := slices.Index(columns, name); i >= 0 {
		return i
	}
	return len(columns)
}

// Checks returns every check, in column order.
func Checks() []Check {
	out := make([]Check, len(allChecks))
	for i, c := range allChecks {
		out[i] = c.Check
	}
	return out
}

func checkNames() []string {
	names := make([]string, len(allChecks))
	for i, c := range allChecks {
		names[i] = c.Name
	}
	return names
}

// Expected returns the outcomes that a strategy of Info p is
// documented to give on check against server s; any of them is as
// documented. Where the documentation leaves the result open (a
// non-atomic strategy may or may not show a given race), both pass and
// leaks are listed; so are the outcomes of every client on a check whose
// outcome depends on the client (see ExpectedOn). An unknown check gives
// nil: nothing is as documented.
//
// A user strategy (userStrategy) is documented by its claims, which
// say what to expect and excuse no leak: where a built-in strategy of the
// same properties may leak, a user strategy must pass (its leak is a
// failure, whether claimed or not), but on a check whose leak comes from
// no claim: one whose outcome depends on the client (the retry check's,
// whose leak is the client's retries), or on what rlbench reads of the
// strategy's commands (wrong-type's).
func Expected(check string, p strategies.Info, s Server) []Outcome {
	return ExpectedOn(check, "", p, s)
}

// ExpectedOn is Expected for the client named client (see clients.Names),
// whose retries decide the retry check's outcome; "" names no client.
func ExpectedOn(check, client string, p strategies.Info, s Server) []Outcome {
	if !serverinfo.VersionAtLeast(s.RedisVersion, p.MinRedis) {
		return []Outcome{Unsupported}
	}
	i := slices.IndexFunc(allChecks, func(c checkDef) bool { return c.Name == check })
	switch {
	case i < 0:
		return nil
	case allChecks[i].expectedOn != nil:
		return allChecks[i].expectedOn(client, p, s)
	case userStrategy(p) && !allChecks[i].leakNotClaimed:
		return noLeak(allChecks[i].expected(p, s))
	}
	return allChecks[i].expected(p, s)
}

// noLeak is outcomes without Leaks, or Pass when Leaks was all of them:
// what a user strategy is expected to give.
func noLeak(outcomes []Outcome) []Outcome {
	out := slices.DeleteFunc(slices.Clone(outcomes), func(o Outcome) bool { return o == Leaks })
	if len(out) == 0 {
		return []Outcome{Pass}
	}
	return out
}

// userStrategy reports whether p is a user strategy (--script,
// --function, --sequence), whose claims say what to expect but excuse no
// leak (see Expected).
func userStrategy(p strategies.Info) bool { return p.Source != "" }

// Expectations shared by several checks.

// passUnlessNoTTL is the expectation of a check that audits the TTLs of
// the keys it made: a strategy that sets none by design (Info.NoTTL)
// leaks.
func passUnlessNoTTL(p strategies.Info, _ Server) []Outcome {
	if p.NoTTL {
		return []Outcome{Leaks}
	}
	return []Outcome{Pass}
}

// passUnlessNotAtomic is the expectation of a race: an atomic strategy
// passes; a non-atomic one may or may not show it.
func passUnlessNotAtomic(p strategies.Info, _ Server) []Outcome {
	if p.Atomic {
		return []Outcome{Pass}
	}
	return []Outcome{Pass, Leaks}
}

// notStamped is the notApplicable of the checks that read or seed the
// counter at the decision's key: a stamped strategy's counter is at
// another key, named after the window.
func notStamped(r *row) string {
	if r.info.Stamp != "" {
		return "the counter is at a key stamped with its window, not at the decision's key"
	}
	if r.info.KeysBeside {
		return "the state is in keys named after the decision's key, not at the key"
	}
	return ""
}

// onlyFixedWindow is the notApplicable of the checks that look at a
// fixed-window counter.
func onlyFixedWindow(reason string) func(r *row) string {
	return func(r *row) string {
		if r.info.FixedWindow {
			return ""
		}
		return reason
	}
}
