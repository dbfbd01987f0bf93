package workload

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/rlbench/rlbench/results"
)

// Tolerances of Result.Reached: an open loop reaches its target rate when
// it achieves at least 1 - RateTolerance of it, or falls no more than
// ScheduleSlack behind, which short runs need.
const (
	// RateTolerance is the shortfall from the target rate allowed: 0.01
	// accepts an achieved rate down to 99% of Config.Rate.
	RateTolerance = 0.01
	// ScheduleSlack is the lag allowed: the timers' resolution and the
	// scheduler's hiccups, not a missed rate.
	ScheduleSlack = 10 * time.Millisecond
)

// Result is what Run measured besides the decisions it recorded.
type Result struct {
	// Elapsed is the wall time from the first worker's start to the last
	// worker's return, decisions in flight at the end included.
	Elapsed time.Duration
	// Rate is the open loop's target, in decisions per second (the mean
	// over its stages, with Config.Stages); 0 for a closed loop, where
	// every other field below but Stages is 0 too.
	Rate float64
	// Scheduled is the number of requests the schedule made due before the
	// run ended: Rate x Duration (rounded up), at most Requests, and up to
	// the moment ctx ended the run if it did.
	Scheduled int64
	// Sent is the number of requests started.
	Sent int64
	// Unsent is the number of requests that fell due before the run ended
	// and were never sent (the workers were all busy, behind a stall):
	// each is in the corrected latency histogram at its lower bound, the
	// end of the run minus its due time, but in no decision count.
	Unsent int64
	// LastStart is when the last request started, from the start of the run.
	LastStart time.Duration
	// Stages are the figures of each of Config.Stages; nil without.
	Stages []results.Stage
	// Lag is how far behind its intended start time the last request
	// started. Up to about a millisecond is the timers' resolution (see
	// Config.Rate); more means the workers were all busy when requests fell
	// due: too few of them for the rate at the server's latency, a server
	// that could not keep up, or a client short of CPU.
	Lag time.Duration
	// WorstLag is the furthest behind schedule the loop fell: the largest
	// lag of a request started, or of one never sent at its lower bound
	// (the end of the run minus its due time), whichever is larger.
	WorstLag time.Duration
}

// Achieved returns the open loop's achieved rate, in requests started per
// second: Sent over the longer of the schedule's span (Scheduled / Rate) and
// the time to the last request's start plus one interval. Requests that fell
// due and were never sent (a stall at the end of the run) and requests sent
// late both count against it. It is 0 for a closed loop.
func (r Result) Achieved() float64 {
	if r.Rate <= 0 || r.Sent == 0 {
		return 0
	}
	span := max(float64(r.Scheduled)/r.Rate, r.LastStart.Seconds()+1/r.Rate)
	return math.Min(float64(r.Sent)/span, r.Rate)
}

// Report fills run's open-loop group (OpenLoop, made when NewRun did not:
// in a closed loop it stays nil) and its stages.
func (r Result) Report(run *results.Run) {
	run.Stages = r.Stages
	if r.Rate <= 0 {
		return
	}
	if run.OpenLoop == nil { // NewRun's, unless no request was sent
		run.OpenLoop = &results.OpenLoop{}
	}
	run.Rate, run.AchievedRatePerS, run.RateNote = r.Rate, r.Achieved(), r.Note()
	run.ScheduleLagMS = float64(r.WorstLag) / float64(time.Millisecond)
	run.ScheduleLagLastMS = float64(r.Lag) / float64(time.Millisecond)
	run.Unsent = r.Unsent
}

// Reached reports whether the open loop kept to its target rate: it
// achieved at least 1 - RateTolerance of it, or it fell behind by no more
// than ScheduleSlack (which short runs need), both in the requests it left
// unsent and in the start of its last one. A closed loop has no target and
// always reaches it.
func (r Result) Reached() bool {
	if r.Rate <= 0 {
		return true
	}
	if r.Sent == 0 {
		return false
	}
	missed := float64(r.Scheduled - r.Sent)
	return r.Achieved() >= (1-RateTolerance)*r.Rate ||
		(missed <= r.Rate*ScheduleSlack.Seconds() && r.Lag <= ScheduleSlack)
}

// Note says, when an open loop did not reach its target rate, by how much,
// how many requests were never sent and how far behind schedule it fell at
// worst; it is "" otherwise.
func (r Result) Note() string {
	if r.Reached() {
		return ""
	}
	unsent := ""
	if r.Unsent > 0 {
		unsent = fmt.Sprintf(" (%d never: in the latency from due time to end)", r.Unsent)
	}
	return fmt.Sprintf("target rate %s/s not reached: %s/s (%.1f%%), %d of %d requests sent%s, at worst %s behind schedule; add workers or lower the rate",
		formatRate(r.Rate), formatRate(r.Achieved()), 100*r.Achieved()/r.Rate, r.Sent, r.Scheduled, unsent, roundLag(r.WorstLag))
}

// roundLag keeps three or four significant digits of a lag: 1.551s,
// 293.1ms, 827µs.
func roundLag(d time.Duration) time.Duration {
	switch {
	case d >= time.Second:
		return d.Round(time.Millisecond)
	case d >= time.Millisecond:
		return d.Round(100 * time.Microsecond)
	}
	return d.Round(time.Microsecond)
}

// formatRate writes a rate without a pointless fraction: 2000, 0.5, 33.33.
func formatRate(v float64) string {
	if v >= 100 {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.4g", v)
}

// workerStats is one open-loop worker's record of its own sends.
type workerStats struct {
	// sent counts the requests the worker started.
	sent int64
	// last is when its latest request started, from the start of the run;
	// lag is how far behind schedule that request started, worst the
	// largest lag of any of its requests.
	last, lag, worst time.Duration
	// dropped is the slot the worker took last and never sent (the
	// schedule or the run ended first); -1 when it sent every slot it took.
	dropped int64
}

// maxOffset bounds a slot's due time, for a rate so low that the schedule
// would overflow a time.Duration.
const maxOffset = time.Duration(math.MaxInt64)

// slotOffset returns when slot i is due, from the start of the run, on a
// schedule of one slot every interval nanoseconds.
func slotOffset(i int64, interval float64) time.Duration {
	ns := float64(i) * interval
	if ns >= float64(maxOffset) {
		return maxOffset
	}
	return time.Duration(ns)
}

// slotsBefore returns the number of slots due before offset d: those i with
// i x interval < d.
func slotsBefore(d time.Duration, interval float64) int64 {
	if d <= 0 {
		return 0
	}
	n := math.Ceil(float64(d) / interval)
	if n >= math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(n)
}

// openLoop is one open-loop worker: take the next slot on the schedule,
// wait until it is due, send, record, repeat. It never waits for a slot
// that is already due, and it sleeps (it does not spin) for one that is not.
func (r *runner) openLoop(w int, wctx context.Context, pick picker, cr *crasher) {
	// One timer per worker, reset for each wait: no allocation per request.
	timer := time.NewTimer(maxOffset)
	timer.Stop()
	defer timer.Stop()
	st := workerStats{dropped: -1}
	defer func() { r.stats[w] = st }()
	names := r.namer()
	for {
		i := r.next.Add(1) - 1
		if r.limited && i >= r.cfg.Requests {
			return
		}
		st.dropped = i // until it is sent
		due := r.slotOffset(i)
		if r.cfg.Duration > 0 && due >= r.cfg.Duration {
			r.idle() // the schedule ends with the run
			return
		}
		// One clock read serves as the send time when the request is due
		// already, as it is whenever the workers fall behind.
		t0 := r.now()
		if wait := due - t0; wait > 0 {
			timer.Reset(wait)
			select {
			case <-timer.C:
			case <-r.stopCtx.Done():
				return
			}
			t0 = r.now()
		}
		if r.stop.Load() {
			return
		}
		k := pick()
		key := names.Name(k)
		st.sent++
		st.last, st.lag, st.dropped = t0, t0-due, -1
		st.worst = max(st.worst, st.lag)
		r.rec.Begin(w)
		d, t1, err := r.decide(wctx, cr, k, key, t0)
		if err == errInterrupted {
			r.rec.Abandon(w)
			return
		}
		r.rec.RecordOpen(w, t1-due, t1-t0, d.Allowed, err)
	}
}

// result gathers the workers' figures once they have all returned.
func (r *runner) result(elapsed time.Duration) Result {
	res := Result{Elapsed: elapsed, Rate: r.cfg.Rate}
	if r.cfg.Rate <= 0 {
		return res
	}
	if r.shape != nil {
		res.Rate = r.shape.meanRate()
	}
	for _, st := range r.stats {
		res.Sent += st.sent
		if st.sent > 0 && st.last >= res.LastStart {
			res.LastStart, res.Lag = st.last, st.lag
		}
		res.WorstLag = max(res.WorstLag, st.worst)
	}
	res.Scheduled = math.MaxInt64
	if r.limited {
		res.Scheduled = r.cfg.Requests
	}
	end := maxOffset
	if r.cfg.Duration > 0 {
		end = r.cfg.Duration
	}
	if r.ctx.Err() != nil {
		// Interrupted: the schedule ended when the run stopped.
		at := time.Duration(r.stoppedAt.Load())
		if at == 0 {
			at = elapsed // the stop is still being noted
		}
		end = min(end, at)
	}
	if end < maxOffset {
		res.Scheduled = min(res.Scheduled, r.slotsBefore(end))
		r.recordUnsent(&res, end)
	}
	return res
}

// recordUnsent records each request that fell due before end and was never
// sent in the corrected latency histogram, at its lower bound end - due, and
// counts it in res.Unsent (and its lag in res.WorstLag). They are the slots
// no worker took, from r.next to res.Scheduled, and the one each worker took
// last and dropped.
func (r *runner) recordUnsent(res *Result, end time.Duration) {
	record := func(lag time.Duration, n int64) {
		r.rec.RecordUnsent(lag, n)
		res.Unsent += n
		res.WorstLag = max(res.WorstLag, lag)
	}
	for _, st := range r.stats {
		if st.dropped >= 0 && st.dropped < res.Scheduled {
			record(end-r.slotOffset(st.dropped), 1)
		}
	}
	// The untaken slots in groups whose lags agree to about three
	// significant digits (the histogram's precision), each at the smallest
	// lag of its group: a stall of hours at the highest rate is a few
	// thousand groups, not a loop over every slot.
	for i := r.next.Load(); i < res.Scheduled; {
		lag := end - r.slotOffset(i)
		floor := lag - max(lag/1024, time.Microsecond)
		n := min(max(r.slotsBefore(end-floor)-i, 1), res.Scheduled-i)
		record(end-r.slotOffset(i+n-1), n)
		i += n
	}
}
