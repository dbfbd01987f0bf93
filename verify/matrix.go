package verify

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/rlbench/rlbench/redisserver"
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
)

// Cell is one check's result for one strategy x client.
type Cell struct {
	// Check is the check's name, e.g. "healing".
	Check string `json:"check"`
	// Outcome is what the check saw.
	Outcome Outcome `json:"outcome"`
	// Note says, in one line, what was seen; empty for a plain pass.
	Note string `json:"note,omitempty"`
}

// Properties are the documented properties of a strategy that decide what
// each check should show. PropertiesOf reads them from strategies.Info.
type Properties struct {
	// Atomic: one decision's reads and writes, the expiry included, run as
	// one atomic unit.
	Atomic bool `json:"atomic"`
	// Heals: a fixed-window counter that lost its TTL gets one back.
	Heals bool `json:"heals"`
	// FixedWindow: at most Limit per key per window, the window never
	// extended by traffic.
	FixedWindow bool `json:"fixed_window"`
	// ChangesWrongType: a decision changes a key of another type at the
	// counter's name instead of leaving it as it was.
	ChangesWrongType bool `json:"changes_wrong_type"`
	// EVALSHA: the strategy's commands include EVALSHA, so it meets
	// NOSCRIPT when the script cache is empty.
	EVALSHA bool `json:"evalsha"`
	// MinRedis is the lowest Redis version that runs the strategy.
	MinRedis string `json:"min_redis"`
	// Commands lists the Redis commands one decision sends.
	Commands string `json:"commands"`
	// Clients lists the clients the strategy runs on; nil means all. On
	// any other, every cell is expected unsupported.
	Clients []string `json:"clients,omitempty"`
}

// PropertiesOf returns the documented properties of the strategy i.
func PropertiesOf(i strategies.Info) Properties {
	return Properties{
		Atomic:           i.Atomic,
		Heals:            i.Heals,
		FixedWindow:      i.FixedWindow,
		ChangesWrongType: i.ChangesWrongType,
		EVALSHA:          strings.Contains(i.Commands, "EVALSHA"),
		MinRedis:         i.MinRedis,
		Commands:         i.Commands,
		Clients:          i.Clients,
	}
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
}

// Row is one strategy x client: its documented properties and one Cell per
// check, in the order of Matrix.Checks.
type Row struct {
	// Strategy is the strategy's name, e.g. "lua".
	Strategy string `json:"strategy"`
	// Client is the client's name, e.g. "rueidis".
	Client string `json:"client"`
	// Properties are the strategy's documented properties, from which the
	// expected outcomes are derived.
	Properties Properties `json:"properties"`
	// Cells holds one result per check.
	Cells []Cell `json:"cells"`
}

// Label names the row in prose, e.g. "lua/rueidis".
func (r Row) Label() string { return r.Strategy + "/" + r.Client }

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

// Expected returns the outcomes that a strategy with properties p is
// documented to give on check against server s; any of them is as
// documented. Where the documentation leaves the result open (a
// non-atomic strategy may or may not show a given race), both pass and
// leaks are listed. An unknown check gives nil: nothing is as documented.
func Expected(check string, p Properties, s Server) []Outcome {
	return expected(check, p, s)
}

// Expected is the package's Expected for the row's strategy on the row's
// client: every cell of a client the strategy does not run on
// (Properties.Clients) is expected unsupported.
func (r Row) Expected(check string, s Server) []Outcome {
	if r.Properties.Clients != nil && !slices.Contains(r.Properties.Clients, r.Client) {
		return []Outcome{Unsupported}
	}
	return expected(check, r.Properties, s)
}

func expected(check string, p Properties, s Server) []Outcome {
	if !redisserver.VersionAtLeast(s.RedisVersion, p.MinRedis) {
		return []Outcome{Unsupported}
	}
	switch check {
	case CheckFirst, CheckRepeated, CheckExpiry:
		return []Outcome{Pass}
	case CheckWrongType:
		if p.ChangesWrongType {
			return []Outcome{Leaks}
		}
		return []Outcome{Pass}
	case CheckNotExtended:
		if !p.FixedWindow {
			return []Outcome{NotApplicable}
		}
		return []Outcome{Pass}
	case CheckConcurrent, CheckCrash, CheckRace:
		if p.Atomic {
			return []Outcome{Pass}
		}
		return []Outcome{Pass, Leaks}
	case CheckHealing:
		switch {
		case !p.FixedWindow:
			return []Outcome{NotApplicable}
		case p.Heals:
			return []Outcome{Pass}
		}
		return []Outcome{Leaks}
	case CheckNoscript:
		if !p.EVALSHA || !s.Managed {
			return []Outcome{NotApplicable}
		}
		return []Outcome{Pass}
	case CheckRestart:
		if !s.Managed {
			return []Outcome{NotApplicable}
		}
		return []Outcome{Pass}
	}
	return nil
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

// Unexpected returns every cell whose outcome is not in Expected for its
// row's properties, in row order, then check order.
func (m *Matrix) Unexpected() []Mismatch {
	var out []Mismatch
	for _, r := range m.Rows {
		for _, c := range r.Cells {
			want := r.Expected(c.Check, m.Server)
			if !slices.Contains(want, c.Outcome) {
				out = append(out, Mismatch{Row: r.Label(), Cell: c, Expected: want})
			}
		}
	}
	return out
}

// AsDocumented reports whether every cell is what its strategy documents.
func (m *Matrix) AsDocumented() bool { return len(m.Unexpected()) == 0 }

// Text returns a reporter for m as a table: a line naming the server, one
// row per strategy x client and one column per check, a cell marked with
// "*" when it is not what its strategy documents; then the notes of every
// cell that has one (every cell but a plain pass), identical notes of a
// check grouped; then a verdict line.
func Text(m *Matrix) results.Reporter {
	return func(w io.Writer) error {
		var buf bytes.Buffer
		writeText(&buf, m)
		if _, err := w.Write(buf.Bytes()); err != nil {
			return fmt.Errorf("verify: text report: write: %w", err)
		}
		return nil
	}
}

func writeText(buf *bytes.Buffer, m *Matrix) {
	fmt.Fprintf(buf, "server: %s\n", serverLine(m.Server))
	fmt.Fprintf(buf, "limit %d, window %ds, %d workers in \"concurrent\"\n", m.Limit, m.Window, m.Workers)

	tw := tabwriter.NewWriter(buf, 0, 0, 2, ' ', 0)
	fmt.Fprint(tw, "strategy\tclient")
	for _, c := range m.Checks {
		fmt.Fprint(tw, "\t"+c)
	}
	fmt.Fprintln(tw)
	for _, r := range m.Rows {
		fmt.Fprintf(tw, "%s\t%s", r.Strategy, r.Client)
		for _, c := range r.Cells {
			mark := ""
			if !slices.Contains(r.Expected(c.Check, m.Server), c.Outcome) {
				mark = "*"
			}
			fmt.Fprintf(tw, "\t%s%s", c.Outcome, mark)
		}
		fmt.Fprintln(tw)
	}
	tw.Flush() // writes to a bytes.Buffer cannot fail

	notes := groupNotes(m)
	if len(notes) > 0 {
		buf.WriteString("\nnotes:\n")
		for _, n := range notes {
			fmt.Fprintf(buf, "  %s\n", n)
		}
	}

	buf.WriteByte('\n')
	bad := m.Unexpected()
	if len(bad) == 0 {
		fmt.Fprintf(buf, "every cell is as documented (%d rows x %d checks).\n", len(m.Rows), len(m.Checks))
		return
	}
	labels := make([]string, len(bad))
	for i, b := range bad {
		labels[i] = b.Row + " " + b.Cell.Check
	}
	fmt.Fprintf(buf, "NOT AS DOCUMENTED (*): %d %s: %s.\n", len(bad), plural(len(bad), "cell", "cells"), strings.Join(labels, ", "))
}

// groupNotes returns the notes, one line per distinct (check, outcome,
// note, verdict) with the rows that share it, in column order. A row whose
// cells all share one outcome and note (an unsupported strategy) gets one
// line for every check, first.
func groupNotes(m *Matrix) []string {
	type group struct {
		check   string // "" for every check of uniform rows
		outcome Outcome
		note    string
		verdict string
		rows    []Row
	}
	var groups []*group
	add := func(from int, check string, r Row, c Cell) {
		verdict := verdictOf(c, r, m.Server)
		j := slices.IndexFunc(groups[from:], func(g *group) bool {
			return g.check == check && g.outcome == c.Outcome && g.note == c.Note && g.verdict == verdict
		})
		if j < 0 {
			groups = append(groups, &group{check: check, outcome: c.Outcome, note: c.Note, verdict: verdict})
			j = len(groups) - 1 - from
		}
		groups[from+j].rows = append(groups[from+j].rows, r)
	}

	uniform := func(r Row) bool {
		if len(r.Cells) < 2 || r.Cells[0].Outcome == Pass {
			return false
		}
		first := r.Cells[0]
		for _, c := range r.Cells[1:] {
			if c.Outcome != first.Outcome || c.Note != first.Note || verdictOf(c, r, m.Server) != verdictOf(first, r, m.Server) {
				return false
			}
		}
		return true
	}
	for _, r := range m.Rows {
		if uniform(r) {
			add(0, "", r, r.Cells[0])
		}
	}
	for _, check := range m.Checks {
		from := len(groups) // this check's groups start here
		for _, r := range m.Rows {
			i := slices.IndexFunc(r.Cells, func(c Cell) bool { return c.Check == check })
			if i < 0 || uniform(r) {
				continue
			}
			if c := r.Cells[i]; c.Outcome != Pass || c.Note != "" {
				add(from, check, r, c)
			}
		}
	}

	lines := make([]string, len(groups))
	for i, g := range groups {
		check := g.check
		if check == "" {
			check = "every check"
		}
		line := fmt.Sprintf("%s %s: %s%s", rowsLabel(m, g.rows), check, g.outcome, g.verdict)
		if g.note != "" {
			line += ": " + g.note
		}
		lines[i] = line
	}
	return lines
}

// verdictOf says, for a note, whether c is as its row documents: "" for a
// pass that is, " (as documented)" for another outcome that is, and
// " (NOT AS DOCUMENTED: expected ...)" otherwise.
func verdictOf(c Cell, r Row, s Server) string {
	want := r.Expected(c.Check, s)
	switch {
	case !slices.Contains(want, c.Outcome):
		return " (NOT AS DOCUMENTED: expected " + joinOutcomes(want) + ")"
	case c.Outcome != Pass:
		return " (as documented)"
	}
	return ""
}

// rowsLabel names a set of rows of m briefly: "every row", or a list in
// which a strategy stands alone when all of m's clients of it are in the
// set ("naive, lua/rueidis").
func rowsLabel(m *Matrix, rows []Row) string {
	if len(rows) == len(m.Rows) && len(rows) > 1 {
		return "every row"
	}
	count := func(in []Row, strategy string) int {
		n := 0
		for _, r := range in {
			if r.Strategy == strategy {
				n++
			}
		}
		return n
	}
	var labels []string
	for _, r := range rows {
		whole := count(rows, r.Strategy) == count(m.Rows, r.Strategy) && count(m.Rows, r.Strategy) > 1
		switch {
		case !whole:
			labels = append(labels, r.Label())
		case !slices.Contains(labels, r.Strategy):
			labels = append(labels, r.Strategy)
		}
	}
	return strings.Join(labels, ", ")
}

func joinOutcomes(outcomes []Outcome) string {
	if len(outcomes) == 0 {
		return "nothing (unknown check)"
	}
	s := make([]string, len(outcomes))
	for i, o := range outcomes {
		s[i] = string(o)
	}
	return strings.Join(s, " or ")
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// serverLine describes s, e.g. "redis 7.0.15 at 127.0.0.1:6379 (private
// server started by rlbench)".
func serverLine(s Server) string {
	line := strings.TrimSpace(s.Name + " " + s.Version)
	if line == "" {
		line = "unknown server"
	}
	if s.Addr != "" {
		line += " at " + s.Addr
	}
	if s.Managed {
		line += " (private server managed by rlbench)"
	}
	return line
}

// jsonMatrix is the JSON form of a Matrix: the matrix with, in each cell,
// the documented outcomes and whether the cell is one of them.
type jsonMatrix struct {
	*Matrix
	Rows         []jsonRow `json:"rows"`
	AsDocumented bool      `json:"as_documented"`
}

type jsonRow struct {
	Row
	Cells []jsonCell `json:"cells"`
}

type jsonCell struct {
	Cell
	Expected     []Outcome `json:"expected"`
	AsDocumented bool      `json:"as_documented"`
}

// JSON returns a reporter that writes m as indented JSON, followed by a
// newline. Each cell carries its documented outcomes ("expected") and
// whether it is one of them ("as_documented"); so does the matrix as a whole.
func JSON(m *Matrix) results.Reporter {
	return func(w io.Writer) error {
		out := jsonMatrix{Matrix: m, Rows: []jsonRow{}, AsDocumented: m.AsDocumented()}
		for _, r := range m.Rows {
			jr := jsonRow{Row: r, Cells: []jsonCell{}}
			for _, c := range r.Cells {
				want := r.Expected(c.Check, m.Server)
				if r.Properties.Clients != nil && !slices.Contains(r.Properties.Clients, r.Client) {
					want = []Outcome{Unsupported}
				}
				jr.Cells = append(jr.Cells, jsonCell{Cell: c, Expected: want, AsDocumented: slices.Contains(want, c.Outcome)})
			}
			out.Rows = append(out.Rows, jr)
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		if err := enc.Encode(out); err != nil {
			return fmt.Errorf("verify: json report: encode: %w", err)
		}
		return nil
	}
}
