package verify

import (
	"slices"
	"time"

	"github.com/rlbench/rlbench/results"
	"github.com/rlbench/rlbench/strategies"
)

// Outcome is what one check showed for one strategy x client.
type Outcome string

// The outcomes a Cell can hold.
const (
	// Pass: the strategy did what the check asks.
	Pass Outcome = "pass"
	// Fail: the strategy did something the check does not allow; the
	// cell's note says what was seen.
	Fail Outcome = "FAIL"
	// Leaks: the strategy shows the bug the check looks for (an immortal
	// key, more admitted than the limit). Expected for the strategies
	// documented as non-atomic or not healing.
	Leaks Outcome = "leaks"
	// Unsupported: the server's version cannot run the strategy.
	Unsupported Outcome = "unsupported"
	// NotApplicable: the check does not apply to the strategy or the target.
	NotApplicable Outcome = "n/a"
	// NotRun: the check did not run to its end: Run's context ended
	// before it started or while it ran. It is neither a failure nor as
	// documented; the cell's note says which.
	NotRun Outcome = "not-run"
)

// Cell is one check's result for one strategy x client.
type Cell struct {
	// Check is the check's name, e.g. "healing".
	Check string `json:"check"`
	// Outcome is what the check saw.
	Outcome Outcome `json:"outcome"`
	// Note says, in one line, what was seen; empty for a plain pass.
	Note string `json:"note,omitempty"`
	// TooLate marks a FAIL whose every try read too late to judge (see
	// late): the machine was too slow for the window, and the check could
	// not judge the strategy. It fails the matrix (AsDocumented), as a
	// measurement that could not judge, not as the strategy's fault
	// (Unjudged, Wrong).
	TooLate bool `json:"too_late,omitempty"`
	// late marks a FAIL that a reading too late to judge gave (see
	// trial.lateAfter, row.freshCounter): the check runs again on fresh
	// keys (runCheck).
	late bool
	// noKey marks the FAIL of row.ttlsSet that found no key at all.
	noKey bool
}

// Server describes the server a Matrix was made against.
type Server struct {
	// Addr is the server's address, host:port.
	Addr string `json:"addr"`
	// Name is "redis" or "valkey".
	Name string `json:"name"`
	// Version is the server's own version, e.g. "7.0.15".
	Version string `json:"version"`
	// RedisVersion is the Redis version the server reports, which strategies'
	// MinRedis are compared with (valkey reports the one it is compatible with).
	RedisVersion string `json:"redis_version"`
	// Managed is true for a private server that rlbench controls, which the
	// server-wide checks need.
	Managed bool `json:"managed"`
	// Cluster is true for a Redis Cluster, whose clients learn the nodes'
	// addresses from the nodes (past a proxy in front of one of them).
	Cluster bool `json:"cluster,omitempty"`
	// Sentinel is true for a private Sentinel set-up whose nodes the
	// sentinels and replicas reach through relays, which the split-brain
	// check needs.
	Sentinel bool `json:"sentinel,omitempty"`
}

// Row is one strategy x client: the strategy's Info and one Cell per
// check, in the order of Matrix.Checks.
type Row struct {
	// Strategy is the strategy's name, e.g. "lua".
	Strategy string `json:"strategy"`
	// Client is the client's name, e.g. "rueidis".
	Client string `json:"client"`
	// Info documents the strategy's properties, from which the expected
	// outcomes are derived; the JSON report writes them as "properties".
	Info strategies.Info `json:"-"`
	// Cells holds one result per check.
	Cells []Cell `json:"cells"`
	// Libraries are the libraries of Redis Functions the row's clients
	// loaded (or found loaded), and whether rlbench deleted them; absent
	// for a strategy without one.
	Libraries []results.Library `json:"function_libraries,omitempty"`
}

// Label names the row in prose, e.g. "lua/rueidis".
func (r Row) Label() string { return r.Strategy + "/" + r.Client }

// Expected returns the outcomes documented for the row on check against
// server s: ExpectedOn for its client and strategy, or unsupported on a
// client that cannot run the strategy.
func (r Row) Expected(check string, s Server) []Outcome {
	if !r.Info.Supports(r.Client) {
		return []Outcome{Unsupported}
	}
	return ExpectedOn(check, r.Client, r.Info, s)
}

// Matrix is the result of Run: one Row per strategy x client.
type Matrix struct {
	// Tool is "rlbench verify".
	Tool string `json:"tool"`
	// Started is when Run started, in UTC.
	Started time.Time `json:"started"`
	// ElapsedS is Run's wall time, in seconds.
	ElapsedS float64 `json:"elapsed_s"`
	// Server is the server the checks ran against.
	Server Server `json:"server"`
	// Prefix starts every key the checks wrote.
	Prefix string `json:"prefix"`
	// Limit is the requests allowed per key per window in every check.
	Limit int64 `json:"limit"`
	// Window is the window of the checks that wait for one to end, in seconds.
	Window int64 `json:"window_s"`
	// Workers is the number of workers of the "concurrent" check.
	Workers int `json:"workers"`
	// Checks names the columns, in order.
	Checks []string `json:"checks"`
	// Rows holds one row per strategy x client, in the order of the
	// strategies and then the clients.
	Rows []Row `json:"rows"`
}

// Mismatch is a cell whose outcome is not one its strategy documents.
type Mismatch struct {
	// Row is the row's label, e.g. "lua/go-redis".
	Row string
	// Cell is the cell as seen.
	Cell Cell
	// Expected lists the documented outcomes.
	Expected []Outcome
}

// Unexpected returns every cell that ran and whose outcome is not in its
// row's Expected, in row order, then check order. A cell that did not run
// (NotRun) is not among them: it is not a failure.
func (m *Matrix) Unexpected() []Mismatch {
	var out []Mismatch
	for _, r := range m.Rows {
		for _, c := range r.Cells {
			want := r.Expected(c.Check, m.Server)
			if c.Outcome != NotRun && !slices.Contains(want, c.Outcome) {
				out = append(out, Mismatch{Row: r.Label(), Cell: c, Expected: want})
			}
		}
	}
	return out
}

// Unjudged returns the cells of Unexpected that could not judge
// (Cell.TooLate): every try of theirs read too late.
func (m *Matrix) Unjudged() []Mismatch {
	return slices.DeleteFunc(m.Unexpected(), func(u Mismatch) bool { return !u.Cell.TooLate })
}

// Wrong returns the cells of Unexpected that a reading could judge: a
// strategy not as documented.
func (m *Matrix) Wrong() []Mismatch {
	return slices.DeleteFunc(m.Unexpected(), func(u Mismatch) bool { return u.Cell.TooLate })
}

// NotRunCells returns the number of cells that did not run (NotRun): 0
// for a complete matrix, more when Run was interrupted.
func (m *Matrix) NotRunCells() int {
	n := 0
	for _, r := range m.Rows {
		for _, c := range r.Cells {
			if c.Outcome == NotRun {
				n++
			}
		}
	}
	return n
}

// Complete reports whether every cell ran.
func (m *Matrix) Complete() bool { return m.NotRunCells() == 0 }

// AsDocumented reports whether every cell ran and is what its strategy
// documents. An interrupted matrix is not as documented, though none of its
// cells may be Unexpected.
func (m *Matrix) AsDocumented() bool { return m.Complete() && len(m.Unexpected()) == 0 }

// cellCount is the number of cells of m.
func (m *Matrix) cellCount() int {
	n := 0
	for _, r := range m.Rows {
		n += len(r.Cells)
	}
	return n
}
