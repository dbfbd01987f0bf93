package merge_test

import (
	"bytes"
	"errors"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/rlbench/rlbench"
	"github.com/rlbench/rlbench/internal/golden"
	"github.com/rlbench/rlbench/internal/redistest"
	"github.com/rlbench/rlbench/merge"
	"github.com/rlbench/rlbench/results"
	"github.com/rlbench/rlbench/workload"
)

// t0 is the start of the hand-built runs.
var t0 = time.Date(2026, 1, 2, 15, 4, 5, 0, time.UTC)

// newHistogram returns an empty histogram with rlbench's geometry.
func newHistogram() *hdrhistogram.Histogram {
	return hdrhistogram.New(results.MinLatencyUS, results.MaxLatencyUS, results.LatencySignificantDigits)
}

// handRun is a go-redis run of strategy on the target "redis-server" that
// started at start, lasted durS seconds and recorded one decision per
// latency (µs): a quarter of them rejected, one in ten an error. Its
// counts, throughput, latency summary and per-second series agree with its
// histogram, as in a file rlbench wrote.
func handRun(t *testing.T, strategy string, start time.Time, durS float64, latencies ...int64) results.Run {
	t.Helper()
	h := newHistogram()
	for _, v := range latencies {
		if err := h.RecordValue(v); err != nil {
			t.Fatal(err)
		}
	}
	enc, err := h.Encode(hdrhistogram.V2CompressedEncodingCookieBase)
	if err != nil {
		t.Fatal(err)
	}
	n := int64(len(latencies))
	errs := n / 10
	rejected := n / 4
	r := results.Run{
		Cell: results.Cell{
			Target: "redis-server", Server: &results.Server{Addr: "10.0.0.5:6379", Name: "redis", Version: "7.0.15"},
			Environment: &results.Environment{ClientModule: "github.com/redis/go-redis/v9", ClientVersion: "v9.23.0",
				GoVersion: "go1.26.8", OS: "linux", Arch: "amd64", NumCPU: 8, GOMAXPROCS: 8},
			Strategy: strategy, Client: "go-redis", ClientOptions: "pool_size=4 protocol=3 retries=off", Workers: 4,
		},
		Load: results.Load{
			StartedAt: start, DurationS: durS,
			Decisions: n, Allowed: n - rejected - errs, Rejected: rejected, Errors: errs,
			ErrorKinds:     map[string]int64{},
			ThroughputPerS: float64(n) / durS,
			LatencyUS:      results.LatencyOf(h),
		},
		Outage:       results.Outage{OnError: "open", Admitted: n - rejected},
		Audits:       results.Audits{Audit: results.Audit{Keys: 10, Immortal: 1}},
		Distribution: results.Distribution{Percentiles: results.PercentilesOf(h), HistogramEncoded: string(enc)},
	}
	if errs > 0 {
		r.ErrorKinds["timeout"] = errs
	}
	// One entry per whole second, the last for the part-second left.
	var done int64
	for s := 1.0; done < n; s++ {
		end := min(s, durS)
		k := int64(math.Round(float64(n) * end / durS))
		if end == durS {
			k = n
		}
		d := k - done
		r.PerSecond = append(r.PerSecond, results.Second{T: end, Decisions: d, Allowed: d})
		done = k
	}
	return r
}

// handReport is a report of runs, with the key prefix given.
func handReport(prefix string, runs ...results.Run) *results.Report {
	return &results.Report{
		Tool: "rlbench", Started: t0.Add(-2 * time.Second),
		Server: results.Server{Addr: "10.0.0.5:6379", Name: "redis", Version: "7.0.15"},
		Config: map[string]any{"limit": 100, "window_s": 1, "workload": map[string]any{"clients": 4, "prefix": prefix}},
		Runs:   runs,
	}
}

func latencies(n int, from int64) []int64 {
	out := make([]int64, n)
	for i := range out {
		out[i] = from + int64(i%97)*3
	}
	return out
}

// twoReports are two generators' reports of the same command: lua and
// naive on go-redis, B started 250 ms after A, with a fault in A and a
// different Go in B.
func twoReports(t *testing.T) []merge.File {
	t.Helper()
	aLua := handRun(t, "lua", t0, 2.0, latencies(400, 90)...)
	aLua.Faults = []results.FaultEvent{{Fault: "kill-clients@1s", AtS: 1.0002, Detail: "killed 4 connections"}}
	aLua.Saturation = &results.Saturation{ClientCPU: 0.61, ServerCPU: 0.42, ConnectionsOpened: 5, PeakRSSBytes: 40 << 20}
	aNaive := handRun(t, "naive", t0.Add(3*time.Second), 2.0, latencies(300, 120)...)
	aNaive.OverAdmitted, aNaive.MaxAdmittedPerWindow = ptr(int64(3)), 103

	bLua := handRun(t, "lua", t0.Add(250*time.Millisecond), 2.0, latencies(380, 200)...)
	bLua.Environment.GoVersion = "go1.25.4"
	bLua.Audit = results.Audit{Keys: 10, Immortal: 2, TTLOverWindow: 1}
	aLua.ClusterErrors = map[string]int64{"MOVED": 5, "ASK": 1, "TRYAGAIN": 0, "CLUSTERDOWN": 0}
	bLua.ClusterErrors = map[string]int64{"MOVED": 7, "ASK": 0, "TRYAGAIN": 0, "CLUSTERDOWN": 0}
	bNaive := handRun(t, "naive", t0.Add(3250*time.Millisecond), 2.0, latencies(310, 100)...)
	bNaive.OverAdmitted, bNaive.MaxAdmittedPerWindow = ptr(int64(5)), 101
	bNaive.ScriptFallbacks = 2
	return []merge.File{
		{Name: "a.json", Report: handReport("rlbench:a:", aLua, aNaive)},
		{Name: "b.json", Report: handReport("rlbench:b:", bLua, bNaive)},
	}
}

func ptr[T any](v T) *T { return &v }

// deref is *p, or -1 for nil.
func deref(p *int64) int64 {
	if p == nil {
		return -1
	}
	return *p
}

// TestMergeGolden merges two hand-built reports and compares the JSON with
// testdata/merged.json.
func TestMergeGolden(t *testing.T) {
	t.Parallel()
	m, err := merge.Merge(twoReports(t))
	if err != nil {
		t.Fatalf("Merge(two reports) = %v; want nil", err)
	}
	var buf bytes.Buffer
	if err := merge.JSON(m)(&buf); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "merged.json", buf.Bytes())
}

// TestMergeHandBuilt checks the merged figures of the two hand-built
// reports one by one.
func TestMergeHandBuilt(t *testing.T) {
	t.Parallel()
	files := twoReports(t)
	m, err := merge.Merge(files)
	if err != nil {
		t.Fatalf("Merge(two reports) = %v; want nil", err)
	}
	if len(m.Runs) != 2 {
		t.Fatalf("Merge(two reports) has %d runs; want 2", len(m.Runs))
	}
	lua, naive := m.Runs[0], m.Runs[1]
	a, b := &files[0].Report.Runs[0], &files[1].Report.Runs[0]
	if lua.Strategy != "lua" || naive.Strategy != "naive" {
		t.Fatalf("merged runs are %s, %s; want lua, naive", lua.Strategy, naive.Strategy)
	}
	if got, want := lua.Decisions, a.Decisions+b.Decisions; got != want {
		t.Errorf("lua decisions = %d; want %d", got, want)
	}
	if got, want := lua.ErrorKinds["timeout"], a.Errors+b.Errors; got != want {
		t.Errorf("lua error_kinds[timeout] = %d; want %d", got, want)
	}
	// Common interval: B's start (t0+250ms) to A's end (t0+2s).
	if got, want := lua.DurationS, 1.75; math.Abs(got-want) > 1e-9 {
		t.Errorf("lua duration_s = %v; want %v", got, want)
	}
	if got, want := lua.ThroughputPerS, float64(a.Decisions+b.Decisions)/1.75; math.Abs(got-want) > 1e-9 {
		t.Errorf("lua throughput_per_s = %v; want %v", got, want)
	}
	if !lua.StartedAt.Equal(t0.Add(250 * time.Millisecond)) {
		t.Errorf("lua started_at = %v; want %v", lua.StartedAt, t0.Add(250*time.Millisecond))
	}
	if got, want := lua.Audit, (results.Audit{Keys: 20, Immortal: 3, TTLOverWindow: 1}); got != want {
		t.Errorf("lua audit = %+v; want %+v (summed: different prefixes)", got, want)
	}
	// Each part counted what the nodes sent to every client: the largest, not the sum.
	if got, want := lua.ClusterErrors, map[string]int64{"MOVED": 7, "ASK": 1, "TRYAGAIN": 0, "CLUSTERDOWN": 0}; !maps.Equal(got, want) {
		t.Errorf("lua cluster_errors = %v; want %v (each kind's largest)", got, want)
	}
	if naive.ClusterErrors != nil {
		t.Errorf("naive cluster_errors = %v; want nil (a single server's parts)", naive.ClusterErrors)
	}
	if lua.Environment != nil {
		t.Errorf("lua environment = %+v; want nil (the parts' Go differ)", *lua.Environment)
	}
	if lua.Saturation != nil {
		t.Errorf("lua saturation = %+v; want nil (per part only)", *lua.Saturation)
	}
	if len(lua.Parts) != 2 || lua.Parts[0].File != "a.json" || lua.Parts[1].File != "b.json" ||
		lua.Parts[0].ThroughputPerS != a.ThroughputPerS || lua.Parts[1].Environment.GoVersion != "go1.25.4" ||
		lua.Parts[0].Saturation == nil || lua.Parts[0].Prefix != "rlbench:a:" {
		t.Errorf("lua parts = %+v; want a.json then b.json with their own figures", lua.Parts)
	}
	if naive.OverAdmitted == nil || *naive.OverAdmitted != 5 || naive.MaxAdmittedPerWindow != 103 {
		t.Errorf("naive over_admitted, max_admitted_per_window_span = %v, %d; want 5, 103", naive.OverAdmitted, naive.MaxAdmittedPerWindow)
	}
	if naive.ScriptFallbacks != 2 || naive.Workers != 8 {
		t.Errorf("naive script_fallbacks, clients = %d, %d; want 2, 8", naive.ScriptFallbacks, naive.Workers)
	}
	// A's fault at 1.0002 s from A's start is 0.7502 s from the merged start.
	if len(lua.Faults) != 1 || math.Abs(lua.Faults[0].AtS-0.7502) > 1e-9 || lua.Faults[0].Detail != "a.json: killed 4 connections" {
		t.Errorf("lua faults = %+v; want kill-clients at 0.7502 s from a.json", lua.Faults)
	}
	var series int64
	for _, s := range lua.PerSecond {
		series += s.Decisions
	}
	if series != lua.Decisions {
		t.Errorf("lua per_second sums to %d decisions; want %d", series, lua.Decisions)
	}
	if !slices.ContainsFunc(m.Notes, func(n string) bool { return strings.Contains(n, "above the sum of the parts' own throughputs") }) {
		t.Errorf("Merge notes = %q; want one on the parts' 250 ms skew", m.Notes)
	}
	if got, want := m.MergedFrom, []string{"a.json", "b.json"}; !slices.Equal(got, want) {
		t.Errorf("merged_from = %q; want %q", got, want)
	}
}

// TestMergeErrors checks the errors for reports that cannot be merged.
func TestMergeErrors(t *testing.T) {
	t.Parallel()
	good := func(prefix string, start time.Time) *results.Report {
		return handReport(prefix, handRun(t, "lua", start, 1.0, latencies(50, 100)...))
	}
	noHistogram := good("p2:", t0)
	noHistogram.Runs[0].HistogramEncoded = ""
	noStart := good("p2:", t0)
	noStart.Runs[0].StartedAt = time.Time{}
	corrupt := good("p2:", t0)
	corrupt.Runs[0].HistogramEncoded = "bm90IGEgaGlzdG9ncmFt"
	miscounted := good("p2:", t0)
	miscounted.Runs[0].Decisions++
	twice := good("p2:", t0)
	twice.Runs = append(twice.Runs, twice.Runs[0])
	otherCell := handReport("p2:", handRun(t, "naive", t0, 1.0, latencies(50, 100)...))
	// The repro: B was interrupted 0.3 s into its load; merged, its
	// few decisions shrank the common interval and inflated the throughput.
	partial := handReport("p2:", handRun(t, "lua", t0, 0.3, latencies(15, 100)...))
	partial.Interrupted, partial.Runs[0].Incomplete = true, true
	tests := []struct {
		name   string
		second *results.Report // merged with good("p1:", t0); nil for none
		want   error
		says   string
	}{
		// One report is not a merge.
		{name: "one report", want: merge.ErrTooFew, says: "got 1"},
		// A file from before latency_histogram cannot be merged exactly.
		{name: "no histogram", second: noHistogram, want: merge.ErrNotMergeable, says: "b.json: redis-server lua/go-redis: no latency_histogram: written by an older rlbench; cannot merge exactly"},
		{name: "no start", second: noStart, want: merge.ErrNotMergeable, says: "no started_at"},
		{name: "corrupt histogram", second: corrupt, want: merge.ErrInconsistent, says: "b.json: redis-server lua/go-redis: latency_histogram"},
		{name: "histogram disagrees with decisions", second: miscounted, want: merge.ErrInconsistent, says: "holds 50 latencies, decisions less crashes is 51"},
		{name: "cell twice in one file", second: twice, want: merge.ErrDuplicateCell, says: "b.json: redis-server lua/go-redis"},
		{name: "no common cell", second: otherCell, want: merge.ErrNoCommonCells, says: "a.json, b.json"},
		{name: "partial run", second: partial, want: merge.ErrIncomplete, says: "b.json: redis-server lua/go-redis: the run did not finish"},
		// A copy of A: the same start, cell and prefix.
		{name: "the same run twice", second: good("p1:", t0), want: merge.ErrSameRun, says: `a.json and b.json: redis-server lua/go-redis started at 2026-01-02T15:04:05Z with prefix "p1:"`},
		// B starts when A has ended.
		{name: "no overlap", second: good("p2:", t0.Add(time.Second)), want: merge.ErrNoOverlap, says: "a.json from 2026-01-02T15:04:05Z for 1.000 s"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			files := []merge.File{{Name: "a.json", Report: good("p1:", t0)}}
			if tc.second != nil {
				files = append(files, merge.File{Name: "b.json", Report: tc.second})
			}
			_, err := merge.Merge(files)
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.says) {
				t.Errorf("Merge(%s) = %v; want %v saying %q", tc.name, err, tc.want, tc.says)
			}
		})
	}
}

// TestMergeSameFile starts from the issue's repro, `rlbench merge a.json
// a.json`, which doubled every decision: one file given twice is refused,
// naming it, and so is a copy of it under another name.
func TestMergeSameFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	a, copyOfA := filepath.Join(dir, "a.json"), filepath.Join(dir, "copy.json")
	var buf bytes.Buffer
	if err := results.JSON(twoReports(t)[0].Report)(&buf); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{a, copyOfA} {
		if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	read := func(path string) merge.File {
		rep, err := results.ReadReportFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return merge.File{Name: path, Report: rep}
	}
	tests := []struct {
		name  string
		files []merge.File
		says  string
	}{
		{name: "a.json a.json", files: []merge.File{read(a), read(a)}, says: a + " is given twice"},
		{name: "a.json and its copy", files: []merge.File{read(a), read(copyOfA)}, says: a + " and " + copyOfA + ": redis-server lua/go-redis started at"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m, err := merge.Merge(tc.files)
			if !errors.Is(err, merge.ErrSameRun) || !strings.Contains(err.Error(), tc.says) {
				t.Errorf("Merge(%s) = %v, %v; want %v saying %q", tc.name, m, err, merge.ErrSameRun, tc.says)
			}
		})
	}
}

// TestMergeNotes checks what the merge says and does when the reports do
// not quite line up.
func TestMergeNotes(t *testing.T) {
	t.Parallel()
	lua := func(start time.Time) results.Run { return handRun(t, "lua", start, 1.0, latencies(40, 100)...) }
	naive := func(start time.Time) results.Run { return handRun(t, "naive", start, 1.0, latencies(40, 100)...) }
	moreClients := handReport("p2:", lua(t0))
	moreClients.Config.(map[string]any)["limit"] = 200
	moreClients.Config.(map[string]any)["workload"] = map[string]any{"clients": 8, "prefix": "p2:"}
	ownID := func(prefix, id string) *results.Report {
		r := handReport(prefix, lua(t0))
		r.Config.(map[string]any)["run_id"] = id
		return r
	}
	private := handReport("p2:", lua(t0))
	private.Runs[0].Server = &results.Server{Addr: "127.0.0.1:40001", Name: "redis", Version: "7.0.15", Managed: true}
	noTarget := func(prefix string, addr string) *results.Report {
		r := handReport(prefix, lua(t0))
		r.Runs[0].Target, r.Runs[0].Server = "", nil
		r.Server = results.Server{Addr: addr, Name: "redis", Version: "7.0.15", Managed: true}
		return r
	}
	tests := []struct {
		name      string
		a, b      *results.Report
		wantCells []string             // merged cells, strategy/client
		wantAudit results.Audit        // of the first merged cell
		says      []string             // in the notes
		check     func(merge.Run) bool // further check of the first merged cell; nil for none
	}{
		{
			// naive ran in A only: lua is merged, naive left out.
			name: "cell in one file only", a: handReport("p1:", lua(t0), naive(t0.Add(time.Second))), b: handReport("p2:", lua(t0)),
			wantCells: []string{"lua/go-redis"}, wantAudit: results.Audit{Keys: 20, Immortal: 2},
			says: []string{"cell redis-server naive/go-redis is only in a.json: not merged"},
		},
		{
			// Same prefix: both audited the same keys. B started 1 ms
			// after A: the same start would be the same run, refused.
			name: "shared prefix", a: handReport("p1:", lua(t0)), b: handReport("p1:", lua(t0.Add(time.Millisecond))),
			wantCells: []string{"lua/go-redis"}, wantAudit: results.Audit{Keys: 10, Immortal: 1},
			says: []string{`a.json, b.json used the same key prefix "p1:"`, "lower bounds"},
		},
		{
			name: "config differs", a: handReport("p1:", lua(t0)), b: moreClients,
			wantCells: []string{"lua/go-redis"}, wantAudit: results.Audit{Keys: 20, Immortal: 2},
			says: []string{"the configs differ in limit, workload.clients: config is a.json's"},
		},
		{
			// Each generator has a run id of its own: not a difference.
			name: "run ids", a: ownID("p1:", "20261201T000000-aaaaaaaa"), b: ownID("p2:", "20261201T000000-bbbbbbbb"),
			wantCells: []string{"lua/go-redis"}, wantAudit: results.Audit{Keys: 20, Immortal: 2},
		},
		{
			name: "private server", a: handReport("p1:", lua(t0)), b: private,
			wantCells: []string{"lua/go-redis"}, wantAudit: results.Audit{Keys: 20, Immortal: 2},
			says: []string{"b.json ran against a private server it started itself (redis 7.0.15 (private))"},
		},
		{
			// Without a target label, cells are keyed on the server as in
			// compare: "redis 7.0.15" for private servers on any port.
			name: "keyed by server", a: noTarget("p1:", "127.0.0.1:40001"), b: noTarget("p2:", "127.0.0.1:40002"),
			wantCells: []string{"lua/go-redis"}, wantAudit: results.Audit{Keys: 20, Immortal: 2},
			says:  []string{"a.json ran against a private server", "b.json ran against a private server"},
			check: func(r merge.Run) bool { return r.Server != nil && r.Server.Addr == "127.0.0.1:40001" },
		},
		{
			name: "no config", a: handReport("p1:", lua(t0)), b: &results.Report{Tool: "rlbench", Runs: []results.Run{lua(t0)}},
			wantCells: []string{"lua/go-redis"}, wantAudit: results.Audit{Keys: 20, Immortal: 2},
			says: []string{"b.json has no workload.prefix in its config"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m, err := merge.Merge([]merge.File{{Name: "a.json", Report: tc.a}, {Name: "b.json", Report: tc.b}})
			if err != nil {
				t.Fatalf("Merge(%s) = %v; want nil", tc.name, err)
			}
			var cells []string
			for _, r := range m.Runs {
				cells = append(cells, r.Strategy+"/"+r.Client)
			}
			if !slices.Equal(cells, tc.wantCells) {
				t.Fatalf("Merge(%s) cells = %q; want %q", tc.name, cells, tc.wantCells)
			}
			if got := m.Runs[0].Audit; got != tc.wantAudit {
				t.Errorf("Merge(%s) audit = %+v; want %+v", tc.name, got, tc.wantAudit)
			}
			notes := strings.Join(m.Notes, "\n")
			for _, s := range tc.says {
				if !strings.Contains(notes, s) {
					t.Errorf("Merge(%s) notes = %q; want one saying %q", tc.name, m.Notes, s)
				}
			}
			if len(tc.says) == 0 && len(m.Notes) > 0 {
				t.Errorf("Merge(%s) notes = %q; want none", tc.name, m.Notes)
			}
			if tc.check != nil && !tc.check(m.Runs[0]) {
				t.Errorf("Merge(%s) first run = %+v; fails the case's check", tc.name, m.Runs[0].Run)
			}
		})
	}
}

// TestMergePerSecond checks the alignment of per-second series on
// wall-clock seconds: B started 300 ms after A, so B's first second (0.3 s
// to 1.3 s from A's start) has its midpoint in the merged second 0 to 1.
func TestMergePerSecond(t *testing.T) {
	t.Parallel()
	a := handRun(t, "lua", t0, 2.5, latencies(250, 100)...)
	b := handRun(t, "lua", t0.Add(300*time.Millisecond), 2.5, latencies(500, 100)...)
	// --audit-every: A's immortal counts from the first second, B's from the
	// second; and per-second latencies, which cannot be added.
	for i, n := range []int64{1, 2, 2} {
		a.PerSecond[i].Immortal = ptr(n)
	}
	for i, n := range []int64{3, 4} {
		b.PerSecond[i+1].Immortal = ptr(n)
	}
	a.PerSecond[0].P50US, a.PerSecond[0].P99US = 110, 380
	m, err := merge.Merge([]merge.File{{Name: "a.json", Report: handReport("p1:", a)}, {Name: "b.json", Report: handReport("p2:", b)}})
	if err != nil {
		t.Fatal(err)
	}
	// From B's start (the common start), A's seconds (100, 100, 50
	// decisions) end at 0.7, 1.7, 2.2, midpoints 0.2, 1.2, 1.95; B's (200,
	// 200, 100) end at 1, 2, 2.5, midpoints 0.5, 1.5, 2.25. The last ends at
	// 2.5. Immortal counts add (A's latest, then B's), as the prefixes differ.
	want := []results.Second{
		{T: 1, Decisions: 100 + 200, Allowed: 100 + 200, Immortal: ptr[int64](1)},
		{T: 2, Decisions: 100 + 50 + 200, Allowed: 100 + 50 + 200, Immortal: ptr[int64](2 + 3)},
		{T: 2.5, Decisions: 100, Allowed: 100, Immortal: ptr[int64](2 + 4)},
	}
	got := m.Runs[0].PerSecond
	if len(got) != len(want) {
		t.Fatalf("per_second = %+v; want %+v", got, want)
	}
	for i := range want {
		if math.Abs(got[i].T-want[i].T) > 1e-9 || got[i].Decisions != want[i].Decisions || got[i].Allowed != want[i].Allowed ||
			got[i].Immortal == nil || *got[i].Immortal != *want[i].Immortal || got[i].P50US != 0 || got[i].P99US != 0 {
			t.Errorf("per_second[%d] = %+v (immortal %v); want %+v (immortal %d)", i, got[i], deref(got[i].Immortal), want[i], *want[i].Immortal)
		}
	}
	if !slices.ContainsFunc(m.Notes, func(n string) bool { return strings.HasPrefix(n, "per_second p50_us and p99_us cannot be added") }) {
		t.Errorf("Merge notes = %q; want one on per-second percentiles", m.Notes)
	}
}

// TestMergeRealRuns runs two rlbench loads at once against one server,
// each with its own prefix, merges their reports as read back from their
// JSON files, and checks the merge against the parts: the merged histogram
// is the sum of theirs, every count is their sum, and the throughput is the
// decisions over the common interval, computed here from the parts.
func TestMergeRealRuns(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	dir := t.TempDir()
	names := []string{"a", "b"}
	files := make([]merge.File, len(names))
	errs := make([]error, len(names))
	var wg sync.WaitGroup
	for i, name := range names {
		wg.Go(func() {
			rep, err := rlbench.Run(t.Context(), rlbench.Config{
				Strategies: []string{"lua"},
				Clients:    []string{"go-redis"},
				Workload:   workload.Config{Workers: 4, Duration: 1500 * time.Millisecond, Prefix: redistest.Prefix(t) + name + ":"},
				Targets:    []rlbench.TargetSpec{{Addr: srv.Addr()}},
			}, rlbench.Options{})
			if err != nil {
				errs[i] = err
				return
			}
			path := filepath.Join(dir, name+".json")
			var buf bytes.Buffer
			if err := results.JSON(rep)(&buf); err != nil {
				errs[i] = err
				return
			}
			if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
				errs[i] = err
				return
			}
			// Read back, as rlbench merge does: the figures as written.
			rep, err = results.ReadReportFile(path)
			files[i] = merge.File{Name: path, Report: rep}
			errs[i] = err
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	m, err := merge.Merge(files)
	if err != nil {
		t.Fatalf("Merge(two real runs) = %v; want nil", err)
	}
	if len(m.Runs) != 1 {
		t.Fatalf("Merge(two real runs) has %d runs; want 1", len(m.Runs))
	}
	got := m.Runs[0]
	a, b := &files[0].Report.Runs[0], &files[1].Report.Runs[0]
	t.Logf("encoded histogram: %d and %d bytes for %d and %d decisions; merged %d bytes", len(a.HistogramEncoded), len(b.HistogramEncoded), a.Decisions, b.Decisions, len(got.HistogramEncoded))

	// The histogram of all samples: the parts' histograms, added here.
	want := newHistogram()
	for _, r := range []*results.Run{a, b} {
		h, err := hdrhistogram.Decode([]byte(r.HistogramEncoded))
		if err != nil {
			t.Fatalf("decode %s's histogram: %v", r.Strategy, err)
		}
		if h.TotalCount() != r.Decisions {
			t.Errorf("a part's histogram holds %d latencies; want one per decision, %d", h.TotalCount(), r.Decisions)
		}
		want.Merge(h)
	}
	merged, err := hdrhistogram.Decode([]byte(got.HistogramEncoded))
	if err != nil {
		t.Fatalf("decode the merged histogram: %v", err)
	}
	for name, h := range map[string]*hdrhistogram.Histogram{"latency_histogram": merged, "Histogram": got.Histogram} {
		if !h.Equals(want) {
			t.Errorf("merged %s (%d values) differs from the parts' histograms added (%d values)", name, h.TotalCount(), want.TotalCount())
		}
		if !slices.Equal(h.Distribution(), want.Distribution()) {
			t.Errorf("merged %s's distribution differs from the parts' added", name)
		}
	}
	if want.TotalCount() != a.Decisions+b.Decisions || want.TotalCount() == 0 {
		t.Errorf("the parts' histograms hold %d latencies; want %d + %d > 0", want.TotalCount(), a.Decisions, b.Decisions)
	}
	if got.LatencyUS != results.LatencyOf(want) {
		t.Errorf("merged latency_us = %+v; want %+v", got.LatencyUS, results.LatencyOf(want))
	}
	if !slices.Equal(got.Percentiles, results.PercentilesOf(want)) {
		t.Errorf("merged latency_percentiles = %v; want %v", got.Percentiles, results.PercentilesOf(want))
	}
	for _, q := range []float64{50, 90, 99, 99.9, 99.99, 100} {
		if g, w := got.Histogram.ValueAtQuantile(q), want.ValueAtQuantile(q); g != w {
			t.Errorf("merged p%v = %d µs; want %d", q, g, w)
		}
	}

	// Counts sum exactly.
	sums := []struct {
		name      string
		got, a, b int64
	}{
		{"decisions", got.Decisions, a.Decisions, b.Decisions},
		{"allowed", got.Allowed, a.Allowed, b.Allowed},
		{"rejected", got.Rejected, a.Rejected, b.Rejected},
		{"errors", got.Errors, a.Errors, b.Errors},
		{"admitted", got.Admitted, a.Admitted, b.Admitted},
		{"script_fallbacks", got.ScriptFallbacks, a.ScriptFallbacks, b.ScriptFallbacks},
		{"clients", int64(got.Workers), int64(a.Workers), int64(b.Workers)},
		{"audit.keys", got.Audit.Keys, a.Audit.Keys, b.Audit.Keys},
	}
	for _, s := range sums {
		if s.got != s.a+s.b {
			t.Errorf("merged %s = %d; want %d + %d", s.name, s.got, s.a, s.b)
		}
	}
	var series int64
	for _, s := range got.PerSecond {
		series += s.Decisions
	}
	if series != got.Decisions {
		t.Errorf("merged per_second sums to %d decisions; want %d", series, got.Decisions)
	}

	// Throughput over the common interval, from the parts' own figures.
	endOf := func(r *results.Run) time.Time {
		return r.StartedAt.Add(time.Duration(math.Round(r.DurationS * 1e9)))
	}
	start, end := a.StartedAt, endOf(a)
	if b.StartedAt.After(start) {
		start = b.StartedAt
	}
	if endOf(b).Before(end) {
		end = endOf(b)
	}
	interval := end.Sub(start).Seconds()
	if interval <= 0 || interval > min(a.DurationS, b.DurationS) {
		t.Fatalf("common interval = %v s; want in (0, %v]", interval, min(a.DurationS, b.DurationS))
	}
	wantThr := float64(a.Decisions+b.Decisions) / interval
	if math.Abs(got.ThroughputPerS-wantThr) > 1e-9*wantThr || math.Abs(got.DurationS-interval) > 1e-9 {
		t.Errorf("merged throughput_per_s, duration_s = %v, %v; want %v, %v", got.ThroughputPerS, got.DurationS, wantThr, interval)
	}
	if !got.StartedAt.Equal(start) {
		t.Errorf("merged started_at = %v; want %v", got.StartedAt, start)
	}
	if len(got.Parts) != len(files) {
		t.Fatalf("merged parts = %d; want one per file (%d)", len(got.Parts), len(files))
	}
	for i, p := range got.Parts {
		r := &files[i].Report.Runs[0]
		if p.File != files[i].Name || p.ThroughputPerS != r.ThroughputPerS || !p.StartedAt.Equal(r.StartedAt) ||
			p.Environment == nil || *p.Environment != *r.Environment || p.Server != *r.Server {
			t.Errorf("merged parts[%d] = %+v; want %s's own figures", i, p, files[i].Name)
		}
	}
	t.Logf("parts started %v apart; common interval %.4f s of %.4f and %.4f s; throughput %.0f/s (parts %.0f + %.0f)",
		b.StartedAt.Sub(a.StartedAt), interval, a.DurationS, b.DurationS, got.ThroughputPerS, a.ThroughputPerS, b.ThroughputPerS)
}

// TestMergeAuditPerNode checks that the per-master audits of cluster runs
// add up by address (the parts' prefixes differ), a master one part does
// not name counting 0 there, and that runs without them stay without.
func TestMergeAuditPerNode(t *testing.T) {
	t.Parallel()
	files := twoReports(t)
	files[0].Report.Runs[0].AuditPerNode = map[string]results.Audit{
		"127.0.0.1:1": {Keys: 4, Immortal: 1},
		"127.0.0.1:2": {Keys: 6},
	}
	files[1].Report.Runs[0].AuditPerNode = map[string]results.Audit{
		"127.0.0.1:2": {Keys: 2, Immortal: 2},
		"127.0.0.1:3": {Keys: 1},
	}
	m, err := merge.Merge(files)
	if err != nil {
		t.Fatalf("Merge(two reports) = %v; want nil", err)
	}
	want := map[string]results.Audit{
		"127.0.0.1:1": {Keys: 4, Immortal: 1},
		"127.0.0.1:2": {Keys: 8, Immortal: 2},
		"127.0.0.1:3": {Keys: 1},
	}
	if got := m.Runs[0].AuditPerNode; !maps.Equal(got, want) {
		t.Errorf("lua audit_per_node = %v; want %v", got, want)
	}
	if got := m.Runs[1].AuditPerNode; got != nil {
		t.Errorf("naive audit_per_node = %v; want nil (a single server)", got)
	}
}
