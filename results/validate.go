package results

import (
	"fmt"
	"maps"
	"math"
	"slices"
)

// The bounds Validate holds a report's figures to. Each is far beyond what
// a run can produce, so that only a corrupted or hand-made file trips one.
const (
	// MaxThroughputPerS is the highest rate, in decisions (or requests) per
	// second, a report may state: 10^9, a thousand times what one Redis
	// core serves.
	MaxThroughputPerS = 1e9
	// MaxDurationS is the longest load phase a report may state, in
	// seconds: a year.
	MaxDurationS = 366 * 24 * 3600
	// MaxReportLatencyUS is the highest latency a report may state, in
	// microseconds: an hour (the Recorder clamps at MaxLatencyUS, 60 s).
	MaxReportLatencyUS = 3600e6
	// MaxCores is the most CPU cores a saturation figure may state.
	MaxCores = 1e4
	// ThroughputTolerance is how far, as a fraction, throughput_per_s may
	// be from decisions / duration_s.
	ThroughputTolerance = 0.01
)

// Validate checks that rep is a report rlbench could have written, and
// returns ErrNoRuns or ErrImplausible, naming the run and the field, if not:
//
//   - it has at least one run;
//   - every count is 0 or more: workers, decisions and their outcomes,
//     error kinds, admitted, script fallbacks, over-admission, cluster
//     errors, the audits', the per-second series', connections, peak RSS;
//   - allowed + rejected + errors is at most decisions (rlbench writes
//     them equal; a hand-abbreviated file may leave the outcomes out), and
//     the error kinds, when listed, add up to errors;
//   - duration_s is from 0 to MaxDurationS, throughput_per_s from 0 to
//     MaxThroughputPerS and, when duration_s is above 0, within
//     ThroughputTolerance of decisions / duration_s (a file without a
//     duration is not held to it);
//   - every latency (the summary, the percentile curve, the per-second
//     series, the open loop's uncorrected one) is from 0 to
//     MaxReportLatencyUS;
//   - an open loop's rates are from 0 to MaxThroughputPerS, its schedule
//     lag from 0 to MaxDurationS (in milliseconds, times 1,000);
//   - saturation's CPU figures are from 0 to MaxCores;
//   - the per-second series' and the faults' times are within MaxDurationS
//     of the start (a merged series may start before it).
//
// No figure may be NaN or infinite. JSON cannot carry those, but a Report
// built in Go can.
func Validate(rep *Report) error {
	if len(rep.Runs) == 0 {
		return ErrNoRuns
	}
	for i := range rep.Runs {
		r := &rep.Runs[i]
		c := checker{run: fmt.Sprintf("runs[%d] (%s/%s)", i, r.Strategy, r.Client)}
		c.load(&r.Load)
		c.groups(r)
		if c.err != nil {
			return c.err
		}
	}
	return nil
}

// checker keeps the first implausible figure of a run.
type checker struct {
	run string // names the run
	err error
}

func (c *checker) fail(field string, format string, args ...any) {
	if c.err == nil {
		c.err = fmt.Errorf("%s: %s: %w: %s", c.run, field, ErrImplausible, fmt.Sprintf(format, args...))
	}
}

// count checks that v is 0 or more.
func (c *checker) count(field string, v int64) {
	if v < 0 {
		c.fail(field, "%d is negative", v)
	}
}

// between checks that v is a number from lo to hi.
func (c *checker) between(field string, v, lo, hi float64) {
	if !(v >= lo && v <= hi) { // false for NaN
		c.fail(field, "%g is not from %g to %g", v, lo, hi)
	}
}

func (c *checker) latency(field string, l Latency) {
	for _, f := range []struct {
		name string
		v    float64
	}{{"p50", l.P50}, {"p90", l.P90}, {"p99", l.P99}, {"p999", l.P999}, {"max", l.Max}, {"mean", l.Mean}} {
		c.between(field+"."+f.name, f.v, 0, MaxReportLatencyUS)
	}
}

// load checks the Load group.
func (c *checker) load(l *Load) {
	for _, f := range []struct {
		name string
		v    int64
	}{{"decisions", l.Decisions}, {"allowed", l.Allowed}, {"rejected", l.Rejected}, {"errors", l.Errors}} {
		c.count(f.name, f.v)
	}
	if sum := l.Allowed + l.Rejected + l.Errors; c.err == nil && sum > l.Decisions {
		c.fail("decisions", "%d, but allowed + rejected + errors is %d", l.Decisions, sum)
	}
	var kinds int64
	for _, k := range slices.Sorted(maps.Keys(l.ErrorKinds)) {
		c.count("error_kinds."+k, l.ErrorKinds[k])
		kinds += l.ErrorKinds[k]
	}
	if c.err == nil && len(l.ErrorKinds) > 0 && kinds != l.Errors {
		c.fail("error_kinds", "they add up to %d, but errors is %d", kinds, l.Errors)
	}
	c.between("duration_s", l.DurationS, 0, MaxDurationS)
	c.between("throughput_per_s", l.ThroughputPerS, 0, MaxThroughputPerS)
	if c.err == nil && l.DurationS > 0 {
		want := float64(l.Decisions) / l.DurationS
		if math.Abs(l.ThroughputPerS-want) > ThroughputTolerance*want {
			c.fail("throughput_per_s", "%g, but decisions / duration_s is %g", l.ThroughputPerS, want)
		}
	}
	c.latency("latency_us", l.LatencyUS)
}

// groups checks the groups other than Load.
func (c *checker) groups(r *Run) {
	c.count("clients", int64(r.Workers))
	if ol := r.OpenLoop; ol != nil {
		if ol.LatencyUncorrectedUS != nil {
			c.latency("latency_uncorrected_us", *ol.LatencyUncorrectedUS)
		}
		c.between("target_rate_per_s", ol.Rate, 0, MaxThroughputPerS)
		c.between("achieved_rate_per_s", ol.AchievedRatePerS, 0, MaxThroughputPerS)
		c.between("schedule_lag_ms", ol.ScheduleLagMS, 0, MaxDurationS*1e3)
		c.between("schedule_lag_last_ms", ol.ScheduleLagLastMS, 0, MaxDurationS*1e3)
		c.count("unsent", ol.Unsent)
	}
	c.count("admitted", r.Admitted)
	for i, f := range r.Faults {
		c.between(fmt.Sprintf("faults[%d].at_s", i), f.AtS, -MaxDurationS, MaxDurationS)
		if f.FirstIncrements != nil {
			c.count(fmt.Sprintf("faults[%d].first_increments", i), *f.FirstIncrements)
		}
	}
	c.series(r.PerSecond)
	if r.OverAdmitted != nil {
		c.count("over_admitted", *r.OverAdmitted)
	}
	c.count("max_admitted_per_window_span", r.MaxAdmittedPerWindow)
	if s := r.Saturation; s != nil {
		c.between("saturation.client_cpu", s.ClientCPU, 0, MaxCores)
		c.between("saturation.server_cpu", s.ServerCPU, 0, MaxCores)
		c.count("saturation.client_cpus", int64(s.ClientCPUs))
		c.count("saturation.server_nodes", int64(s.ServerNodes))
		c.count("saturation.connections_opened", s.ConnectionsOpened)
		c.count("saturation.peak_rss_bytes", s.PeakRSSBytes)
	}
	c.count("script_fallbacks", r.ScriptFallbacks)
	for i, l := range r.Libraries {
		c.count(fmt.Sprintf("function_libraries[%d].reloads", i), l.Reloads)
	}
	c.failover(r.Failover)
	for _, k := range slices.Sorted(maps.Keys(r.ClusterErrors)) {
		c.count("cluster_errors."+k, r.ClusterErrors[k])
	}
	c.audit("audit", r.Audit)
	for _, addr := range slices.Sorted(maps.Keys(r.AuditPerNode)) {
		c.audit("audit_per_node."+addr, r.AuditPerNode[addr])
	}
	for i, p := range r.Percentiles {
		c.between(fmt.Sprintf("latency_percentiles[%d].q", i), p.Quantile, 0, 100)
		c.between(fmt.Sprintf("latency_percentiles[%d].us", i), p.ValueUS, 0, MaxReportLatencyUS)
	}
}

func (c *checker) audit(field string, a Audit) {
	c.count(field+".keys", a.Keys)
	c.count(field+".immortal", a.Immortal)
	c.count(field+".ttl_over_window", a.TTLOverWindow)
	c.count(field+".vanished", a.Vanished)
	c.count(field+".fields", a.Fields)
	c.count(field+".immortal_fields", a.ImmortalFields)
	c.count(field+".field_ttl_over_window", a.FieldTTLOverWindow)
	c.count(field+".hashes_expired", a.HashesExpired)
}

func (c *checker) series(secs []Second) {
	for i, s := range secs {
		field := fmt.Sprintf("per_second[%d]", i)
		c.between(field+".t_s", s.T, -MaxDurationS, MaxDurationS)
		c.count(field+".decisions", s.Decisions)
		c.count(field+".allowed", s.Allowed)
		c.count(field+".rejected", s.Rejected)
		c.count(field+".errors", s.Errors)
		c.between(field+".p50_us", s.P50US, 0, MaxReportLatencyUS)
		c.between(field+".p99_us", s.P99US, 0, MaxReportLatencyUS)
		if s.Immortal != nil {
			c.count(field+".immortal", *s.Immortal)
		}
		if c.err != nil {
			return
		}
	}
}
