package compare

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/rlbench/rlbench/results"
)

// Text returns a reporter for the comparison as aligned tables: a legend of
// the files, then one table per metric (throughput, p50, p99, p99.9) with a
// row per cell, a column per file, the ratios against the first file and,
// when a cell ran more than once, the spread of its runs; then the immortal
// keys and the over-admission per cell and file.
func Text(c *Comparison) results.Reporter {
	return func(w io.Writer) error {
		var buf bytes.Buffer
		writeText(&buf, c)
		if _, err := w.Write(buf.Bytes()); err != nil {
			return fmt.Errorf("compare: write: %w", err)
		}
		return nil
	}
}

// missing stands for a cell that did not run in a file, or a figure that
// does not apply.
const missing = "-"

// writeText writes the legend, the metric tables, the count tables and
// the notes.
func writeText(buf *bytes.Buffer, c *Comparison) {
	tw := tabwriter.NewWriter(buf, 0, 0, 2, ' ', 0)
	for _, f := range c.Files {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", f.Name, f.Path, Describe(f))
	}
	tw.Flush()
	writeSettings(buf, c, "settings that differ between the files (runs with different settings are separate rows, never pooled)")
	writeMetrics(buf, c)
	writeCounts(buf, c)
	writeNotes(buf, c)
}

// writeSettings writes the settings that differ between the files under
// heading, a row per setting and a column per file; nothing when none
// differs.
func writeSettings(buf *bytes.Buffer, c *Comparison, heading string) {
	if len(c.Settings) == 0 {
		return
	}
	fmt.Fprintf(buf, "\n%s\n", heading)
	tw := tabwriter.NewWriter(buf, 0, 0, 2, ' ', 0)
	cols := []string{"setting"}
	for _, f := range c.Files {
		cols = append(cols, f.Name)
	}
	fmt.Fprintln(tw, strings.Join(cols, "\t"))
	for _, name := range c.Settings {
		row := []string{name}
		for fi := range c.Files {
			row = append(row, c.SettingsValue(name, fi))
		}
		fmt.Fprintln(tw, strings.Join(row, "\t"))
	}
	tw.Flush()
}

// cellColumns are the headings of the columns that name a cell: its
// target, strategy and client, and its settings when the files differ in
// some.
func cellColumns(c *Comparison) []string {
	cols := []string{"target", "strategy", "client"}
	if len(c.Settings) > 0 {
		cols = append(cols, "settings")
	}
	return cols
}

// cellRow is the start of a cell's row, under cellColumns.
func cellRow(c *Comparison, cell *Cell) []string {
	row := []string{cell.Key.Target, cell.Key.Strategy, cell.Key.Client}
	if len(c.Settings) > 0 {
		row = append(row, orMissing(cell.Key.Settings, cell.Key.Settings != ""))
	}
	return row
}

// writeMetrics writes one table per metric: a row per cell, a column per
// file, the ratios and, when a cell ran more than once, the spread.
func writeMetrics(buf *bytes.Buffer, c *Comparison) {
	repeated := c.Repeated()
	for _, m := range Metrics {
		if m.Optional && !c.Has(m) {
			continue
		}
		fmt.Fprintf(buf, "\n%s\n", m.Name)
		tw := tabwriter.NewWriter(buf, 0, 0, 2, ' ', 0)
		cols := cellColumns(c)
		for _, f := range c.Files {
			cols = append(cols, f.Name)
		}
		for _, f := range c.Files[1:] {
			cols = append(cols, f.Name+"/"+c.Files[0].Name)
		}
		if repeated {
			cols = append(cols, "runs", "min", "median", "max", "cv")
		}
		fmt.Fprintln(tw, strings.Join(cols, "\t"))
		for _, cell := range c.Cells {
			row := cellRow(c, cell)
			for fi := range c.Files {
				v, ok := cell.Value(m, fi)
				row = append(row, orMissing(m.Format(v), ok))
			}
			for fi := 1; fi < len(c.Files); fi++ {
				r, ok := cell.Ratio(m, fi)
				row = append(row, orMissing(FormatRatio(r), ok))
			}
			if repeated {
				s := cell.Spread(m)
				if s.N < 2 {
					row = append(row, strconv.Itoa(s.N), missing, missing, missing, missing)
				} else {
					row = append(row, strconv.Itoa(s.N), m.Format(s.Min), m.Format(s.Median), m.Format(s.Max), FormatCV(s.CV))
				}
			}
			fmt.Fprintln(tw, strings.Join(row, "\t"))
		}
		tw.Flush()
	}
}

// writeCounts writes the immortal keys and the over-admission per cell and
// file.
func writeCounts(buf *bytes.Buffer, c *Comparison) {
	counts := []struct {
		title string
		value func(*Cell, int) (int64, bool)
	}{
		{"immortal keys (counters with no TTL; the most of any run in the file)", (*Cell).Immortal},
		{"over-admitted (requests beyond the limit in one window of one key; - when not a fixed window)", (*Cell).OverAdmitted},
	}
	for _, count := range counts {
		fmt.Fprintf(buf, "\n%s\n", count.title)
		tw := tabwriter.NewWriter(buf, 0, 0, 2, ' ', 0)
		cols := cellColumns(c)
		for _, f := range c.Files {
			cols = append(cols, f.Name)
		}
		fmt.Fprintln(tw, strings.Join(cols, "\t"))
		for _, cell := range c.Cells {
			row := cellRow(c, cell)
			for fi := range c.Files {
				n, ok := count.value(cell, fi)
				row = append(row, orMissing(strconv.FormatInt(n, 10), ok))
			}
			fmt.Fprintln(tw, strings.Join(row, "\t"))
		}
		tw.Flush()
	}
}

// writeNotes writes what the tables cannot say.
func writeNotes(buf *bytes.Buffer, c *Comparison) {
	repeated := c.Repeated()
	var notes []string
	if len(c.Files) > 1 && !shared(c) {
		cell := "a target, a strategy and a client"
		if len(c.Settings) > 0 {
			cell = "a target, a strategy, a client and the settings"
		}
		notes = append(notes, "no cell ran in more than one file, so there is no ratio: a cell is "+cell+", and the files share none")
		if t := fileTargets(c); t != "" {
			notes = append(notes, "the files' targets: "+t+"; runs on different targets line up when given the same label (--addr LABEL=host:port, --redis-server LABEL=PATH)")
		}
	}
	if len(c.Settings) > 0 {
		notes = append(notes, "the files' settings differ ("+strings.Join(c.Settings, ", ")+"): a cell is a target, a strategy, a client and the settings, so runs with different settings are separate rows, with no ratio or spread across them")
	}
	if repeated {
		notes = append(notes, "spread: over every run of the cell in every file; cv is the standard deviation over the mean, and a ratio inside that noise is no difference")
	}
	for _, cell := range c.Cells {
		for _, s := range cell.Samples {
			if s.Run.Incomplete {
				notes = append(notes, fmt.Sprintf("%s in %s did not finish (complete: false): its figures cover part of its load, and so do its ratios and spread", cell.Key, c.Files[s.File].Name))
			}
		}
	}
	for _, cell := range c.Cells {
		if versions := serverVersions(c, cell); len(versions) > 1 {
			notes = append(notes, fmt.Sprintf("%s ran on different servers: %s", cell.Key, strings.Join(versions, ", ")))
		}
	}
	if len(notes) > 0 {
		buf.WriteByte('\n')
		for _, n := range notes {
			fmt.Fprintf(buf, "note: %s\n", n)
		}
	}
}

// Describe says in one line what a file holds: its server (or targets),
// when it started and how many runs it has.
func Describe(f *File) string {
	var targets []string
	for _, i := range f.targetRuns() {
		key, srv := f.Target(i), f.Server(i).Short()
		if key == serverKey(f.Server(i)) {
			targets = append(targets, srv)
		} else {
			targets = append(targets, key+" = "+srv)
		}
	}
	if len(targets) == 0 {
		targets = append(targets, f.Report.Server.Short())
	}
	runs := "runs"
	if len(f.Report.Runs) == 1 {
		runs = "run"
	}
	started := "start unknown"
	if !f.Report.Started.IsZero() {
		started = "started " + f.Report.Started.UTC().Format("2006-01-02 15:04:05 UTC")
	}
	line := fmt.Sprintf("%s, %s, %d %s", strings.Join(targets, "; "), started, len(f.Report.Runs), runs)
	if f.Report.Interrupted {
		line += ", INTERRUPTED"
	}
	if f.Report.StoppedBy != "" {
		line += ", STOPPED BY A FAILURE"
	}
	if n := f.Partial(); n == 1 {
		line += ", 1 run did not finish"
	} else if n > 1 {
		line += fmt.Sprintf(", %d runs did not finish", n)
	}
	return line
}

// targetRuns returns the index of the first run of each of the file's
// targets, in run order.
func (f *File) targetRuns() []int {
	var first []int
	seen := map[string]bool{}
	for i := range f.Report.Runs {
		if t := f.Target(i); !seen[t] {
			seen[t] = true
			first = append(first, i)
		}
	}
	return first
}

// Partial is the number of the file's runs that did not finish
// ("complete": false).
func (f *File) Partial() int {
	n := 0
	for _, r := range f.Report.Runs {
		if r.Incomplete {
			n++
		}
	}
	return n
}

// fileTargets lists each file's targets, "A: t1, t2; B: t3", or "" when
// every file has the same ones (the files differ in strategies or clients).
func fileTargets(c *Comparison) string {
	var parts []string
	same := true
	var first []string
	for fi, f := range c.Files {
		var targets []string
		for _, i := range f.targetRuns() {
			targets = append(targets, f.Target(i))
		}
		if fi == 0 {
			first = targets
		} else if !slices.Equal(targets, first) {
			same = false
		}
		parts = append(parts, f.Name+": "+strings.Join(targets, ", "))
	}
	if same {
		return ""
	}
	return strings.Join(parts, "; ")
}

// shared reports whether some cell ran in two files or more.
func shared(c *Comparison) bool {
	for _, cell := range c.Cells {
		for _, s := range cell.Samples[1:] {
			if s.File != cell.Samples[0].File {
				return true
			}
		}
	}
	return false
}

// serverVersions lists the distinct servers of a cell's runs, with the
// files they ran in, e.g. "redis 7.0.15 (A, B)".
func serverVersions(c *Comparison, cell *Cell) []string {
	var names []string
	in := map[string][]string{}
	for _, s := range cell.Samples {
		name := s.Server.Software()
		if _, ok := in[name]; !ok {
			names = append(names, name)
		}
		file := c.Files[s.File].Name
		if l := in[name]; len(l) == 0 || l[len(l)-1] != file {
			in[name] = append(l, file)
		}
	}
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = n + " (" + strings.Join(in[n], ", ") + ")"
	}
	return out
}

func orMissing(s string, ok bool) string {
	if !ok {
		return missing
	}
	return s
}

// formatCount formats a rate as a whole number: "41203".
func formatCount(v float64) string { return strconv.FormatFloat(v, 'f', 0, 64) }

// formatCPU shows a CPU time per decision, in microseconds: "1.92µs".
func formatCPU(v float64) string { return strconv.FormatFloat(v, 'f', 2, 64) + "µs" }

// FormatRatio formats a ratio: "0.97x", "12.4x", "153x".
func FormatRatio(r float64) string {
	switch {
	case r < 9.995:
		return strconv.FormatFloat(r, 'f', 2, 64) + "x"
	case r < 99.95:
		return strconv.FormatFloat(r, 'f', 1, 64) + "x"
	}
	return strconv.FormatFloat(r, 'f', 0, 64) + "x"
}

// FormatCV formats a coefficient of variation as a percentage: "1.9%",
// "0.07%" under 1%, or "-" for NaN.
func FormatCV(cv float64) string {
	if math.IsNaN(cv) {
		return missing
	}
	if cv*100 < 0.995 {
		return strconv.FormatFloat(cv*100, 'f', 2, 64) + "%"
	}
	return strconv.FormatFloat(cv*100, 'f', 1, 64) + "%"
}
