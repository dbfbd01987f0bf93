package compare

import (
	"bytes"
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rlbench/rlbench/internal/golden"
	"github.com/rlbench/rlbench/results"
)

func ptr[T any](v T) *T { return &v }

// run is a hand-built run with the figures compare reads.
func run(strategy, client string, thr, p50, p99, p999 float64, immortal int64, over *int64) results.Run {
	return results.Run{
		Cell:      results.Cell{Strategy: strategy, Client: client, Workers: 200},
		Load:      results.Load{DurationS: 10, Decisions: int64(thr * 10), Allowed: int64(thr * 10), ThroughputPerS: thr, LatencyUS: results.Latency{P50: p50, P90: p50 * 1.5, P99: p99, P999: p999, Max: p999 * 3, Mean: p50 * 1.1}},
		Admission: results.Admission{OverAdmitted: over},
		Audits:    results.Audits{Audit: results.Audit{Keys: 10, Immortal: immortal}},
	}
}

// withCPU is r with a saturation that has rlbench's and the server's CPU
// per decision, in microseconds.
func withCPU(r results.Run, client, server float64) results.Run {
	r.Saturation = &results.Saturation{ClientCPU: 0.9, ServerCPU: 0.8, ClientCPUPerDecisionUS: client, ServerCPUPerDecisionUS: server}
	return r
}

// fixedReports are three hand-built reports of one command line run three
// times on a private redis 7.0.15: naive and lua on go-redis in every file;
// gcra (not a fixed window) on rueidis in A only; lua on rueidis in C only.
// The lua cells have CPU per decision; the others none.
func fixedReports() []*results.Report {
	server := results.Server{Addr: "127.0.0.1:40123", Name: "redis", Version: "7.0.15", Managed: true}
	started := time.Date(2025, 3, 14, 15, 9, 26, 0, time.UTC)
	return []*results.Report{
		{Tool: "rlbench", Started: started, Server: server, Config: map[string]any{"limit": 1000000}, Runs: []results.Run{
			run("naive", "go-redis", 63822, 3071, 8127, 12415, 10, ptr(int64(0))),
			withCPU(run("lua", "go-redis", 86158, 2201, 6143, 9919, 0, ptr(int64(0))), 9.81, 3.12),
			run("gcra", "rueidis", 201337, 950, 2011, 4799, 0, nil),
		}},
		{Tool: "rlbench", Started: started.Add(time.Minute), Server: server, Runs: []results.Run{
			run("naive", "go-redis", 61090, 3135, 8319, 13311, 9, ptr(int64(2))),
			withCPU(run("lua", "go-redis", 90512, 2103, 5951, 10431, 0, ptr(int64(0))), 9.02, 3.05),
		}},
		{Tool: "rlbench", Started: started.Add(2 * time.Minute), Server: server, Runs: []results.Run{
			run("naive", "go-redis", 64410, 3011, 8015, 12011, 10, ptr(int64(1))),
			withCPU(run("lua", "go-redis", 87003, 2187, 6077, 9855, 0, ptr(int64(0))), 9.55, 3.1),
			withCPU(run("lua", "rueidis", 207585, 939, 2003, 4815, 0, ptr(int64(0))), 1.92, 3.02),
		}},
	}
}

// settingsReports are the fixed reports with configs: A and C ran with
// 200 workers and no crashes, B with 50 workers and a crash rate of 0.2
// (and a prefix and a seed of its own, which are no settings).
func settingsReports() []*results.Report {
	reps := fixedReports()
	config := func(workers int, crash float64, prefix string, seed int) map[string]any {
		return map[string]any{"strategies": []string{"naive", "lua"}, "limit": 100, "window_s": 1,
			"workload": map[string]any{"clients": workers, "crash_rate": crash, "duration_ns": 10e9, "prefix": prefix, "seed": seed}}
	}
	reps[0].Config = config(200, 0, "rlbench:a:", 1)
	reps[1].Config = config(50, 0.2, "rlbench:b:", 2)
	reps[2].Config = config(200, 0, "rlbench:c:", 1)
	return reps
}

// writeReports writes reps with results.JSON into dir as a.json, b.json, ...
// and returns their paths.
func writeReports(t *testing.T, dir string, reps []*results.Report) []string {
	t.Helper()
	var paths []string
	for i, rep := range reps {
		var buf bytes.Buffer
		if err := results.JSON(rep)(&buf); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, strings.ToLower(FileName(i))+".json")
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, path)
	}
	return paths
}

// TestTextGolden prints comparisons of the fixed reports: all three (ratios,
// spread, cells missing from some files), and the first alone (no ratio, no
// spread).
func TestTextGolden(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		reports func() []*results.Report
		files   int
		golden  string
	}{
		{name: "three files", reports: fixedReports, files: 3, golden: "compare.txt"},
		{name: "one file", reports: fixedReports, files: 1, golden: "compare-one.txt"},
		// B's settings differ: its runs are rows of their own.
		{name: "different settings", reports: settingsReports, files: 3, golden: "compare-settings.txt"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			paths := writeReports(t, dir, tc.reports()[:tc.files])
			files, err := ReadFiles(paths)
			if err != nil {
				t.Fatalf("ReadFiles error: %v", err)
			}
			var buf bytes.Buffer
			if err := Text(New(files))(&buf); err != nil {
				t.Fatal(err)
			}
			golden.Check(t, tc.golden, bytes.ReplaceAll(buf.Bytes(), []byte(dir+string(filepath.Separator)), nil))
		})
	}
}

// TestCellsApartBySettings is issue 22, item 10: runs with different
// settings (200 vs 50 workers, crash rate 0 vs 0.2) were one cell, with a
// ratio and a spread across them. They are separate cells, labelled by
// the settings that differ; like runs are still pooled.
func TestCellsApartBySettings(t *testing.T) {
	t.Parallel()
	files, err := ReadFiles(writeReports(t, t.TempDir(), settingsReports()))
	if err != nil {
		t.Fatal(err)
	}
	c := New(files)
	if want := []string{"clients", "crash-rate"}; !slices.Equal(c.Settings, want) {
		t.Errorf("New(...).Settings = %q; want %q", c.Settings, want)
	}
	var keys []string
	for _, cell := range c.Cells {
		keys = append(keys, cell.Key.String())
	}
	wantKeys := []string{
		"redis 7.0.15 naive/go-redis (clients=200 crash-rate=0)", "redis 7.0.15 lua/go-redis (clients=200 crash-rate=0)",
		"redis 7.0.15 gcra/rueidis (clients=200 crash-rate=0)",
		"redis 7.0.15 naive/go-redis (clients=50 crash-rate=0.2)", "redis 7.0.15 lua/go-redis (clients=50 crash-rate=0.2)",
		"redis 7.0.15 lua/rueidis (clients=200 crash-rate=0)",
	}
	if strings.Join(keys, "|") != strings.Join(wantKeys, "|") {
		t.Fatalf("New(...) cells =\n%q\nwant\n%q", keys, wantKeys)
	}
	naive200, naive50 := c.Cells[0], c.Cells[3]
	if s := naive200.Spread(Throughput); s.N != 2 || s.Min != 63822 || s.Max != 64410 {
		t.Errorf("naive (200 workers) spread = %+v; want A's and C's runs only", s)
	}
	if _, ok := naive200.Ratio(Throughput, 1); ok {
		t.Errorf("naive (200 workers) has a B/A ratio; want none (B ran with other settings)")
	}
	if r, ok := naive200.Ratio(Throughput, 2); !ok || math.Abs(r-64410.0/63822) > 1e-12 {
		t.Errorf("naive (200 workers) C/A = %v, %t; want %v", r, ok, 64410.0/63822)
	}
	if s := naive50.Spread(Throughput); s.N != 1 {
		t.Errorf("naive (50 workers) spread over %d runs; want B's one", s.N)
	}
	if got := c.SettingsValue("crash-rate", 1); got != "0.2" {
		t.Errorf("SettingsValue(crash-rate, B) = %q; want 0.2", got)
	}
}

// TestCellsApartByFaultParameters is issue 34, item 15: compare dropped a
// fault's parameters (latency_ms, jitter_ms, p), so that
// latency@0s:5.5s:2 and latency@0s:5.5s:20 were pooled as repeats of one
// setting. They are settings that differ, as each --fault reads.
func TestCellsApartByFaultParameters(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		faults [2]map[string]any
		want   [2]string
	}{
		{"latency", [2]map[string]any{
			{"kind": "latency", "at_ns": 0, "arg_ns": 5.5e9, "latency_ms": 2},
			{"kind": "latency", "at_ns": 0, "arg_ns": 5.5e9, "latency_ms": 20}},
			[2]string{"latency@0s:5.5s:2", "latency@0s:5.5s:20"}},
		{"jitter", [2]map[string]any{
			{"kind": "latency", "at_ns": 0, "arg_ns": 5.5e9, "latency_ms": 20},
			{"kind": "latency", "at_ns": 0, "arg_ns": 5.5e9, "latency_ms": 20, "jitter_ms": 10}},
			[2]string{"latency@0s:5.5s:20", "latency@0s:5.5s:20~10"}},
		{"reply loss", [2]map[string]any{
			{"kind": "reply-loss", "at_ns": 1e9, "arg_ns": 2e9, "p": 0.05},
			{"kind": "reply-loss", "at_ns": 1e9, "arg_ns": 2e9, "p": 0.5}},
			[2]string{"reply-loss@1s:2s:0.05", "reply-loss@1s:2s:0.5"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			reps := fixedReports()[:2]
			for i, f := range tc.faults {
				reps[i].Config = map[string]any{"limit": 100, "faults": []any{f}}
			}
			files, err := ReadFiles(writeReports(t, t.TempDir(), reps))
			if err != nil {
				t.Fatal(err)
			}
			c := New(files)
			if want := []string{"faults"}; !slices.Equal(c.Settings, want) {
				t.Fatalf("New(%s) .Settings = %q; want %q (the files' faults differ)", tc.name, c.Settings, want)
			}
			for i, want := range tc.want {
				if got := c.SettingsValue("faults", i); got != want {
					t.Errorf("SettingsValue(faults, %s) = %q; want %q", FileName(i), got, want)
				}
			}
		})
	}
}

// TestCells checks the grouping and the figures of the fixed reports.
func TestCells(t *testing.T) {
	t.Parallel()
	paths := writeReports(t, t.TempDir(), fixedReports())
	files, err := ReadFiles(paths)
	if err != nil {
		t.Fatal(err)
	}
	c := New(files)
	var keys []string
	for _, cell := range c.Cells {
		keys = append(keys, cell.Key.String())
	}
	wantKeys := []string{"redis 7.0.15 naive/go-redis", "redis 7.0.15 lua/go-redis", "redis 7.0.15 gcra/rueidis", "redis 7.0.15 lua/rueidis"}
	if strings.Join(keys, "|") != strings.Join(wantKeys, "|") {
		t.Fatalf("New(...) cells = %q; want %q", keys, wantKeys)
	}
	naive, gcra := c.Cells[0], c.Cells[2]
	if r, ok := naive.Ratio(Throughput, 1); !ok || math.Abs(r-61090.0/63822) > 1e-12 {
		t.Errorf("naive.Ratio(Throughput, 1) = %v, %t; want %v, true", r, ok, 61090.0/63822)
	}
	if _, ok := gcra.Ratio(Throughput, 1); ok {
		t.Errorf("gcra.Ratio(Throughput, 1) ok = true; want false (gcra did not run in B)")
	}
	if n, ok := naive.Immortal(1); n != 9 || !ok {
		t.Errorf("naive.Immortal(1) = %d, %t; want 9, true", n, ok)
	}
	if _, ok := gcra.OverAdmitted(0); ok {
		t.Errorf("gcra.OverAdmitted(0) ok = true; want false (gcra is not a fixed window)")
	}
	s := naive.Spread(Throughput)
	if s.N != 3 || s.Min != 61090 || s.Median != 63822 || s.Max != 64410 {
		t.Errorf("naive.Spread(Throughput) = %+v; want 3 runs, min 61090, median 63822, max 64410", s)
	}
}

func TestSpreadOf(t *testing.T) {
	t.Parallel()
	nan := math.NaN()
	tests := []struct {
		name string
		in   []float64
		want Spread
	}{
		{name: "none", in: nil, want: Spread{CV: nan}},
		{name: "one value has no cv", in: []float64{5}, want: Spread{N: 1, Min: 5, Median: 5, Max: 5, Mean: 5, CV: nan}},
		{name: "odd count", in: []float64{3, 1, 2}, want: Spread{N: 3, Min: 1, Median: 2, Max: 3, Mean: 2, CV: 0.5}},
		{name: "even count takes the middle pair's mean", in: []float64{4, 1, 3, 2}, want: Spread{N: 4, Min: 1, Median: 2.5, Max: 4, Mean: 2.5, CV: math.Sqrt(5.0/3) / 2.5}},
		{name: "identical values", in: []float64{7, 7}, want: Spread{N: 2, Min: 7, Median: 7, Max: 7, Mean: 7, CV: 0}},
		{name: "zero mean has no cv", in: []float64{-1, 1}, want: Spread{N: 2, Min: -1, Median: 0, Max: 1, Mean: 0, CV: nan}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			in := slices.Clone(tc.in)
			got := SpreadOf(tc.in)
			if !slices.Equal(in, tc.in) {
				t.Errorf("SpreadOf(%v) reordered its argument to %v", in, tc.in)
			}
			same := got.N == tc.want.N && got.Min == tc.want.Min && got.Median == tc.want.Median &&
				got.Max == tc.want.Max && got.Mean == tc.want.Mean &&
				(math.IsNaN(got.CV) && math.IsNaN(tc.want.CV) || math.Abs(got.CV-tc.want.CV) < 1e-12)
			if !same {
				t.Errorf("SpreadOf(%v) = %+v; want %+v", tc.in, got, tc.want)
			}
		})
	}
}

func TestFileName(t *testing.T) {
	t.Parallel()
	tests := []struct {
		i    int
		want string
	}{
		{0, "A"}, {1, "B"}, {25, "Z"}, {26, "AA"}, {27, "AB"}, {51, "AZ"}, {52, "BA"}, {701, "ZZ"}, {702, "AAA"},
	}
	for _, tc := range tests {
		if got := FileName(tc.i); got != tc.want {
			t.Errorf("FileName(%d) = %q; want %q", tc.i, got, tc.want)
		}
	}
}

func TestFormat(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		got  string
		want string
	}{
		{"ratio below 10", FormatRatio(0.9749), "0.97x"},
		{"ratio of 1", FormatRatio(1), "1.00x"},
		{"ratio that rounds to 10", FormatRatio(9.996), "10.0x"},
		{"ratio above 100", FormatRatio(153.4), "153x"},
		{"cv", FormatCV(0.0194), "1.9%"},
		{"small cv", FormatCV(0.00071), "0.07%"},
		{"no cv", FormatCV(math.NaN()), "-"},
	}
	for _, tc := range tests {
		if tc.got != tc.want {
			t.Errorf("%s = %q; want %q", tc.name, tc.got, tc.want)
		}
	}
}

// TestTargets reads files whose runs carry what a newer or older rlbench
// writes about the target, and checks the key each run gets.
func TestTargets(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		json string
		want string
	}{
		{
			name: "private server without a label: name and version, not the random port",
			json: `{"tool":"rlbench","server":{"addr":"127.0.0.1:40123","name":"redis","version":"7.0.15","managed":true},"runs":[{"strategy":"lua","client":"go-redis"}]}`,
			want: "redis 7.0.15",
		},
		{
			name: "existing server without a label: its address",
			json: `{"tool":"rlbench","server":{"addr":"10.0.0.5:6379","name":"redis","version":"7.2.4"},"runs":[{"strategy":"lua","client":"go-redis"}]}`,
			want: "10.0.0.5:6379",
		},
		{
			name: "a run's target label",
			json: `{"tool":"rlbench","server":{"addr":"127.0.0.1:1","managed":true},"runs":[{"target":"valkey-8","strategy":"lua","client":"go-redis"}]}`,
			want: "valkey-8",
		},
		{
			name: "an empty label falls back to the run's own server",
			json: `{"tool":"rlbench","server":{"addr":"127.0.0.1:1","name":"redis","version":"7.0.15","managed":true},"runs":[{"target":"","server":{"addr":"127.0.0.1:2","name":"valkey","version":"8.0.1","managed":true},"strategy":"lua","client":"go-redis"}]}`,
			want: "valkey 8.0.1",
		},
		{
			name: "nothing known about the server",
			json: `{"tool":"rlbench","runs":[{"strategy":"lua","client":"go-redis"}]}`,
			want: "unknown server",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "r.json")
			if err := os.WriteFile(path, []byte(tc.json), 0o644); err != nil {
				t.Fatal(err)
			}
			f, err := ReadFile(path)
			if err != nil {
				t.Fatalf("ReadFile error: %v", err)
			}
			if got := f.Target(0); got != tc.want {
				t.Errorf("Target(0) of %s = %q; want %q", tc.json, got, tc.want)
			}
		})
	}
}

// TestTextNotes checks the notes under the tables: files that share no
// cell, and a cell whose runs were on different server versions.
func TestTextNotes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, body string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	old := write("old.json", `{"tool":"rlbench","server":{"name":"redis","version":"7.0.15","managed":true},"runs":[{"target":"prod-like","strategy":"lua","client":"go-redis","throughput_per_s":100}]}`)
	upgraded := write("new.json", `{"tool":"rlbench","server":{"name":"redis","version":"7.2.4","managed":true},"runs":[{"target":"prod-like","strategy":"lua","client":"go-redis","throughput_per_s":120}]}`)
	other := write("other.json", `{"tool":"rlbench","server":{"name":"valkey","version":"8.0.1","managed":true},"runs":[{"strategy":"lua","client":"go-redis"}]}`)
	// An interrupted rlbench's file: its one run stopped 0.4 s into the load.
	partial := write("partial.json", `{"tool":"rlbench","interrupted":true,"server":{"name":"redis","version":"7.2.4","managed":true},"runs":[{"target":"prod-like","strategy":"lua","client":"go-redis","complete":false,"decisions":40,"allowed":40,"duration_s":0.4,"throughput_per_s":100}]}`)
	// A file whose first cell's audit failed: the run stopped there.
	stopped := write("stopped.json", `{"tool":"rlbench","failed":true,"stopped_by":"lua/go-redis: the audit of the cell's keys failed","server":{"name":"redis","version":"7.2.4","managed":true},"runs":[{"target":"prod-like","strategy":"lua","client":"go-redis","throughput_per_s":100}]}`)

	tests := []struct {
		name  string
		paths []string
		says  string
	}{
		{"same label, two versions", []string{old, upgraded}, "note: prod-like lua/go-redis ran on different servers: redis 7.0.15 (A), redis 7.2.4 (B)"},
		{"same label, ratio across versions", []string{old, upgraded}, "1.20x"},
		{"nothing shared", []string{old, other}, "note: no cell ran in more than one file"},
		{"nothing shared, the targets named", []string{old, other}, "note: the files' targets: A: prod-like; B: valkey 8.0.1; runs on different targets line up when given the same label"},
		{"a partial run", []string{old, partial}, "note: prod-like lua/go-redis in B did not finish (complete: false)"},
		{"an interrupted file", []string{old, partial}, "1 run, INTERRUPTED, 1 run did not finish"},
		{"a file stopped by a failure", []string{old, stopped}, "1 run, STOPPED BY A FAILURE"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			files, err := ReadFiles(tc.paths)
			if err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			if err := Text(New(files))(&buf); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(buf.String(), tc.says) {
				t.Errorf("Text(%q) does not say %q:\n%s", tc.paths, tc.says, buf.String())
			}
		})
	}
}

func TestReadFilesBad(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	good := writeReports(t, dir, fixedReports()[:1])[0]
	notReport := filepath.Join(dir, "bench.json")
	if err := os.WriteFile(notReport, []byte(`{"Name": "BenchmarkDecide"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing.json")
	write := func(name, body string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	// The repros: a report with no runs printed nothing with exit 0,
	// negative and 300-digit figures were printed as they came.
	noRuns := write("no-runs.json", `{"tool":"rlbench","runs":[]}`)
	negative := write("negative.json", `{"tool":"rlbench","runs":[{"strategy":"lua","client":"go-redis","decisions":-100,"allowed":-100,"duration_s":1,"throughput_per_s":-100}]}`)
	absurd := write("absurd.json", `{"tool":"rlbench","runs":[{"strategy":"lua","client":"go-redis","throughput_per_s":1e300}]}`)
	tests := []struct {
		name  string
		paths []string
		is    error
		names string // the path the message must name
	}{
		{name: "no file", paths: nil, is: ErrNoFiles},
		{name: "not a report", paths: []string{good, notReport}, is: results.ErrNotReport, names: notReport},
		{name: "missing", paths: []string{missing, good}, is: os.ErrNotExist, names: missing},
		// `rlbench compare /dev/zero` grew without bound.
		{name: "endless input", paths: []string{good, "/dev/zero"}, is: results.ErrTooLarge, names: "/dev/zero"},
		{name: "no runs", paths: []string{good, noRuns}, is: results.ErrNoRuns, names: noRuns},
		{name: "negative figures", paths: []string{negative, good}, is: results.ErrImplausible, names: negative},
		{name: "absurd throughput", paths: []string{good, absurd}, is: results.ErrImplausible, names: absurd},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			files, err := ReadFiles(tc.paths)
			if !errors.Is(err, tc.is) || !strings.Contains(err.Error(), tc.names) {
				t.Errorf("ReadFiles(%q) = %v, %v; want an error that is %v and names %q", tc.paths, files, err, tc.is, tc.names)
			}
		})
	}
}

// TestSetting checks how a config field is named and shown as a setting:
// as its flag, with durations as durations.
func TestSetting(t *testing.T) {
	t.Parallel()
	tests := []struct {
		field, raw, name, value string
	}{
		{"clients", `200`, "clients", "200"},
		{"crash_rate", `0.2`, "crash-rate", "0.2"},
		{"duration_ns", `10000000000`, "duration", "10s"},
		{"window_s", `60`, "window", "1m0s"},
		{"rate_per_s", `5000`, "rate", "5000"},
		{"key_dist", `"zipf"`, "key-dist", "zipf"},
		{"faults", `[{"kind":"stall","at_ns":2000000000,"arg_ns":500000000},{"kind":"kill-clients","at_ns":5000000000}]`, "faults", "stall@2s:500ms,kill-clients@5s"},
		{"faults", `[{"kind":"latency","at_ns":0,"arg_ns":5500000000,"latency_ms":20,"jitter_ms":5}]`, "faults", "latency@0s:5.5s:20~5"},
		{"faults", `[{"kind":"reply-loss","at_ns":1000000000,"arg_ns":2000000000,"p":0.05}]`, "faults", "reply-loss@1s:2s:0.05"},
		{"private_tls", `true`, "private-tls", "true"},
		{"stages", `[{"duration_ns":10000000000,"target":100},{"duration_ns":500000000,"target":0}]`, "stages", "10s:100,500ms:0"},
	}
	for _, tc := range tests {
		if name, value := setting(tc.field, []byte(tc.raw)); name != tc.name || value != tc.value {
			t.Errorf("setting(%q, %s) = %q, %q; want %q, %q", tc.field, tc.raw, name, value, tc.name, tc.value)
		}
	}
}
