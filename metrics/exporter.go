package metrics

import (
	"context"
	"maps"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/rlbench/rlbench/probe"
	"github.com/rlbench/rlbench/results"
)

// Metric names, with the labels target, strategy and client on each.
const (
	// DecisionsName counts decision attempts, with the labels outcome
	// (allowed, rejected or error) and error_kind (results.ErrorKind; ""
	// unless outcome is error).
	DecisionsName = "rlbench_decisions_total"
	// LatencyName is the latency histogram, in seconds (a simulated
	// crash's cut is not a latency: results.Recorder.Record).
	LatencyName = "rlbench_decision_latency_seconds"
	// InFlightName is the decisions sent and not yet answered.
	InFlightName = "rlbench_in_flight_requests"
	// ImmortalName is the periodic audit's latest count of immortal keys
	// (--audit-every); absent before its first audit.
	ImmortalName = "rlbench_immortal_keys"
	// FaultsName counts the faults injected, with the labels fault (its
	// kind: stall, restart, ...) and outcome (ok or error).
	FaultsName = "rlbench_faults_total"
	// MeasuringName is 1 while the cell's measured load runs, 0 after.
	MeasuringName = "rlbench_cell_measuring"
)

var cellLabels = []string{"target", "strategy", "client"}

var (
	decisionsDesc = prometheus.NewDesc(DecisionsName, "Rate-limit decision attempts, by outcome and error kind.", append(cellLabels, "outcome", "error_kind"), nil)
	latencyDesc   = prometheus.NewDesc(LatencyName, "Latency of a decision, in seconds (from its intended start in an open loop).", cellLabels, nil)
	inFlightDesc  = prometheus.NewDesc(InFlightName, "Decisions sent and not yet answered.", cellLabels, nil)
	immortalDesc  = prometheus.NewDesc(ImmortalName, "Keys with no TTL at the latest periodic audit (--audit-every).", cellLabels, nil)
	faultsDesc    = prometheus.NewDesc(FaultsName, "Faults injected, by kind and outcome.", append(cellLabels, "fault", "outcome"), nil)
	measuringDesc = prometheus.NewDesc(MeasuringName, "1 while the cell's measured load runs, 0 after it.", cellLabels, nil)
)

// Exporter is a prometheus.Collector of a run's cells. Its zero value is
// not usable: New makes one. It is safe for concurrent use.
type Exporter struct {
	mu    sync.Mutex
	cells []*cell
	reg   *prometheus.Registry
}

// cell is one cell's source of figures: its recorder while it measures,
// its final figures after.
type cell struct {
	labels  []string
	started time.Time
	// rec and immortal are the live sources, nil once the cell is done.
	rec      *results.Recorder
	immortal func() *int64
	// final holds the figures read when the cell ended.
	final *figures
	// faults counts the faults by kind and outcome; under Exporter.mu.
	faults map[[2]string]int64
}

// figures is what one read of a cell gives.
type figures struct {
	totals   results.Totals
	kinds    map[string]int64
	latency  latency
	inFlight int64
	immortal *int64
}

// New returns an Exporter with no cells, registered in a registry of its
// own beside the Go runtime's and the process' collectors.
func New() *Exporter {
	e := &Exporter{reg: prometheus.NewRegistry()}
	e.reg.MustRegister(e, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return e
}

// Handler serves the registry in every format Prometheus reads (the text
// format, and protobuf, which carries the native histogram).
func (e *Exporter) Handler() http.Handler {
	return promhttp.HandlerFor(e.reg, promhttp.HandlerOpts{})
}

// Gatherer is the Exporter's registry.
func (e *Exporter) Gatherer() prometheus.Gatherer { return e.reg }

// Probe returns the probe of a cell whose measured load is about to start
// (rlbench.LiveMetrics): its workers record into rec, which the probe's
// Start makes count the decisions in flight (TrackInFlight, before the
// load's first decision) as it adds the cell; immortal, when not nil,
// gives the periodic audit's latest count. It counts each injected fault
// as it ends (probe.FaultObserver); at its Stop, once rec holds the
// load's final figures, the cell's metrics stay at those.
func (e *Exporter) Probe(target, strategy, client string, rec *results.Recorder, immortal func() *int64) probe.Probe {
	return &cellProbe{e: e, c: &cell{
		labels: []string{target, strategy, client},
		rec:    rec, immortal: immortal, faults: make(map[[2]string]int64),
	}}
}

// cellProbe is one cell's probe.
type cellProbe struct {
	e *Exporter
	c *cell
}

// Start adds the cell, live.
func (p *cellProbe) Start(context.Context) {
	p.c.rec.TrackInFlight() // before the load's first decision
	p.c.started = time.Now()
	p.e.mu.Lock()
	p.e.cells = append(p.e.cells, p.c)
	p.e.mu.Unlock()
}

// Fault counts ev by kind and outcome.
func (p *cellProbe) Fault(ev results.FaultEvent) {
	outcome := "ok"
	if ev.Error != "" {
		outcome = "error"
	}
	p.e.mu.Lock()
	p.c.faults[[2]string{ev.Kind(), outcome}]++
	p.e.mu.Unlock()
}

// Stop reads the cell's final figures, which its metrics then keep.
func (p *cellProbe) Stop(context.Context, time.Time) {
	c := p.c
	f := read(c.rec, c.immortal)
	f.inFlight = 0
	p.e.mu.Lock()
	c.final, c.rec, c.immortal = &f, nil, nil
	p.e.mu.Unlock()
}

// Report fills nothing: the run's figures are the recorder's.
func (p *cellProbe) Report(*results.Run) {}

var _ probe.FaultObserver = (*cellProbe)(nil)

// read reads a live cell's figures.
func read(rec *results.Recorder, immortal func() *int64) figures {
	t, h := rec.Snapshot()
	f := figures{totals: t, kinds: rec.ErrorKinds(), latency: latencyOf(h), inFlight: rec.InFlight(t)}
	if immortal != nil {
		f.immortal = immortal()
	}
	return f
}

// Describe sends the descriptions of the cells' metrics.
func (e *Exporter) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{decisionsDesc, latencyDesc, inFlightDesc, immortalDesc, faultsDesc, measuringDesc} {
		ch <- d
	}
}

// Collect reads every cell: a live one's recorder (its shards' locks in
// turn, as the progress line's once-a-second read does), a finished one's
// final figures.
func (e *Exporter) Collect(ch chan<- prometheus.Metric) {
	e.mu.Lock()
	cells := slices.Clone(e.cells)
	faults := make([]map[[2]string]int64, len(cells))
	for i, c := range cells {
		faults[i] = maps.Clone(c.faults)
	}
	e.mu.Unlock()
	for i, c := range cells {
		e.mu.Lock()
		rec, immortal, final := c.rec, c.immortal, c.final
		e.mu.Unlock()
		var f figures
		measuring := 1.0
		if final != nil {
			f, measuring = *final, 0
		} else {
			f = read(rec, immortal)
		}
		collectCell(ch, c, f, measuring, faults[i])
	}
}

// collectCell sends one cell's metrics.
func collectCell(ch chan<- prometheus.Metric, c *cell, f figures, measuring float64, faults map[[2]string]int64) {
	l := c.labels
	counter := func(v int64, outcome, kind string) {
		ch <- prometheus.MustNewConstMetric(decisionsDesc, prometheus.CounterValue, float64(v), append(slices.Clone(l), outcome, kind)...)
	}
	counter(f.totals.Allowed, "allowed", "")
	counter(f.totals.Rejected, "rejected", "")
	for _, k := range slices.Sorted(maps.Keys(f.kinds)) {
		counter(f.kinds[k], "error", k)
	}
	if m, err := f.latency.metric(latencyDesc, c.started, l...); err == nil {
		ch <- m
	} else {
		ch <- prometheus.NewInvalidMetric(latencyDesc, err)
	}
	ch <- prometheus.MustNewConstMetric(inFlightDesc, prometheus.GaugeValue, float64(f.inFlight), l...)
	ch <- prometheus.MustNewConstMetric(measuringDesc, prometheus.GaugeValue, measuring, l...)
	if f.immortal != nil {
		ch <- prometheus.MustNewConstMetric(immortalDesc, prometheus.GaugeValue, float64(*f.immortal), l...)
	}
	for k, n := range faults {
		ch <- prometheus.MustNewConstMetric(faultsDesc, prometheus.CounterValue, float64(n), append(slices.Clone(l), k[0], k[1])...)
	}
}
