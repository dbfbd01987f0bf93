package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rlbench/rlbench/compare"
	"github.com/rlbench/rlbench/htmlreport"
	"github.com/rlbench/rlbench/results"
)

// mergeCLI runs `rlbench merge args...`.
func mergeCLI(args ...string) (code int, stdout, stderr string) {
	var out, errOut bytes.Buffer
	code = testCLI.main(context.Background(), append([]string{"merge"}, args...), &out, &errOut)
	return code, out.String(), errOut.String()
}

// TestMergeRealRuns merges two files written by real runs of the same
// command at the same time, and reads the merged file with compare and
// report as any other: every cell lines up with the parts' cells.
func TestMergeRealRuns(t *testing.T) {
	t.Parallel()
	paths := realReports(t, 2)
	out := filepath.Join(t.TempDir(), "all.json")
	code, stdout, stderr := mergeCLI(append(paths, "-o", out)...)
	if code != exitOK {
		t.Fatalf("rlbench merge %q = %d; want %d\nstderr:\n%s", paths, code, exitOK, stderr)
	}
	if !strings.Contains(stderr, "rlbench merge: wrote "+out+": 2 cells from 2 files") {
		t.Errorf("rlbench merge stderr = %q; want it to say what it wrote", stderr)
	}
	if !strings.Contains(stdout, "naive") || !strings.Contains(stdout, "lua") {
		t.Errorf("rlbench merge stdout = %q; want the merged summary", stdout)
	}

	files, err := compare.ReadFiles(append(paths, out))
	if err != nil {
		t.Fatalf("compare.ReadFiles(parts, merged) = %v; want nil", err)
	}
	merged := files[2].Report
	c := compare.New(files)
	if len(c.Cells) != 2 {
		t.Fatalf("compare.New(parts, merged) has %d cells; want 2 (the merged file's cells are the parts')", len(c.Cells))
	}
	for _, cell := range c.Cells {
		if len(cell.Samples) != 3 {
			t.Errorf("cell %s has %d runs; want 3: one per part and the merged one", cell.Key, len(cell.Samples))
			continue
		}
		a, b, m := cell.Samples[0].Run, cell.Samples[1].Run, cell.Samples[2].Run
		if m.Decisions != a.Decisions+b.Decisions || m.Workers != a.Workers+b.Workers {
			t.Errorf("cell %s merged decisions, clients = %d, %d; want %d, %d", cell.Key, m.Decisions, m.Workers, a.Decisions+b.Decisions, a.Workers+b.Workers)
		}
		if len(m.Faults) != len(a.Faults)+len(b.Faults) {
			t.Errorf("cell %s merged faults = %+v; want the parts' %d", cell.Key, m.Faults, len(a.Faults)+len(b.Faults))
		}
	}
	var text bytes.Buffer
	if err := compare.Text(compare.New(files[2:]))(&text); err != nil || !strings.Contains(text.String(), out) {
		t.Errorf("compare.Text(merged) = %v, %q; want nil and a table naming %s", err, text.String(), out)
	}
	var page bytes.Buffer
	if err := htmlreport.HTML(compare.New(files[2:]), htmlreport.Options{})(&page); err != nil || page.Len() == 0 {
		t.Errorf("htmlreport.HTML(merged) = %v, %d bytes; want nil and a page", err, page.Len())
	}
	if got := htmlreport.Charts(compare.New(files[2:])); got == 0 {
		t.Errorf("htmlreport.Charts(merged) = 0; want charts for %d runs", len(merged.Runs))
	}
	// And through the commands.
	mustRun(t, exitOK, "compare", paths[0], paths[1], out)
	mustRun(t, exitOK, "report", out, "-o", filepath.Join(t.TempDir(), "report.html"))
}

// TestMergeBadInput checks the exit status and message of rlbench merge
// for input it cannot merge.
func TestMergeBadInput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name string, rep *results.Report) string {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := writeJSON(p, rep); err != nil {
			t.Fatal(err)
		}
		return p
	}
	run := func(strategy string, histogram string) results.Run {
		return results.Run{Cell: results.Cell{Target: "redis-server", Strategy: strategy, Client: "go-redis"},
			Load:         results.Load{DurationS: 1, StartedAt: time.Date(2026, 1, 2, 15, 4, 5, 0, time.UTC)},
			Distribution: results.Distribution{HistogramEncoded: histogram}}
	}
	// An empty histogram: zero decisions, consistently.
	var empty results.Recorder
	h := results.NewRun(&empty, time.Second).HistogramEncoded
	lua1 := write("lua1.json", &results.Report{Tool: "rlbench", Runs: []results.Run{run("lua", h)}})
	lua2 := write("lua2.json", &results.Report{Tool: "rlbench", Runs: []results.Run{run("lua", h)}})
	naive := write("naive.json", &results.Report{Tool: "rlbench", Runs: []results.Run{run("naive", h)}})
	old := write("old.json", &results.Report{Tool: "rlbench", Runs: []results.Run{run("lua", "")}})
	notReport := filepath.Join(dir, "attack.json")
	if err := os.WriteFile(notReport, []byte(`{"latencies": {}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing.json")
	out := filepath.Join(dir, "out.json")
	tests := []struct {
		name string
		args []string
		want int
		says string
	}{
		{name: "no file", args: []string{"-o", out}, want: exitUsage, says: "merge needs two reports or more, got 0"},
		{name: "one file", args: []string{lua1, "-o", out}, want: exitUsage, says: "merge needs two reports or more, got 1"},
		{name: "no output", args: []string{lua1, lua2}, want: exitUsage, says: "-o: no output file given"},
		{name: "output is an input", args: []string{lua1, lua2, "-o", lua2}, want: exitUsage, says: "-o " + lua2 + ": would overwrite an input"},
		{name: "missing file", args: []string{lua1, missing, "-o", out}, want: exitUsage, says: missing},
		{name: "not a report", args: []string{notReport, lua1, "-o", out}, want: exitUsage, says: notReport + `: read report: not an rlbench report: no "tool" field`},
		{name: "older rlbench", args: []string{lua1, old, "-o", out}, want: exitUsage, says: old + ": redis-server lua/go-redis: no latency_histogram: written by an older rlbench; cannot merge exactly"},
		{name: "no common cell", args: []string{lua1, naive, "-o", out}, want: exitUsage, says: "no cell is in every report"},
		{name: "unwritable output", args: []string{lua1, lua2, "-o", filepath.Join(dir, "no", "such", "dir.json")}, want: exitUsage, says: "rlbench merge: -o:"},
		{name: "output is a directory", args: []string{lua1, lua2, "-o", dir}, want: exitUsage, says: "rlbench merge: -o: cannot write " + dir + ": is a directory"},
		{name: "unknown flag", args: []string{"--bogus", lua1, lua2}, want: exitUsage, says: "unknown flag: --bogus"},
		{name: "help", args: []string{"--help"}, want: exitOK, says: "Usage: rlbench merge"},
		// Two files of one cell, to stdout; the prefixes are unknown.
		{name: "stdout", args: []string{lua1, lua2, "-o", "-"}, want: exitOK, says: "lua1.json has no workload.prefix in its config"},
		// The JSON on stdout, the text on stderr, as --json - does.
		{name: "stdout, text on stderr", args: []string{lua1, lua2, "-o", "-"}, want: exitOK, says: "strategy  client    clients"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			code, _, stderr := mergeCLI(tc.args...)
			if code != tc.want || !strings.Contains(stderr, tc.says) {
				t.Errorf("rlbench merge %q = %d, stderr %q; want %d saying %q", tc.args, code, stderr, tc.want, tc.says)
			}
		})
	}
}
