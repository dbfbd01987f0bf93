package workload

import (
	"fmt"
	"time"

	"github.com/rlbench/rlbench/results"
)

// stagesDefaults sets what the stages imply: the duration, their sum, and
// a closed loop's workers, their highest target.
func (c Config) stagesDefaults() Config {
	if len(c.Stages) == 0 {
		return c
	}
	if c.Duration == 0 {
		c.Duration = StagesDuration(c.Stages)
	}
	if c.Workers == 0 && c.Rate == 0 {
		c.Workers = max(StagesWorkers(c.Stages), 1)
	}
	return c
}

// validateShape checks the stages, and that the duration and workers agree
// with them.
func (c Config) validateShape() error {
	if len(c.Stages) == 0 {
		return nil
	}
	if err := validateStages(c.Stages); err != nil {
		return err
	}
	if total := StagesDuration(c.Stages); c.Duration != total {
		return fmt.Errorf("%w, %s; got a duration of %s", ErrStagesDuration, total, c.Duration)
	}
	if top := StagesWorkers(c.Stages); c.Rate == 0 && c.Workers < top {
		return fmt.Errorf("%w, %d; got %d workers", ErrStagesWorkers, top, c.Workers)
	}
	return nil
}

// awaitTurn holds closed-loop worker w while the stages' target is w or
// less, so that ceil(target) workers run at once, and reports whether the
// worker is to go on: false once the run stops. A worker whose turn never
// comes again waits for the end of the run, so that the run lasts its
// stages. Its connection stays open: the pool is the workers'.
func (r *runner) awaitTurn(w int) bool {
	level := float64(w)
	var timer *time.Timer
	for {
		now := r.now()
		if _, target := r.shape.at(now); target > level {
			return true
		}
		at, ok := r.shape.nextAbove(now, level)
		if !ok {
			r.idle()
			return false
		}
		if timer == nil {
			timer = time.NewTimer(at - now)
			defer timer.Stop()
		} else {
			timer.Reset(at - now)
		}
		select {
		case <-timer.C:
		case <-r.stopCtx.Done():
			return false
		}
	}
}

// idle waits, in a shaped load, for the end of the run: a worker with
// nothing more to send keeps the run to its stages' length.
func (r *runner) idle() {
	if r.shape != nil {
		<-r.stopCtx.Done()
	}
}

// slotOffset returns when the open loop's slot i is due, from the start of
// the run, on the flat schedule or the stages' shape.
func (r *runner) slotOffset(i int64) time.Duration {
	if r.shape != nil {
		return r.shape.slotOffset(i)
	}
	return slotOffset(i, r.interval)
}

// slotsBefore returns the number of the open loop's slots due before d.
func (r *runner) slotsBefore(d time.Duration) int64 {
	if r.shape != nil {
		return r.shape.slotsBefore(d)
	}
	return slotsBefore(d, r.interval)
}

// sampleStages records each stage's figures, from a snapshot of the
// recorder at each stage's end on the plan. The returned function, called
// once the workers have returned, with the load's elapsed time, ends the
// last stage then and returns them all; nil for a flat load.
func (r *runner) sampleStages() func(elapsed time.Duration) []results.Stage {
	if r.shape == nil {
		return func(time.Duration) []results.Stage { return nil }
	}
	var (
		out  []results.Stage
		prev results.Totals
		iv   results.Interval
		from time.Duration // the measured start of the next stage
	)
	end := func(i int, at time.Duration) {
		seg := r.shape.segs[i]
		t, h := r.rec.Snapshot()
		s := results.Stage{Stage: i + 1, StartS: seg.start.Seconds(), EndS: (seg.start + seg.dur).Seconds(),
			Of: r.shape.of, From: seg.v0, To: seg.v1}
		out = append(out, results.StageOf(s, t, prev, h, &iv, (at-from).Seconds()))
		prev, from = t, at
	}
	done := make(chan struct{})
	finished := make(chan int)
	go func() {
		i := 0
		defer func() { finished <- i }()
		timer := time.NewTimer(0)
		defer timer.Stop()
		for ; i < len(r.shape.segs)-1; i++ {
			seg := r.shape.segs[i]
			timer.Reset(max(seg.start+seg.dur-r.now(), 0))
			select {
			case <-timer.C:
			case <-done:
				return
			}
			end(i, r.now())
		}
	}()
	return func(elapsed time.Duration) []results.Stage {
		close(done)
		// The stages the load did not reach (interrupted) are left out.
		if i := <-finished; i < len(r.shape.segs) {
			end(i, elapsed)
		}
		return out
	}
}
