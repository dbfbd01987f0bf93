package metrics_test

import (
	"bytes"
	"context"
	"net/http"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/rlbench/rlbench"
	"github.com/rlbench/rlbench/faults"
	"github.com/rlbench/rlbench/internal/redistest"
	"github.com/rlbench/rlbench/metrics"
	"github.com/rlbench/rlbench/results"
	"github.com/rlbench/rlbench/workload"
)

// scrape reads url in Prometheus' text format.
func scrape(t *testing.T, url string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", url, resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parse %s: %v", url, err)
	}
	return mfs
}

// value sums the values of family name's series whose labels include want.
func value(mfs map[string]*dto.MetricFamily, name string, want map[string]string) float64 {
	var sum float64
	mf := mfs[name]
	if mf == nil {
		return 0
	}
series:
	for _, m := range mf.GetMetric() {
		got := map[string]string{}
		for _, l := range m.GetLabel() {
			got[l.GetName()] = l.GetValue()
		}
		for k, v := range want {
			if got[k] != v {
				continue series
			}
		}
		switch {
		case m.Counter != nil:
			sum += m.GetCounter().GetValue()
		case m.Gauge != nil:
			sum += m.GetGauge().GetValue()
		case m.Histogram != nil:
			sum += float64(m.GetHistogram().GetSampleCount())
		}
	}
	return sum
}

// TestLiveMetricsMatchTheJSON scrapes --metrics-addr's server over HTTP
// while a run measures and once it has ended: during the run it shows a
// cell measuring with decisions counted; at the end every cell's
// decisions by outcome and error kind, its latency count and its faults are
// those of the run's JSON, nothing is in flight, and the periodic audit's
// immortal count is there. During the run, decisions are in flight.
func TestLiveMetricsMatchTheJSON(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	exp := metrics.New()
	ms, err := metrics.Listen("127.0.0.1:0", exp)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ms.Close(context.Background()) })
	kill, err := faults.Parse("kill-clients@1s")
	if err != nil {
		t.Fatal(err)
	}
	cfg := rlbench.Config{
		Targets: []rlbench.TargetSpec{{Addr: srv.Addr()}}, Strategies: []string{"lua", "incr-expire"}, Clients: []string{"go-redis"},
		Workload:   workload.Config{Workers: 8, Keys: 20, Duration: 3 * time.Second, Prefix: redistest.Prefix(t)},
		AuditEvery: 500 * time.Millisecond, Faults: []faults.Fault{kill},
	}
	type outcome struct {
		rep *results.Report
		err error
	}
	ran := make(chan outcome, 1)
	go func() {
		rep, err := rlbench.Run(t.Context(), cfg, rlbench.Options{Metrics: exp})
		ran <- outcome{rep, err}
	}()
	var res outcome
	sawLive, sawInFlight := false, false
	var lastDecisions float64
	deadline := time.Now().Add(60 * time.Second)
poll:
	for {
		select {
		case res = <-ran:
			break poll
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatal("the run did not end within 60s")
		}
		mfs := scrape(t, ms.URL())
		if value(mfs, metrics.MeasuringName, nil) == 1 && value(mfs, metrics.DecisionsName, nil) > 0 {
			sawLive = true
		}
		// A counter never goes down, scrape after scrape.
		n := value(mfs, metrics.DecisionsName, nil)
		if n < lastDecisions {
			t.Errorf("%s fell from %v to %v between two scrapes", metrics.DecisionsName, lastDecisions, n)
		}
		lastDecisions = n
		if value(mfs, metrics.InFlightName, nil) > 0 {
			sawInFlight = true
		}
	}
	if res.err != nil {
		t.Fatalf("Run = %v", res.err)
	}
	if !sawInFlight {
		t.Error("no scrape during the run showed a decision in flight (8 workers in a closed loop)")
	}
	if !sawLive {
		t.Error("no scrape during the run showed a cell measuring with decisions counted")
	}
	// The JSON, read back as rlbench compare reads it.
	var buf bytes.Buffer
	if err := results.JSON(res.rep)(&buf); err != nil {
		t.Fatal(err)
	}
	rep, err := results.ReadReport(&buf)
	if err != nil {
		t.Fatal(err)
	}
	mfs := scrape(t, ms.URL())
	var total int64
	for _, r := range rep.Runs {
		total += r.Decisions
	}
	if got := value(mfs, metrics.DecisionsName, nil); got != float64(total) || lastDecisions > got {
		t.Errorf("%s = %v at the end, %v at the last scrape during the run; want the JSON's %d, and no more during", metrics.DecisionsName, got, lastDecisions, total)
	}
	if len(rep.Runs) != 2 {
		t.Fatalf("%d runs; want 2", len(rep.Runs))
	}
	for _, r := range rep.Runs {
		cell := map[string]string{"strategy": r.Strategy, "client": r.Client}
		with := func(k, v string) map[string]string {
			m := map[string]string{k: v}
			for ck, cv := range cell {
				m[ck] = cv
			}
			return m
		}
		checks := []struct {
			what      string
			got, want float64
		}{
			{"allowed", value(mfs, metrics.DecisionsName, with("outcome", "allowed")), float64(r.Allowed)},
			{"rejected", value(mfs, metrics.DecisionsName, with("outcome", "rejected")), float64(r.Rejected)},
			{"errors", value(mfs, metrics.DecisionsName, with("outcome", "error")), float64(r.Errors)},
			{"latency count", value(mfs, metrics.LatencyName, cell), float64(r.Decisions - r.ErrorKinds[results.KindCrashed])},
			{"in flight", value(mfs, metrics.InFlightName, cell), 0},
			{"measuring", value(mfs, metrics.MeasuringName, cell), 0},
			{"faults", value(mfs, metrics.FaultsName, cell), float64(len(r.Faults))},
			{"fault kill-clients", value(mfs, metrics.FaultsName, with("fault", faults.KillClients)), 1},
		}
		for kind, n := range r.ErrorKinds {
			checks = append(checks, struct {
				what      string
				got, want float64
			}{"error kind " + kind, value(mfs, metrics.DecisionsName, with("error_kind", kind)), float64(n)})
		}
		for _, c := range checks {
			if c.got != c.want {
				t.Errorf("%s/%s: scraped %s = %v; want the JSON's %v", r.Strategy, r.Client, c.what, c.got, c.want)
			}
		}
		if r.Decisions == 0 {
			t.Errorf("%s/%s: no decisions", r.Strategy, r.Client)
		}
		if mf := mfs[metrics.ImmortalName]; mf == nil || value(mfs, metrics.ImmortalName, cell) < 0 || len(mf.GetMetric()) != 2 {
			t.Errorf("%s/%s: no immortal count from the periodic audit: %v", r.Strategy, r.Client, mf)
		}
	}
}
