package results

import (
	"bytes"
	"encoding/json"
	"errors"
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
