package audit

import (
	"context"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// pacer holds the audit to rate keys per second; a rate of 0 means no cap.
// Each batch is charged its keys (for a SCAN page, the keys it walked) and
// waits until the batches before it have had their time at the rate: the
// pace is a ceiling, not an average, so time the audit lost (a slow or
// stalled server) is not made up in a burst afterwards.
type pacer struct {
	rate float64
	// next is when the next batch is due: when the keys charged so far
	// have had their time.
	next time.Time
}

// wait charges keys to the pace and sleeps until the batch that holds them
// is due, or ctx is done.
func (p *pacer) wait(ctx context.Context, keys int) error {
	if p.rate <= 0 {
		return nil
	}
	due := time.Now()
	if p.next.After(due) {
		due = p.next
	}
	p.next = due.Add(time.Duration(float64(keys) / p.rate * float64(time.Second)))
	return sleepUntil(ctx, due)
}

// finish sleeps until every key charged is due, so that the audit as a
// whole, its last batch included, stays within the rate.
func (p *pacer) finish(ctx context.Context) error {
	if p.rate <= 0 {
		return nil
	}
	return sleepUntil(ctx, p.next)
}

// sleepUntil sleeps until t, or until ctx is done.
func sleepUntil(ctx context.Context, t time.Time) error {
	d := time.Until(t)
	if d <= 0 {
		return nil
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return nil
	}
}

// Progress is what Scan has done so far, given to Options.Progress after
// each batch.
type Progress struct {
	// Node is the index of the node being scanned, Nodes their number, and
	// Addr the node's address.
	Node, Nodes int
	Addr        string
	// Keys is the number of keys examined so far, on every node.
	Keys int64
	// Immortal is the number of immortal keys found so far.
	Immortal int64
	// Scans is the number of SCANs answered so far, and Count their COUNT:
	// each walks about Count keys of the keyspace, matched or not.
	Scans, Count int64
	// DBSize is the sum of every node's DBSIZE at the start, 0 if unknown.
	DBSize int64
	// Elapsed is the time since the audit started.
	Elapsed time.Duration
}

// Walked estimates the fraction of the keyspace SCAN has walked, from 0 to
// 1, or -1 when DBSize is unknown. It counts Count keys per SCAN, which is
// how SCAN works through the table, so it is approximate.
func (p Progress) Walked() float64 {
	if p.DBSize <= 0 {
		return -1
	}
	return min(1, float64(p.Scans*p.Count)/float64(p.DBSize))
}

// ETA estimates the time left from Walked and Elapsed, -1 when unknown.
func (p Progress) ETA() time.Duration {
	w := p.Walked()
	if w <= 0 {
		return -1
	}
	return time.Duration(float64(p.Elapsed) * (1 - w) / w)
}

// KeysPerS is the rate of examined keys so far.
func (p Progress) KeysPerS() float64 {
	if p.Elapsed <= 0 {
		return 0
	}
	return float64(p.Keys) / p.Elapsed.Seconds()
}

// report hands the progress so far to Options.Progress.
func (a *auditor) report() {
	if a.o.Progress == nil {
		return
	}
	a.progress.Elapsed = time.Since(a.start)
	a.o.Progress(a.progress)
}

// latencyHist records round-trip times of one kind, from 1 µs to 1 minute
// at 3 significant digits: a fixed few tens of kilobytes.
type latencyHist struct{ h *hdrhistogram.Histogram }

func newLatencyHist() latencyHist {
	return latencyHist{h: hdrhistogram.New(1, int64(time.Minute/time.Microsecond), 3)}
}

func (l latencyHist) record(d time.Duration) {
	us := max(int64(d/time.Microsecond), 1)
	_ = l.h.RecordValue(min(us, l.h.HighestTrackableValue()))
}

func (l latencyHist) summary() Latency {
	if l.h.TotalCount() == 0 {
		return Latency{}
	}
	return Latency{
		N:     l.h.TotalCount(),
		P50US: float64(l.h.ValueAtQuantile(50)),
		P99US: float64(l.h.ValueAtQuantile(99)),
		MaxUS: float64(l.h.Max()),
	}
}

// cost is the latency summary of every kind of round trip.
func (a *auditor) cost() Cost {
	return Cost{Scan: a.lat[0].summary(), Pipeline: a.lat[1].summary(), Detail: a.lat[2].summary()}
}
