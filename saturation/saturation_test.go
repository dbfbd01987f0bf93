package saturation

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

var t0 = time.Date(2026, 11, 29, 19, 40, 0, 0, time.UTC)

// sample builds a Sample at t0+at with the given CPU times, in seconds, for
// a client with two CPUs.
func sample(at, processCPU, serverCPU float64, conns int64) Sample {
	return sampleCPUs(at, processCPU, serverCPU, conns, 2)
}

// sampleCPUs is sample for a client with cpus CPUs (0: unknown).
func sampleCPUs(at, processCPU, serverCPU float64, conns int64, cpus int) Sample {
	sec := func(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }
	return Sample{At: t0.Add(sec(at)), ProcessCPU: sec(processCPU), ProcessCPUs: cpus, ServerCPU: sec(serverCPU), ServerConnsReceived: conns}
}

func TestCompare(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name          string
		before, after Sample
		wantClient    float64
		wantServer    float64
		wantConns     int64
		want          string // the whole verdict
	}{
		// Redis's main thread near one core: it cannot go faster.
		{name: "server saturated", before: sample(0, 1, 2, 10), after: sample(10, 6, 11.5, 510), wantClient: 0.5, wantServer: 0.95, wantConns: 500, want: serverBound},
		// 0.9 core is already server-bound.
		{name: "server at the threshold", before: sample(0, 0, 0, 0), after: sample(10, 2, 9, 0), wantClient: 0.2, wantServer: 0.9, want: serverBound},
		// More cores than the server, but a smaller share of its two CPUs:
		// the server's limit comes first.
		{name: "client busier, server saturated", before: sample(0, 0, 0, 0), after: sample(10, 12, 9.5, 0), wantClient: 1.2, wantServer: 0.95, want: serverBound},
		// Measured on the 2-core machine: rlbench/go-redis, 500 workers, one
		// CPU: the client ran out first while the server slept at times.
		{name: "client at its limit first", before: sample(0, 0, 0, 0), after: sampleCPUs(10, 9.77, 9.35, 0, 1), wantClient: 0.977, wantServer: 0.935, want: clientBusy},
		// Both near their limits, the server nearer.
		{name: "server at its limit first", before: sample(0, 0, 0, 0), after: sampleCPUs(10, 9.5, 9.7, 0, 1), wantClient: 0.95, wantServer: 0.97, want: serverBound},
		// Equal shares: the server's limit wins.
		{name: "equal shares at the limit", before: sample(0, 0, 0, 0), after: sampleCPUs(10, 9.5, 9.5, 0, 1), wantClient: 0.95, wantServer: 0.95, want: serverBound},
		// Threads in system calls can take a Go process past GOMAXPROCS; its
		// share stops at 1.
		{name: "client past its CPUs", before: sample(0, 0, 0, 0), after: sampleCPUs(10, 10.5, 9.99, 0, 1), wantClient: 1.05, wantServer: 0.999, want: clientBusy},
		{name: "client past its CPUs, server at one core", before: sample(0, 0, 0, 0), after: sampleCPUs(10, 10.5, 10, 0, 1), wantClient: 1.05, wantServer: 1, want: serverBound},
		// Shares are rounded before the rule: 2.85 cores of 3 CPUs is 0.95,
		// a tie that the server wins; 8.1 of 9 is 0.9, which is busy.
		{name: "rounded tie, 3 CPUs", before: sample(0, 0, 0, 0), after: sampleCPUs(10, 28.5, 9.5, 0, 3), wantClient: 2.85, wantServer: 0.95, want: serverBound},
		{name: "rounded threshold, 9 CPUs", before: sample(0, 0, 0, 0), after: sampleCPUs(10, 81, 8.5, 0, 9), wantClient: 8.1, wantServer: 0.85, want: clientBusy},
		// The client's CPUs unknown: a saturated server is server-bound,
		// and a busier client next to a server with room is client-bound.
		{name: "CPUs unknown, server saturated", before: sample(0, 0, 0, 0), after: sampleCPUs(10, 12, 9.5, 0, 0), wantClient: 1.2, wantServer: 0.95, want: serverBound},
		{name: "CPUs unknown, server has room", before: sample(0, 0, 0, 0), after: sampleCPUs(10, 9.8, 8.5, 0, 0), wantClient: 0.98, wantServer: 0.85, want: clientSpare},
		// Rounding to 0.001 core happens before the rule: 0.89996 shows and counts as 0.9.
		{name: "server rounded up to the threshold", before: sample(0, 0, 0, 0), after: sample(10, 1, 8.9996, 0), wantClient: 0.1, wantServer: 0.9, want: serverBound},
		// Just under the threshold, with a lighter client: fine.
		{name: "server just under, client lighter", before: sample(0, 0, 0, 0), after: sample(10, 2, 8.99, 0), wantClient: 0.2, wantServer: 0.899},
		// Measured on the 2-core machine: rlbench/rueidis against a server
		// that redis-benchmark -P 16 drove to 0.97.
		{name: "client busier, server has room", before: sample(0, 0, 0, 0), after: sample(10, 9.1, 8.2, 0), wantClient: 0.91, wantServer: 0.82, want: clientSpare},
		// Latency-bound with few workers: the client's share of the round trip is larger.
		{name: "light load, client busier", before: sample(0, 0, 0, 0), after: sample(10, 3, 1, 0), wantClient: 0.3, wantServer: 0.1, want: clientSpare},
		// Equal CPU: the client is not the busier one.
		{name: "equal CPU", before: sample(0, 0, 0, 0), after: sample(10, 8.6, 8.6, 0), wantClient: 0.86, wantServer: 0.86},
		// The server busier than the client, neither saturated.
		{name: "server busier, not saturated", before: sample(0, 0, 0, 0), after: sample(10, 5, 7, 0), wantClient: 0.5, wantServer: 0.7},
		// Under 0.1 core the run is too idle to judge.
		{name: "idle client", before: sample(0, 0, 0, 0), after: sample(10, 0.99, 0.1, 0), wantClient: 0.099, wantServer: 0.01},
		// 0.1 core is enough.
		{name: "client at the idle threshold", before: sample(0, 0, 0, 0), after: sample(10, 1, 0.1, 0), wantClient: 0.1, wantServer: 0.01, want: clientSpare},
		// The samples' own zero points cancel out.
		{name: "differences, not totals", before: sample(100, 50, 400, 1000), after: sample(104, 52, 402, 1003), wantClient: 0.5, wantServer: 0.5, wantConns: 3},
		// No wall time: no CPU figures and no verdict, but connections still count.
		{name: "zero wall time", before: sample(5, 0, 0, 7), after: sample(5, 1, 1, 9), wantConns: 2},
		// Samples in the wrong order are treated like zero wall time.
		{name: "after before before", before: sample(5, 0, 0, 0), after: sample(4, 1, 1, 0)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.after.PeakRSSBytes = 64 << 20
			got := Compare([]Sample{tc.before}, []Sample{tc.after})
			if got.ClientCPU != tc.wantClient || got.ServerCPU != tc.wantServer || got.ConnectionsOpened != tc.wantConns || got.Verdict != tc.want {
				t.Errorf("Compare(%+v, %+v) = %+v; want client_cpu %v, server_cpu %v, connections %d, verdict %q",
					tc.before, tc.after, got, tc.wantClient, tc.wantServer, tc.wantConns, tc.want)
			}
			if got.ClientCPUs != tc.after.ProcessCPUs {
				t.Errorf("Compare(...).ClientCPUs = %d; want the later sample's %d", got.ClientCPUs, tc.after.ProcessCPUs)
			}
			if got.PeakRSSBytes != 64<<20 {
				t.Errorf("Compare(...).PeakRSSBytes = %d; want the later sample's %d", got.PeakRSSBytes, 64<<20)
			}
		})
	}
}

func TestVerdictText(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		client float64
		cpus   int
		server float64
		want   string
	}{
		{name: "server-bound", client: 0.5, cpus: 1, server: 0.95, want: "server-bound: redis-server's one main thread was busy: the figures measure Redis"},
		{name: "client-bound at its limit", client: 0.98, cpus: 1, server: 0.93, want: "client-bound: rlbench's CPUs were busier than redis-server's main thread: the figures measure rlbench, not Redis"},
		{name: "client-bound, server with room", client: 0.91, cpus: 2, server: 0.82, want: "client-bound: Redis had CPU to spare: the figures measure rlbench, not Redis"},
		{name: "fine", client: 0.5, cpus: 1, server: 0.7, want: ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := verdict(tc.client, tc.cpus, tc.server); got != tc.want {
				t.Errorf("verdict(%v, %d, %v) = %q; want %q", tc.client, tc.cpus, tc.server, got, tc.want)
			}
		})
	}
}

// infoText is a trimmed INFO reply from redis-server 7.0.15.
const infoText = "# Server\r\nredis_version:7.0.15\r\nrun_id:3f1e0c0ffee\r\n\r\n# Stats\r\ntotal_connections_received:42\r\ntotal_commands_processed:1000\r\n\r\n" +
	"# CPU\r\nused_cpu_sys:1.250000\r\nused_cpu_user:2.500001\r\nused_cpu_sys_children:0.000000\r\n"

func TestParseInfo(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		text      string
		wantCPU   time.Duration
		wantConns int64
		wantErr   string // a substring of the error; "" for none
	}{
		{name: "redis 7", text: infoText, wantCPU: 3750001 * time.Microsecond, wantConns: 42},
		{name: "no cpu section", text: "# Stats\r\ntotal_connections_received:1\r\n", wantErr: "no used_cpu_user field"},
		{name: "no stats section", text: "used_cpu_user:1\r\nused_cpu_sys:1\r\n", wantErr: "no total_connections_received field"},
		{name: "bad cpu", text: "used_cpu_user:x\r\nused_cpu_sys:1\r\ntotal_connections_received:1\r\n", wantErr: `used_cpu_user: not a number of seconds: "x"`},
		{name: "negative cpu", text: "used_cpu_user:1\r\nused_cpu_sys:-1\r\ntotal_connections_received:1\r\n", wantErr: "used_cpu_sys"},
		{name: "bad connections", text: "used_cpu_user:1\r\nused_cpu_sys:1\r\ntotal_connections_received:1.5\r\n", wantErr: "total_connections_received"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := parseInfo(tc.text)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Errorf("parseInfo(%q) = (%+v, %v); want an error containing %q", tc.text, got, err, tc.wantErr)
				}
				return
			}
			if tc.text == infoText && got.ServerRunID != "3f1e0c0ffee" {
				t.Errorf("parseInfo(%q) run id = %q; want 3f1e0c0ffee", tc.text, got.ServerRunID)
			}
			if err != nil || got.ServerCPU != tc.wantCPU || got.ServerConnsReceived != tc.wantConns {
				t.Errorf("parseInfo(%q) = (cpu %v, conns %d, %v); want (cpu %v, conns %d, nil)", tc.text, got.ServerCPU, got.ServerConnsReceived, err, tc.wantCPU, tc.wantConns)
			}
		})
	}
}

// fakeInfo answers INFO with fixed text or an error.
type fakeInfo struct {
	text string
	err  error
}

func (f fakeInfo) Info(ctx context.Context, _ ...string) *redis.StringCmd {
	cmd := redis.NewStringCmd(ctx, "info")
	cmd.SetVal(f.text)
	cmd.SetErr(f.err)
	return cmd
}

func TestTakeFillsProcessFields(t *testing.T) {
	t.Parallel()
	s, err := Take(t.Context(), fakeInfo{text: infoText})
	if err != nil {
		t.Fatalf("Take(INFO from redis 7) error = %v; want nil", err)
	}
	if s.At.IsZero() || s.ProcessCPU <= 0 || s.PeakRSSBytes <= 0 {
		t.Errorf("Take(INFO from redis 7) = %+v; want At, ProcessCPU and PeakRSSBytes set", s)
	}
	if s.ServerCPU != 3750001*time.Microsecond || s.ServerConnsReceived != 42 {
		t.Errorf("Take(INFO from redis 7) = server cpu %v, conns %d; want 3.750001s, 42", s.ServerCPU, s.ServerConnsReceived)
	}
}

func TestTakeWrapsInfoError(t *testing.T) {
	t.Parallel()
	down := errors.New("connection refused")
	_, err := Take(t.Context(), fakeInfo{err: down})
	if !errors.Is(err, down) || !strings.HasPrefix(err.Error(), "saturation: info: ") {
		t.Errorf("Take(failing INFO) error = %v; want %q wrapping %v", err, "saturation: info: ...", down)
	}
}

func TestReportLoad(t *testing.T) {
	t.Parallel()
	rep := Report{ClientCPU: 0.977, ServerCPU: 0.935, ConnectionsOpened: 500, PeakRSSBytes: 135 << 20}
	tests := []struct {
		cpus int
		want string
	}{
		{cpus: 0, want: "cores 0.98, server 0.94; 500 connections, peak RSS 135 MiB"},
		{cpus: 1, want: "cores 0.98 of 1, server 0.94; 500 connections, peak RSS 135 MiB"},
		{cpus: 4, want: "cores 0.98 of 4, server 0.94; 500 connections, peak RSS 135 MiB"},
	}
	for _, tc := range tests {
		rep.ClientCPUs = tc.cpus
		if got := rep.Load(); got != tc.want {
			t.Errorf("Load() with %d CPUs = %q; want %q", tc.cpus, got, tc.want)
		}
	}
	// rueidis multiplexes its workers over one connection.
	one := Report{ClientCPU: 0.62, ClientCPUs: 1, ServerCPU: 0.98, ConnectionsOpened: 1, PeakRSSBytes: 72 << 20}
	if got, want := one.Load(), "cores 0.62 of 1, server 0.98; 1 connection, peak RSS 72 MiB"; got != want {
		t.Errorf("Load() with one connection = %q; want %q", got, want)
	}
}

// TestCompareNodes checks Compare on a server of three nodes: the busiest node's CPU
// and verdict, every node's connections, the client from the first pair.
func TestCompareNodes(t *testing.T) {
	t.Parallel()
	before := []Sample{sampleCPUs(0, 0, 1, 10, 1), sampleCPUs(0, 0, 2, 20, 1), sampleCPUs(0, 0, 3, 30, 1)}
	tests := []struct {
		name  string
		after []Sample
		want  Report
	}{
		// One node at 0.95: the cluster is server-bound although the
		// others had room.
		{name: "one node saturated", after: []Sample{sampleCPUs(10, 6, 4, 74, 1), sampleCPUs(10, 6, 11.5, 84, 1), sampleCPUs(10, 6, 7, 94, 1)},
			want: Report{ClientCPU: 0.6, ClientCPUs: 1, ServerCPU: 0.95, ServerNodes: 3, ConnectionsOpened: 192, Verdict: serverBound}},
		// No node near its limit, the client busier than the busiest.
		{name: "all with room", after: []Sample{sampleCPUs(10, 9.5, 4, 11, 1), sampleCPUs(10, 9.5, 6, 21, 1), sampleCPUs(10, 9.5, 8, 31, 1)},
			want: Report{ClientCPU: 0.95, ClientCPUs: 1, ServerCPU: 0.5, ServerNodes: 3, ConnectionsOpened: 3, Verdict: clientBusy}},
		// A node missing after: not the same nodes, no figures.
		{name: "fewer afters", after: []Sample{sampleCPUs(10, 1, 2, 12, 1)}, want: Report{}},
		{name: "no afters", after: nil, want: Report{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := Compare(before, tc.after); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Compare(%v, %v) = %+v; want %+v", before, tc.after, got, tc.want)
			}
		})
	}
}

func TestReportLoadNodes(t *testing.T) {
	t.Parallel()
	rep := Report{ClientCPU: 0.6, ClientCPUs: 1, ServerCPU: 0.95, ServerNodes: 3, ConnectionsOpened: 192, PeakRSSBytes: 60 << 20}
	if got, want := rep.Load(), "cores 0.60 of 1, server 0.95 (the busiest of 3 nodes); 192 connections, peak RSS 60 MiB"; got != want {
		t.Errorf("Load() = %q; want %q", got, want)
	}
}

// TestPerDecision checks the CPU per decision of one server and of three
// nodes: the process's and every node's CPU time over the decisions.
func TestPerDecision(t *testing.T) {
	t.Parallel()
	// One server: the client used 2 s and the server 1.5 s for a million
	// decisions.
	one := Compare([]Sample{sample(0, 1, 3, 10)}, []Sample{sample(5, 3, 4.5, 10)})
	PerDecision(&one, []Sample{sample(0, 1, 3, 10)}, []Sample{sample(5, 3, 4.5, 10)}, 1_000_000)
	if one.ClientCPUPerDecisionUS != 2 || one.ServerCPUPerDecisionUS != 1.5 || one.NodeCPUPerDecisionUS != nil {
		t.Errorf("PerDecision(one server, 1e6 decisions) = %+v; want client 2 µs, server 1.5 µs, no nodes", one)
	}
	// Three nodes: 0.3 + 0.5 + 0.2 s of server CPU over 400,000 decisions.
	before := []Sample{sampleCPUs(0, 0, 1, 10, 1), sampleCPUs(0, 0, 2, 20, 1), sampleCPUs(0, 0, 3, 30, 1)}
	after := []Sample{sampleCPUs(10, 0.4, 1.3, 10, 1), sampleCPUs(10, 0.4, 2.5, 20, 1), sampleCPUs(10, 0.4, 3.2, 30, 1)}
	var nodes Report
	PerDecision(&nodes, before, after, 400_000)
	want := Report{ClientCPUPerDecisionUS: 1, ServerCPUPerDecisionUS: 2.5, NodeCPUPerDecisionUS: []float64{0.75, 1.25, 0.5}}
	if !reflect.DeepEqual(nodes, want) {
		t.Errorf("PerDecision(three nodes, 4e5 decisions) = %+v; want %+v", nodes, want)
	}
	if got, wantLine := nodes.Load(), "CPU per decision rlbench 1.00 µs, server 2.50 µs (nodes 0.75 + 1.25 + 0.50); cores 0.00, server 0.00; 0 connections, peak RSS 0 MiB"; got != wantLine {
		t.Errorf("Load() = %q; want %q", got, wantLine)
	}
	// No decisions, or samples that do not pair: absent.
	var none Report
	PerDecision(&none, before, after, 0)
	PerDecision(&none, before, after[:1], 10)
	if !reflect.DeepEqual(none, Report{}) {
		t.Errorf("PerDecision(no decisions; unpaired samples) = %+v; want nothing set", none)
	}
}
