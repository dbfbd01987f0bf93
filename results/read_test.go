package results

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadReportRoundTrip reads the JSON reporter's golden file and writes it
// again: every field must survive, byte for byte.
func TestReadReportRoundTrip(t *testing.T) {
	t.Parallel()
	want, err := os.ReadFile(filepath.Join("testdata", "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	rep, err := ReadReport(bytes.NewReader(want))
	if err != nil {
		t.Fatalf("ReadReport(testdata/report.json) error: %v", err)
	}
	if _, ok := rep.Config.(json.RawMessage); !ok {
		t.Errorf("ReadReport(...).Config is a %T; want json.RawMessage", rep.Config)
	}
	var got bytes.Buffer
	if err := JSON(rep)(&got); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Bytes(), want) {
		t.Errorf("JSON(ReadReport(testdata/report.json)) differs from the file\ngot:\n%s\nwant:\n%s", got.Bytes(), want)
	}
}

// TestReadReportTolerant reads a report with fields this build does not
// know, at the top and in a run: they are ignored, the rest is read.
func TestReadReportTolerant(t *testing.T) {
	t.Parallel()
	in := `{
  "tool": "rlbench",
  "started": "2025-03-14T15:09:26Z",
  "server": {"addr": "127.0.0.1:6379", "name": "valkey", "version": "8.0.1", "managed": false, "label": "vk"},
  "environment": {"go_version": "go1.99", "num_cpu": 64},
  "runs": [
    {"strategy": "lua", "client": "rueidis", "decisions": 10, "future_latency": {"p50": 3},
     "latency_us": {"p50": 95, "p99": 310, "uncorrected_p99": 200}, "over_admitted": null,
     "audit": {"keys": 4, "immortal": 1, "sampled": [1, 2]}}
  ]
}`
	rep, err := ReadReport(strings.NewReader(in))
	if err != nil {
		t.Fatalf("ReadReport error: %v", err)
	}
	if rep.Server.Name != "valkey" || rep.Server.Addr != "127.0.0.1:6379" {
		t.Errorf("ReadReport(...).Server = %+v; want valkey at 127.0.0.1:6379", rep.Server)
	}
	if rep.Config != nil {
		t.Errorf("ReadReport(...).Config = %v; want nil for a file without config", rep.Config)
	}
	if len(rep.Runs) != 1 {
		t.Fatalf("ReadReport(...) has %d runs; want 1", len(rep.Runs))
	}
	r := rep.Runs[0]
	if r.Strategy != "lua" || r.Decisions != 10 || r.LatencyUS.P99 != 310 || r.Audit.Immortal != 1 || r.OverAdmitted != nil {
		t.Errorf("ReadReport(...).Runs[0] = %+v; want lua, 10 decisions, p99 310, 1 immortal, no over-admission", r)
	}
}

// TestReadReportBad feeds ReadReport what is not one rlbench report.
func TestReadReportBad(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		in        string
		notReport bool   // errors.Is(err, ErrNotReport)
		says      string // a part of the message
	}{
		{name: "empty", in: "", notReport: true, says: "empty input"},
		{name: "white space", in: " \n", notReport: true, says: "empty input"},
		{name: "not JSON", in: "p50 183µs\n", notReport: true, says: "invalid character"},
		{name: "an array", in: `[{"tool": "rlbench"}]`, notReport: true, says: "cannot unmarshal array"},
		{name: "no tool", in: `{"runs": []}`, notReport: true, says: `no "tool" field`},
		{name: "another tool", in: `{"tool": "vegeta", "runs": []}`, notReport: true, says: `tool is "vegeta"`},
		{name: "tool not a string", in: `{"tool": 1}`, notReport: true, says: "cannot unmarshal number"},
		{name: "two reports", in: `{"tool": "rlbench"} {"tool": "rlbench"}`, notReport: true, says: "data after"},
		{name: "truncated", in: `{"tool": "rlbench", "runs": [{"strategy": "lua"`, notReport: true, says: "unexpected EOF"},
		{name: "runs of the wrong type", in: `{"tool": "rlbench", "runs": {"strategy": "lua"}}`, says: "decode"},
		{name: "a count of the wrong type", in: `{"tool": "rlbench", "runs": [{"decisions": "many"}]}`, says: "decisions"},
		// Issue 34, item 19: report drew an empty cell of a null run.
		{name: "a null run", in: `{"tool": "rlbench", "runs": [null]}`, says: "runs[0] is null"},
		{name: "a null run after a run", in: `{"tool": "rlbench", "runs": [{"strategy": "lua", "client": "rueidis"}, null]}`, says: "runs[1] is null"},
		{name: "a run with no strategy", in: `{"tool": "rlbench", "runs": [{"client": "rueidis", "decisions": 0}]}`, says: "runs[0] (/rueidis) names no strategy"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rep, err := ReadReport(strings.NewReader(tc.in))
			if err == nil {
				t.Fatalf("ReadReport(%q) = %+v, nil; want an error", tc.in, rep)
			}
			if got := errors.Is(err, ErrNotReport); got != tc.notReport {
				t.Errorf("ReadReport(%q) error %q: errors.Is(ErrNotReport) = %t; want %t", tc.in, err, got, tc.notReport)
			}
			if !strings.Contains(err.Error(), tc.says) {
				t.Errorf("ReadReport(%q) error = %q; want it to say %q", tc.in, err, tc.says)
			}
		})
	}
}

// TestReadReportFile checks that every error names the file.
func TestReadReportFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	notReport := filepath.Join(dir, "vegeta.json")
	if err := os.WriteFile(notReport, []byte(`{"latencies": {"mean": 1}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing.json")

	if _, err := ReadReportFile(notReport); !errors.Is(err, ErrNotReport) || !strings.Contains(err.Error(), notReport) {
		t.Errorf("ReadReportFile(%s) error = %v; want ErrNotReport naming the file", notReport, err)
	}
	if _, err := ReadReportFile(missing); !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), missing) {
		t.Errorf("ReadReportFile(%s) error = %v; want os.ErrNotExist naming the file", missing, err)
	}
	golden := filepath.Join("testdata", "report.json")
	rep, err := ReadReportFile(golden)
	if err != nil || rep.Tool != "rlbench" || len(rep.Runs) == 0 {
		t.Errorf("ReadReportFile(%s) = %+v, %v; want the report", golden, rep, err)
	}
}

// TestReadFileTooLarge starts from the issue's repro, `rlbench compare
// /dev/zero`, which read without end: the reader stops at MaxReportBytes,
// and refuses a regular file over it without reading it.
func TestReadFileTooLarge(t *testing.T) {
	t.Parallel()
	big := filepath.Join(t.TempDir(), "big.json")
	f, err := os.Create(big)
	if err != nil {
		t.Fatal(err)
	}
	// Sparse: no disk is written.
	if err := f.Truncate(MaxReportBytes + 1); err != nil {
		t.Fatal(err)
	}
	f.Close()
	for _, path := range []string{"/dev/zero", big} {
		if _, err := ReadFile(path); !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), path) {
			t.Errorf("ReadFile(%s) error = %v; want ErrTooLarge naming the file", path, err)
		}
	}
	if _, err := ReadReport(io.LimitReader(zeros{}, MaxReportBytes+1)); !errors.Is(err, ErrTooLarge) {
		t.Errorf("ReadReport(%d zero bytes) error = %v; want ErrTooLarge", MaxReportBytes+1, err)
	}
}

// zeros reads as endless zero bytes.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// TestReadFileNoRuns refuses a report with no runs (one an interrupted
// rlbench wrote before its first cell ended), naming the file: it printed
// nothing with exit 0.
func TestReadFileNoRuns(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "empty.json")
	if err := os.WriteFile(path, []byte(`{"tool": "rlbench", "interrupted": true, "runs": []}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadFile(path); !errors.Is(err, ErrNoRuns) || !strings.Contains(err.Error(), path) {
		t.Errorf("ReadFile(%s) error = %v; want ErrNoRuns naming the file", path, err)
	}
}

// TestReadFileImplausible refuses figures no run produces, naming the file,
// the run and the field. Each row edits one run of the golden report.
func TestReadFileImplausible(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tests := []struct {
		name  string
		edit  func(r map[string]any)
		field string
	}{
		{name: "negative decisions", edit: func(r map[string]any) { r["decisions"], r["allowed"] = -5, -5; r["rejected"], r["errors"] = 0, 0 }, field: "decisions"},
		{name: "300-digit throughput", edit: func(r map[string]any) { r["throughput_per_s"] = 1e300 }, field: "throughput_per_s"},
		{name: "throughput not decisions over duration", edit: func(r map[string]any) { r["throughput_per_s"] = 152146.0 }, field: "throughput_per_s"},
		{name: "more outcomes than decisions", edit: func(r map[string]any) { r["allowed"] = 10_000_000 }, field: "decisions"},
		{name: "error kinds that do not add up", edit: func(r map[string]any) { r["error_kinds"] = map[string]any{"timeout": 1} }, field: "error_kinds"},
		{name: "negative duration", edit: func(r map[string]any) { r["duration_s"] = -1 }, field: "duration_s"},
		{name: "absurd latency", edit: func(r map[string]any) { r["latency_us"].(map[string]any)["p99"] = 1e300 }, field: "latency_us.p99"},
		{name: "negative immortal", edit: func(r map[string]any) { r["audit"].(map[string]any)["immortal"] = -1 }, field: "audit.immortal"},
		{name: "negative second", edit: func(r map[string]any) { r["per_second"].([]any)[0].(map[string]any)["errors"] = -3 }, field: "per_second[0].errors"},
		{name: "negative cpu", edit: func(r map[string]any) { r["saturation"].(map[string]any)["server_cpu"] = -0.5 }, field: "saturation.server_cpu"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path := editedGolden(t, dir, tc.name, tc.edit)
			_, err := ReadFile(path)
			if !errors.Is(err, ErrImplausible) || !strings.Contains(err.Error(), path) ||
				!strings.Contains(err.Error(), "runs[0] (naive/go-redis): "+tc.field+":") {
				t.Errorf("ReadFile(%s) error = %v; want ErrImplausible naming the file, runs[0] and %s", path, err, tc.field)
			}
		})
	}
}

// TestValidateNaN refuses what JSON cannot carry but a Report built in Go
// can.
func TestValidateNaN(t *testing.T) {
	t.Parallel()
	rep := fixedReport()
	rep.Runs[1].ThroughputPerS = math.NaN()
	if err := Validate(rep); !errors.Is(err, ErrImplausible) || !strings.Contains(err.Error(), "throughput_per_s") {
		t.Errorf("Validate(NaN throughput) = %v; want ErrImplausible naming throughput_per_s", err)
	}
	if err := Validate(fixedReport()); err != nil {
		t.Errorf("Validate(fixedReport()) = %v; want nil", err)
	}
}

// editedGolden writes testdata/report.json with edit applied to its first
// run into dir, and returns the path.
func editedGolden(t *testing.T, dir, name string, edit func(map[string]any)) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	edit(doc["runs"].([]any)[0].(map[string]any))
	out, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, strings.ReplaceAll(name, " ", "-")+".json")
	if err := os.WriteFile(path, out, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestCompleteWire checks the wire form of a partial run and an interrupted
// report: "complete": false and "interrupted": true when so, absent
// otherwise, and a file without them (written before they existed) reads
// as complete.
func TestCompleteWire(t *testing.T) {
	t.Parallel()
	rep := fixedReport()
	rep.Interrupted = true
	rep.Runs[1].Incomplete = true
	var buf bytes.Buffer
	if err := JSON(rep)(&buf); err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(buf.String(), `"complete": false`); got != 1 {
		t.Errorf("JSON(one partial run) has %d \"complete\": false; want 1", got)
	}
	if !strings.Contains(buf.String(), `"interrupted": true`) {
		t.Errorf("JSON(interrupted report) has no \"interrupted\": true")
	}
	back, err := ReadReport(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if !back.Interrupted || bool(back.Runs[0].Incomplete) || !bool(back.Runs[1].Incomplete) {
		t.Errorf("ReadReport(JSON(...)) = interrupted %t, incomplete %t, %t; want true, false, true",
			back.Interrupted, back.Runs[0].Incomplete, back.Runs[1].Incomplete)
	}
	golden, err := ReadReportFile(filepath.Join("testdata", "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	if golden.Interrupted || bool(golden.Runs[0].Incomplete) {
		t.Errorf("ReadReportFile(testdata/report.json) = interrupted %t, incomplete %t; want a complete report", golden.Interrupted, golden.Runs[0].Incomplete)
	}
	for _, tc := range []struct {
		in   string
		want Incomplete
	}{{`true`, false}, {`false`, true}} {
		var r Run
		if err := json.Unmarshal([]byte(`{"complete": `+tc.in+`}`), &r); err != nil || r.Incomplete != tc.want {
			t.Errorf(`json.Unmarshal({"complete": %s}) = %v, Incomplete %t; want nil, %t`, tc.in, err, r.Incomplete, tc.want)
		}
	}
}
