package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rlbench/rlbench"
	"github.com/rlbench/rlbench/compare"
	"github.com/rlbench/rlbench/faults"
	"github.com/rlbench/rlbench/internal/redistest"
	"github.com/rlbench/rlbench/results"
	"github.com/rlbench/rlbench/workload"
)

// realReports runs the same short load n times at once against one private
// server (naive and lua on go-redis, 4 workers for 1.2 s, a 1 s window, a
// kill-clients fault at 0.6 s), writes each report with results.JSON as
// run1.json, run2.json, ... in a new directory, and returns their paths.
func realReports(t *testing.T, n int) []string {
	t.Helper()
	srv := redistest.Start(t)
	dir := t.TempDir()
	kill, err := faults.Parse("kill-clients@600ms")
	if err != nil {
		t.Fatal(err)
	}
	paths := make([]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		paths[i] = filepath.Join(dir, "run"+strconv.Itoa(i+1)+".json")
		wg.Go(func() {
			rep, err := rlbench.Run(t.Context(), rlbench.Config{
				Strategies: []string{"naive", "lua"},
				Clients:    []string{"go-redis"},
				Limit:      1_000_000,
				Window:     1,
				Workload:   workload.Config{Workers: 4, Keys: 4, Duration: 1200 * time.Millisecond, Prefix: redistest.Prefix(t) + strconv.Itoa(i) + ":"},
				Targets:    []rlbench.TargetSpec{{Addr: srv.Addr()}},
				Faults:     []faults.Fault{kill},
			}, rlbench.Options{})
			if err != nil {
				errs[i] = fmt.Errorf("rlbench.Run %d: %w", i+1, err)
				return
			}
			errs[i] = writeJSON(paths[i], rep)
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	return paths
}

// writeJSON writes rep to path with results.JSON, as --json does.
func writeJSON(path string, rep *results.Report) error {
	var buf bytes.Buffer
	if err := results.JSON(rep)(&buf); err != nil {
		return err
	}
	return os.WriteFile(path, buf.Bytes(), 0o644)
}

// TestCompareRealRuns compares two files written by real runs of the same
// command: every cell has a row in every table, with each file's figures,
// the ratio of the second to the first and the spread of the two runs.
func TestCompareRealRuns(t *testing.T) {
	t.Parallel()
	paths := realReports(t, 2)
	res := mustRun(t, exitOK, append([]string{"compare"}, paths...)...)
	if res.stderr != "" {
		t.Errorf("rlbench compare wrote to stderr: %s", res.stderr)
	}
	files, err := compare.ReadFiles(paths)
	if err != nil {
		t.Fatal(err)
	}
	a, b := files[0].Report, files[1].Report
	if len(a.Runs) != 2 || len(b.Runs) != 2 {
		t.Fatalf("the real runs gave %d and %d cells; want 2 and 2", len(a.Runs), len(b.Runs))
	}
	for _, p := range paths {
		if !strings.Contains(res.stdout, p) {
			t.Errorf("rlbench compare does not name %s:\n%s", p, res.stdout)
		}
	}
	sections := sectionsOf(res.stdout)
	for i := range a.Runs {
		ra, rb := &a.Runs[i], &b.Runs[i]
		cell := files[0].Target(i) + " " + ra.Strategy + " " + ra.Client
		if got := files[1].Target(i) + " " + rb.Strategy + " " + rb.Client; got != cell {
			t.Fatalf("run %d is %q in A and %q in B; want the same cell", i, cell, got)
		}
		spread := compare.SpreadOf([]float64{ra.ThroughputPerS, rb.ThroughputPerS})
		checkRow(t, sections, "throughput", cell, []string{
			strconv.FormatFloat(ra.ThroughputPerS, 'f', 0, 64), strconv.FormatFloat(rb.ThroughputPerS, 'f', 0, 64),
			compare.FormatRatio(rb.ThroughputPerS / ra.ThroughputPerS), "2",
			strconv.FormatFloat(spread.Min, 'f', 0, 64), strconv.FormatFloat(spread.Median, 'f', 0, 64),
			strconv.FormatFloat(spread.Max, 'f', 0, 64), compare.FormatCV(spread.CV),
		})
		checkRow(t, sections, "p99 latency", cell, []string{
			results.FormatUS(ra.LatencyUS.P99), results.FormatUS(rb.LatencyUS.P99), compare.FormatRatio(rb.LatencyUS.P99 / ra.LatencyUS.P99),
		})
		if ra.Saturation == nil || rb.Saturation == nil {
			t.Fatalf("%s: saturation %v and %v; want both measured", cell, ra.Saturation, rb.Saturation)
		}
		cpu := func(v float64) string { return strconv.FormatFloat(v, 'f', 2, 64) + "µs" }
		checkRow(t, sections, "rlbench CPU per decision", cell, []string{
			cpu(ra.Saturation.ClientCPUPerDecisionUS), cpu(rb.Saturation.ClientCPUPerDecisionUS),
		})
		checkRow(t, sections, "server CPU per decision", cell, []string{
			cpu(ra.Saturation.ServerCPUPerDecisionUS), cpu(rb.Saturation.ServerCPUPerDecisionUS),
		})
		checkRow(t, sections, "immortal keys", cell, []string{
			strconv.FormatInt(ra.Audit.Immortal, 10), strconv.FormatInt(rb.Audit.Immortal, 10),
		})
		checkRow(t, sections, "over-admitted", cell, []string{
			strconv.FormatInt(*ra.OverAdmitted, 10), strconv.FormatInt(*rb.OverAdmitted, 10),
		})
	}
	for _, s := range []string{"p50 latency", "p99.9 latency"} {
		if _, ok := sections[s]; !ok {
			t.Errorf("rlbench compare has no %q table:\n%s", s, res.stdout)
		}
	}
}

// sectionsOf splits compare's output into its tables, by the first words
// of their title (up to " (" if any), each a list of rows with the fields
// joined by one space.
func sectionsOf(out string) map[string][]string {
	sections := map[string][]string{}
	for _, block := range strings.Split(out, "\n\n") {
		lines := strings.Split(strings.TrimSpace(block), "\n")
		if len(lines) < 2 {
			continue
		}
		title, _, _ := strings.Cut(lines[0], " (")
		for _, l := range lines[2:] { // after the title and the header
			sections[title] = append(sections[title], strings.Join(strings.Fields(l), " "))
		}
	}
	return sections
}

// checkRow fails t unless the section has a row for cell whose next fields
// are want.
func checkRow(t *testing.T, sections map[string][]string, section, cell string, want []string) {
	t.Helper()
	rows, ok := sections[section]
	if !ok {
		t.Errorf("rlbench compare has no %q table", section)
		return
	}
	wantRow := cell + " " + strings.Join(want, " ")
	for _, r := range rows {
		if strings.HasPrefix(r, cell+" ") {
			if !strings.HasPrefix(r, wantRow) {
				t.Errorf("rlbench compare, %s table, row = %q; want it to start %q", section, r, wantRow)
			}
			return
		}
	}
	t.Errorf("rlbench compare, %s table: no row for %q in %q", section, cell, rows)
}

// TestCompareBadInput checks the exit status and message for input that is
// not a list of rlbench reports.
func TestCompareBadInput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	good := filepath.Join(dir, "good.json")
	if err := writeJSON(good, &results.Report{Tool: "rlbench", Runs: []results.Run{{Cell: results.Cell{Strategy: "lua", Client: "go-redis"}}}}); err != nil {
		t.Fatal(err)
	}
	notReport := filepath.Join(dir, "attack.json")
	if err := os.WriteFile(notReport, []byte(`{"latencies": {}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing.json")
	tests := []struct {
		name string
		args []string
		want int
		says string
	}{
		{name: "no file", args: nil, want: exitUsage, says: "no report files given"},
		{name: "missing file", args: []string{good, missing}, want: exitUsage, says: missing},
		{name: "not a report", args: []string{notReport, good}, want: exitUsage, says: notReport + `: read report: not an rlbench report: no "tool" field`},
		{name: "unknown flag", args: []string{"--bogus", good}, want: exitUsage, says: "unknown flag: --bogus"},
		{name: "help", args: []string{"--help"}, want: exitOK, says: "Usage: rlbench compare"},
		{name: "one good file", args: []string{good}, want: exitOK, says: ""},
	}
	for _, tc := range tests {
		for _, cmd := range []string{"compare", "report"} {
			if cmd == "report" && tc.want == exitOK {
				continue // TestReport* cover report's successes
			}
			t.Run(cmd+"/"+tc.name, func(t *testing.T) {
				t.Parallel()
				args := append([]string{cmd}, tc.args...)
				if cmd == "report" {
					args = append(args, "-o", filepath.Join(t.TempDir(), "r.html"))
				}
				res := mustRun(t, tc.want, args...)
				if tc.says == "" {
					if res.stderr != "" || !strings.Contains(res.stdout, "lua") {
						t.Errorf("run(%q) = stdout %q, stderr %q; want the cells on stdout and nothing on stderr", args, res.stdout, res.stderr)
					}
				} else if !strings.Contains(res.stderr, strings.ReplaceAll(tc.says, "compare", cmd)) {
					t.Errorf("run(%q) stderr = %q; want it to say %q", args, res.stderr, tc.says)
				}
			})
		}
	}
}

// TestReportsPrintedQuoted is issue 34, item 16: compare printed the
// strategy and target strings of its files raw, so that a clear-screen, an
// OSC title or a carriage return and a fake line reached the terminal.
// compare (with and without --baseline) and merge's summary and notes now
// quote every string of a file that would not print as it is.
func TestReportsPrintedQuoted(t *testing.T) {
	t.Parallel()
	const (
		strategy = "naive\x1b[2J\x1b]0;pwned\x07"
		target   = "shared\rFAKE: all good\n"
	)
	paths := realReports(t, 2)
	for _, p := range paths {
		rewriteJSON(t, p, func(rep map[string]any) {
			for _, r := range rep["runs"].([]any) {
				run := r.(map[string]any)
				run["target"] = target
				if run["strategy"] == "naive" {
					run["strategy"] = strategy
				}
			}
		})
	}
	merged := filepath.Join(t.TempDir(), "all.json")
	for _, args := range [][]string{
		append([]string{"compare"}, paths...),
		{"compare", "--baseline", paths[0], paths[1]},
		append(append([]string{"merge"}, paths...), "-o", merged),
		{"compare", merged},
	} {
		res := runCLI(t, t.Context(), args...)
		for _, out := range []string{res.stdout, res.stderr} {
			if i := strings.IndexFunc(out, func(r rune) bool { return r < ' ' && r != '\n' && r != '\t' || r == 0x7f }); i >= 0 {
				t.Errorf("rlbench %q printed a control character (%q at byte %d):\n%s", args, out[i], i, out)
			}
			if strings.Contains(out, "\nFAKE") {
				t.Errorf("rlbench %q printed a line of the file's:\n%s", args, out)
			}
		}
		if !strings.Contains(res.stdout+res.stderr, `"naive\x1b[2J\x1b]0;pwned\a"`) {
			t.Errorf("rlbench %q output =\n%s\nwant the strategy quoted, %q", args, res.stdout+res.stderr, strconv.Quote(strategy))
		}
	}
	// merge's JSON keeps the strings as they were.
	if rep := readReport(t, merged); rep.Runs[0].Target != target {
		t.Errorf("merged runs[0].target = %q; want %q, as the inputs had it", rep.Runs[0].Target, target)
	}
}

// rewriteJSON decodes the JSON file at path, lets change edit it, and
// writes it back.
func rewriteJSON(t *testing.T, path string, change func(map[string]any)) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var rep map[string]any
	if err := dec.Decode(&rep); err != nil {
		t.Fatal(err)
	}
	change(rep)
	if data, err = json.Marshal(rep); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}
