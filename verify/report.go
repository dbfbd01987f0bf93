package verify

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/rlbench/rlbench/results"
	"github.com/rlbench/rlbench/strategies"
)

// Text returns a reporter for m as a table: a line naming the server, one
// row per strategy x client and one column per check, a cell marked with
// "*" when it ran and is not what its strategy documents; then the notes of
// every cell that has one (every cell but a plain pass), identical notes of
// a check grouped; then a verdict line, and for an interrupted matrix a
// line counting the cells that did not run.
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
			if c.Outcome != NotRun && !slices.Contains(r.Expected(c.Check, m.Server), c.Outcome) {
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
	writeVerdict(buf, m)
}

// writeVerdict writes the last line: every cell as documented, or the
// cells that are not, with their outcomes; either way, the cells that
// leak as documented, so that "as documented" is never the only word on a
// leak; and for an interrupted matrix, how many cells did not run, which
// claims nothing about them.
func writeVerdict(buf *bytes.Buffer, m *Matrix) {
	bad := m.Unexpected()
	notRun := m.NotRunCells()
	leaks := ""
	if l := documentedLeaks(m); l != "" {
		leaks = ", but " + l + ", as documented"
	}
	switch {
	case len(bad) == 0 && notRun == 0:
		fmt.Fprintf(buf, "every cell is as documented (%d rows x %d checks)%s.\n", len(m.Rows), len(m.Checks), leaks)
		return
	case len(bad) == 0:
		fmt.Fprintf(buf, "INTERRUPTED: %d of %d %s not run; every cell that ran is as documented%s.\n",
			notRun, m.cellCount(), plural(m.cellCount(), "cell", "cells"), leaks)
		return
	}
	if wrong := m.Wrong(); len(wrong) > 0 {
		fmt.Fprintf(buf, "NOT AS DOCUMENTED (*): %d %s: %s", len(wrong), plural(len(wrong), "cell", "cells"), mismatchLabels(wrong))
		if unjudged := m.Unjudged(); len(unjudged) > 0 {
			fmt.Fprintf(buf, "; COULD NOT JUDGE: %s", mismatchLabels(unjudged))
		}
	} else {
		fmt.Fprintf(buf, "COULD NOT JUDGE (*): %d %s: %s: every try read too late for the %ds window (run again on a quieter machine)",
			len(bad), plural(len(bad), "cell", "cells"), mismatchLabels(bad), m.Window)
	}
	if leaks != "" {
		buf.WriteString("; " + strings.TrimPrefix(leaks, ", but "))
	}
	buf.WriteString(".\n")
	if notRun > 0 {
		fmt.Fprintf(buf, "INTERRUPTED: %d of %d %s not run.\n", notRun, m.cellCount(), plural(m.cellCount(), "cell", "cells"))
	}
}

// mismatchLabels names the cells of ms with their outcomes:
// "gcra/redigo first (FAIL), ...".
func mismatchLabels(ms []Mismatch) string {
	labels := make([]string, len(ms))
	for i, b := range ms {
		labels[i] = b.Row + " " + b.Cell.Check + " (" + string(b.Cell.Outcome) + ")"
	}
	return strings.Join(labels, ", ")
}

// documentedLeaks names the cells that leak as their rows document, the
// rows that leak under the same checks together: "rails-cache leaks
// under crash and race; lua/go-redis leaks under retry"; "" for none.
// When that is longer than maxLeakText, it counts the cells and names
// their strategies, the notes saying under which checks.
func documentedLeaks(m *Matrix) string {
	type group struct {
		checks []string
		rows   []Row
	}
	var groups []*group
	var strategies []string
	cells := 0
	for _, r := range m.Rows {
		var checks []string
		for _, c := range r.Cells {
			if c.Outcome == Leaks && slices.Contains(r.Expected(c.Check, m.Server), Leaks) {
				checks = append(checks, c.Check)
			}
		}
		if len(checks) == 0 {
			continue
		}
		cells += len(checks)
		if !slices.Contains(strategies, r.Strategy) {
			strategies = append(strategies, r.Strategy)
		}
		i := slices.IndexFunc(groups, func(g *group) bool { return slices.Equal(g.checks, checks) })
		if i < 0 {
			groups = append(groups, &group{checks: checks})
			i = len(groups) - 1
		}
		groups[i].rows = append(groups[i].rows, r)
	}
	parts := make([]string, len(groups))
	for i, g := range groups {
		parts[i] = rowsLabel(m, g.rows) + " leaks under " + joinNames(g.checks)
	}
	if text := strings.Join(parts, "; "); len(text) <= maxLeakText {
		return text
	}
	return fmt.Sprintf("%d cells of %d strategies leak (the notes say under which checks): %s",
		cells, len(strategies), strings.Join(strategies, ", "))
}

// maxLeakText is the longest list of leaking cells the verdict line
// spells out; a longer one is counted, by strategy.
const maxLeakText = 200

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
	case c.Outcome == NotRun:
		return ""
	case !slices.Contains(want, c.Outcome) && c.TooLate:
		return " (COULD NOT JUDGE: expected " + joinOutcomes(want) + ")"
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
	Rows []jsonRow `json:"rows"`
	// AsDocumented is null when no cell that ran is unexpected but some
	// did not run: nothing is claimed either way.
	AsDocumented *bool `json:"as_documented"`
	// Interrupted is true when some cells did not run; absent otherwise.
	Interrupted bool `json:"interrupted,omitempty"`
}

// jsonRow is the JSON form of a Row: its strategy's Info as the
// "properties" that decide what each check should show.
type jsonRow struct {
	Strategy   string            `json:"strategy"`
	Client     string            `json:"client"`
	Properties jsonProperties    `json:"properties"`
	Cells      []jsonCell        `json:"cells"`
	Libraries  []results.Library `json:"function_libraries,omitempty"`
}

// jsonProperties are the fields of strategies.Info that a verify report
// writes, under the names it always has.
type jsonProperties struct {
	Atomic           bool     `json:"atomic"`
	Heals            bool     `json:"heals"`
	FixedWindow      bool     `json:"fixed_window"`
	ChangesWrongType bool     `json:"changes_wrong_type"`
	EVALSHA          bool     `json:"evalsha"`
	MinRedis         string   `json:"min_redis"`
	Commands         string   `json:"commands"`
	Clients          []string `json:"clients,omitempty"`
	Layout           string   `json:"layout,omitempty"`
	Stamp            string   `json:"stamp,omitempty"`
	TTLSlack         int64    `json:"ttl_slack,omitempty"`
	TTLWindows       int64    `json:"ttl_windows,omitempty"`
	NoTTL            bool     `json:"no_ttl,omitempty"`
	KeysBeside       bool     `json:"keys_beside,omitempty"`
	// User: a user strategy (Info.Source set), whose claims say what to
	// expect but excuse no leak (see Expected).
	User bool `json:"user,omitempty"`
}

// propertiesOf is the JSON form of i.
func propertiesOf(i strategies.Info) jsonProperties {
	return jsonProperties{
		Atomic: i.Atomic, Heals: i.Heals, FixedWindow: i.FixedWindow, ChangesWrongType: i.ChangesWrongType,
		EVALSHA: i.EVALSHA, MinRedis: i.MinRedis, Commands: i.Commands, Clients: i.Clients,
		Layout: i.Layout, Stamp: i.Stamp, TTLSlack: i.TTLSlack, TTLWindows: i.TTLWindows,
		NoTTL: i.NoTTL, KeysBeside: i.KeysBeside, User: userStrategy(i),
	}
}

type jsonCell struct {
	Cell
	Expected []Outcome `json:"expected"`
	// AsDocumented is null for a cell that did not run.
	AsDocumented *bool `json:"as_documented"`
}

// JSON returns a reporter that writes m as indented JSON, followed by a
// newline. Each cell carries its documented outcomes ("expected") and
// whether it is one of them ("as_documented", null for a cell that did not
// run); so does the matrix as a whole (null when no cell that ran is
// unexpected but some did not run, with "interrupted": true).
func JSON(m *Matrix) results.Reporter {
	return func(w io.Writer) error {
		out := jsonMatrix{Matrix: m, Rows: []jsonRow{}, Interrupted: !m.Complete()}
		switch {
		case len(m.Unexpected()) > 0:
			out.AsDocumented = new(false)
		case m.Complete():
			out.AsDocumented = new(true)
		}
		for _, r := range m.Rows {
			jr := jsonRow{Strategy: r.Strategy, Client: r.Client, Properties: propertiesOf(r.Info), Cells: []jsonCell{}, Libraries: r.Libraries}
			for _, c := range r.Cells {
				cell := jsonCell{Cell: c, Expected: r.Expected(c.Check, m.Server)}
				if c.Outcome != NotRun {
					cell.AsDocumented = new(slices.Contains(cell.Expected, c.Outcome))
				}
				jr.Cells = append(jr.Cells, cell)
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
