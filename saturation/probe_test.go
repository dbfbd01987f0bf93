package saturation_test

import (
	"context"
	"testing"
	"time"

	"github.com/rlbench/rlbench/results"
	"github.com/rlbench/rlbench/saturation"
)

// readings returns a read function that gives rs in turn, as a target's
// Sample would at the cell's start, before and after its load.
func readings(rs ...saturation.Reading) func(context.Context) (saturation.Reading, error) {
	return func(context.Context) (saturation.Reading, error) {
		r := rs[0]
		if len(rs) > 1 {
			rs = rs[1:]
		}
		return r, nil
	}
}

// TestProbeReport checks when the self-check is reported, and with a
// verdict: left out when the readings come from another server process
// behind the same address (a Sentinel master failed over by hand: the admin
// connection follows it) or a fault changed the masters; without a verdict
// for a load of no decision, an open loop that kept its schedule or a
// stall.
func TestProbeReport(t *testing.T) {
	t.Parallel()
	at := time.Now()
	reading := func(runID string, cpu, when time.Duration) saturation.Reading {
		return saturation.Reading{Addrs: []string{"FailoverClient"}, Samples: []saturation.Sample{{At: at.Add(when), ServerCPU: cpu, ServerRunID: runID, ProcessCPUs: 1}}}
	}
	same := []saturation.Reading{reading("a", 0, 0), reading("a", 0, 0), reading("a", 2*time.Second, 2*time.Second)}
	tests := []struct {
		name     string
		readings []saturation.Reading
		run      results.Run
		// reported and verdict are what Report gives.
		reported, verdict bool
	}{
		{"one server", same, results.Run{Load: results.Load{Decisions: 10}}, true, true},
		{"another server after the load", []saturation.Reading{reading("a", 0, 0), reading("a", 0, 0), reading("b", time.Second, 2*time.Second)},
			results.Run{Load: results.Load{Decisions: 10}}, false, false},
		{"another server once connected", []saturation.Reading{reading("a", 0, 0), reading("b", 0, 0), reading("b", time.Second, 2*time.Second)},
			results.Run{Load: results.Load{Decisions: 10}}, false, false},
		{"a restart", same, results.Run{Load: results.Load{Decisions: 10}, Faults: []results.FaultEvent{{Fault: "restart@1s"}}}, false, false},
		{"a stall", same, results.Run{Load: results.Load{Decisions: 10}, Faults: []results.FaultEvent{{Fault: "stall@1s:100ms"}}}, true, false},
		{"no decision", same, results.Run{}, true, false},
		{"an open loop on schedule", same, results.Run{Load: results.Load{Decisions: 10}, OpenLoop: &results.OpenLoop{Rate: 100}}, true, false},
		{"an open loop behind", same, results.Run{Load: results.Load{Decisions: 10}, OpenLoop: &results.OpenLoop{Rate: 100, RateNote: "not reached"}}, true, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			p := saturation.NewProbe(ctx, readings(tc.readings...))
			p.Start(ctx)
			p.Stop(ctx, at)
			run := tc.run
			p.Report(&run)
			switch {
			case run.Saturation == nil:
				if tc.reported {
					t.Fatalf("Report() left Saturation nil; want a report")
				}
			case !tc.reported:
				t.Errorf("Report() = %+v; want nil", *run.Saturation)
			case (run.Saturation.Verdict != "") != tc.verdict:
				t.Errorf("Report() verdict %q; want one: %t", run.Saturation.Verdict, tc.verdict)
			}
		})
	}
}

// TestProbeRestarted checks that a server restarted since the cell's
// client connected is named, from a new reading when the one after the
// load failed.
func TestProbeRestarted(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := func(runID string) saturation.Reading {
		return saturation.Reading{Addrs: []string{"a:1"}, Samples: []saturation.Sample{{ServerRunID: runID}}}
	}
	p := saturation.NewProbe(ctx, readings(r("r1"), r("r1"), saturation.Reading{}, r("r2")))
	p.Start(ctx)
	p.Stop(ctx, time.Now())
	if got, want := p.Restarted(ctx), "a:1 (run_id r1, then r2)"; got != want {
		t.Errorf("Restarted() = %q; want %q", got, want)
	}
}
