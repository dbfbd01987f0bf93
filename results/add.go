package results

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// The Add methods combine the runs of one cell that several load
// generators made against one target at the same time (package merge): r
// is the combination so far, o one more generator's run. Each says what
// it adds, what it keeps and what it takes the largest of.

// Add adds o's workers and keeps r's identity; client options that differ
// are joined with " | ", and an environment that differs is dropped (each
// generator keeps its own in merge's parts).
func (c *Cell) Add(o Cell) {
	c.Workers += o.Workers
	c.ClientOptions = joinDistinct(c.ClientOptions, o.ClientOptions, " | ")
	if c.Environment != nil && (o.Environment == nil || *c.Environment != *o.Environment) {
		c.Environment = nil
	}
}

// Add adds o's counts and narrows the load phase to the interval common
// to both: from the later start to the earlier end. DurationS is not
// positive when they have none. ThroughputPerS is then every decision over
// that interval (0 without one). LatencyUS is left as it is: it comes from
// the added histograms (Distribution.Add).
func (l *Load) Add(o Load) {
	start := later(l.StartedAt, o.StartedAt)
	end := earlier(l.end(), o.end())
	l.StartedAt, l.DurationS = start, end.Sub(start).Seconds()
	l.Incomplete = l.Incomplete || o.Incomplete
	l.Decisions += o.Decisions
	l.Allowed += o.Allowed
	l.Rejected += o.Rejected
	l.Errors += o.Errors
	kinds := make(map[string]int64, len(l.ErrorKinds)+len(o.ErrorKinds))
	maps.Copy(kinds, l.ErrorKinds)
	for k, n := range o.ErrorKinds {
		kinds[k] += n
	}
	l.ErrorKinds = kinds
	l.ThroughputPerS = 0
	if l.DurationS > 0 {
		l.ThroughputPerS = float64(l.Decisions) / l.DurationS
	}
}

// end is when the load phase ended: StartedAt + DurationS, to the nanosecond.
func (l Load) end() time.Time {
	return l.StartedAt.Add(time.Duration(math.Round(l.DurationS * float64(time.Second))))
}

// Add combines two open loops (either may be nil, a closed loop): the
// target and achieved rates and the unsent requests are added, the schedule
// lags are the larger and the notes are joined with "; ". The uncorrected
// latencies have no histogram to add and are dropped.
func (ol *OpenLoop) Add(o *OpenLoop) *OpenLoop {
	if ol == nil && o == nil {
		return nil
	}
	var a, b OpenLoop
	if ol != nil {
		a = *ol
	}
	if o != nil {
		b = *o
	}
	notes := slices.DeleteFunc([]string{a.RateNote, b.RateNote}, func(s string) bool { return s == "" })
	return &OpenLoop{
		Rate:              a.Rate + b.Rate,
		AchievedRatePerS:  a.AchievedRatePerS + b.AchievedRatePerS,
		ScheduleLagMS:     max(a.ScheduleLagMS, b.ScheduleLagMS),
		ScheduleLagLastMS: max(a.ScheduleLagLastMS, b.ScheduleLagLastMS),
		Unsent:            a.Unsent + b.Unsent,
		RateNote:          strings.Join(notes, "; "),
	}
}

// Add adds o's admitted requests and keeps r's policy.
func (p *Outage) Add(o Outage) { p.Admitted += o.Admitted }

// Add takes the larger of each figure. With disjoint keys (generators with
// different prefixes) each key belongs to one run, so the largest over
// keys is the largest over runs: exact. With shared keys each run saw only
// its own admissions: a lower bound.
func (a *Admission) Add(o Admission) {
	if o.OverAdmitted != nil && (a.OverAdmitted == nil || *o.OverAdmitted > *a.OverAdmitted) {
		over := *o.OverAdmitted
		a.OverAdmitted = &over
	}
	a.MaxAdmittedPerWindow = max(a.MaxAdmittedPerWindow, o.MaxAdmittedPerWindow)
	// A part whose figures are a sample makes the merged ones a sample.
	a.AdmissionKeysTracked = max(a.AdmissionKeysTracked, o.AdmissionKeysTracked)
}

// Add takes the larger count of each kind: the nodes counted every
// client's replies, so each generator saw the others' too.
func (c *Cluster) Add(o Cluster) {
	if c.ClusterErrors == nil && o.ClusterErrors == nil {
		return
	}
	out := make(map[string]int64, len(ClusterErrorKinds))
	maps.Copy(out, c.ClusterErrors)
	for k, n := range o.ClusterErrors {
		out[k] = max(out[k], n)
	}
	c.ClusterErrors = out
}

// Add adds the audits of runs whose keys were disjoint (different
// prefixes), figure by figure and master by master.
func (a *Audits) Add(o Audits) { a.combine(o, func(x, y int64) int64 { return x + y }) }

// Overlap combines the audits of runs that scanned the same keys (a
// shared prefix): the larger of each figure, master by master.
func (a *Audits) Overlap(o Audits) { a.combine(o, func(x, y int64) int64 { return max(x, y) }) }

func (a *Audits) combine(o Audits, f func(x, y int64) int64) {
	a.Audit = a.Audit.combine(o.Audit, f)
	if a.AuditPerNode == nil && o.AuditPerNode == nil {
		return
	}
	out := make(map[string]Audit, len(a.AuditPerNode))
	// A master one run does not name counts 0 there.
	for _, addr := range slices.Concat(slices.Collect(maps.Keys(a.AuditPerNode)), slices.Collect(maps.Keys(o.AuditPerNode))) {
		out[addr] = a.AuditPerNode[addr].combine(o.AuditPerNode[addr], f)
	}
	a.AuditPerNode = out
}

func (a Audit) combine(o Audit, f func(x, y int64) int64) Audit {
	return Audit{
		Keys:               f(a.Keys, o.Keys),
		Immortal:           f(a.Immortal, o.Immortal),
		TTLOverWindow:      f(a.TTLOverWindow, o.TTLOverWindow),
		Vanished:           f(a.Vanished, o.Vanished),
		Fields:             f(a.Fields, o.Fields),
		ImmortalFields:     f(a.ImmortalFields, o.ImmortalFields),
		FieldTTLOverWindow: f(a.FieldTTLOverWindow, o.FieldTTLOverWindow),
		HashesExpired:      f(a.HashesExpired, o.HashesExpired),
		Stamp:              cmp.Or(a.Stamp, o.Stamp),
		Stale:              combineStale(a.Stale, o.Stale, f),
		// A part whose audit failed leaves the sum unknown.
		Error: strings.Join(slices.DeleteFunc([]string{a.Error, o.Error}, func(s string) bool { return s == "" }), "; "),
	}
}

// combineStale combines two Stale figures: nil when neither part could
// tell, a missing part counting 0.
func combineStale(a, o *int64, f func(x, y int64) int64) *int64 {
	if a == nil && o == nil {
		return nil
	}
	n := f(ptrValue(a), ptrValue(o))
	return &n
}

func ptrValue(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}

// Add adds o's latencies to d's, bucket by bucket, decoding either from
// HistogramEncoded when its Histogram is nil, and computes the percentile
// curve and the encoding of the sum. It refuses a histogram that does not
// decode, or latencies outside the Recorder's range (MinLatencyUS to
// MaxLatencyUS), which no Recorder wrote.
func (d *Distribution) Add(o Distribution) error {
	sum := hdrhistogram.New(MinLatencyUS, MaxLatencyUS, LatencySignificantDigits)
	for _, part := range []Distribution{*d, o} {
		h, err := part.histogram()
		if err != nil {
			return err
		}
		if dropped := sum.Merge(h); dropped > 0 {
			return fmt.Errorf("%d latencies outside %d-%d µs", dropped, MinLatencyUS, MaxLatencyUS)
		}
	}
	*d = distributionOf(sum)
	return nil
}

// histogram is d's Histogram, decoded from HistogramEncoded when nil; an
// empty one when d has neither.
func (d Distribution) histogram() (*hdrhistogram.Histogram, error) {
	switch {
	case d.Histogram != nil:
		return d.Histogram, nil
	case d.HistogramEncoded == "":
		return hdrhistogram.New(MinLatencyUS, MaxLatencyUS, LatencySignificantDigits), nil
	}
	h, err := hdrhistogram.Decode([]byte(d.HistogramEncoded))
	if err != nil {
		return nil, fmt.Errorf("decode: %w", err)
	}
	return h, nil
}

// Decode sets d.Histogram from HistogramEncoded, when it is nil; an empty
// HistogramEncoded gives an empty histogram.
func (d *Distribution) Decode() error {
	h, err := d.histogram()
	if err != nil {
		return err
	}
	d.Histogram = h
	return nil
}

// joinDistinct adds b's values, split on sep, to a's that are not there
// yet: "x | y" joined with "y | z" is "x | y | z".
func joinDistinct(a, b, sep string) string {
	have := strings.Split(a, sep)
	for _, v := range strings.Split(b, sep) {
		if !slices.Contains(have, v) {
			have = append(have, v)
		}
	}
	return strings.Join(have, sep)
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

func earlier(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}
