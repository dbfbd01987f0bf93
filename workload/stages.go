package workload

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/rlbench/rlbench/results"
)

// Stage is one stage of a load shape (Config.Stages): over Duration, the
// target moves linearly from the previous stage's Target (or the start's)
// to this one's, as k6's stages do.
type Stage struct {
	// Duration is the stage's length; 0 jumps to Target at once.
	Duration time.Duration `json:"duration_ns"`
	// Target is where the stage ends: workers in a closed loop, decisions
	// per second in an open one.
	Target float64 `json:"target"`
}

// MaxStages bounds the stages of a shape.
const MaxStages = 1000

// Errors of a load shape, from ParseStages and Config.Validate.
var (
	ErrInvalidStages = errors.New("want DURATION:TARGET,... e.g. 10s:100,30s:1000,10s:0: durations >= 0 adding up to more than 0, targets from 0 to 1000000 workers in a closed loop, to 1e8 decisions/s in an open one (--rate)")
	// ErrStagesDuration is a Config whose Duration is not its stages' sum.
	ErrStagesDuration = errors.New("the stages set the duration: their sum")
	// ErrStagesWorkers is a closed loop with fewer workers than its
	// stages' highest target.
	ErrStagesWorkers = errors.New("a closed loop's stages set the workers: their highest target")
)

// ParseStages reads a load shape written as --stages takes it:
// "10s:100,30s:1000,10s:0", each stage DURATION:TARGET.
func ParseStages(spec string) ([]Stage, error) {
	parts := strings.Split(spec, ",")
	if len(parts) > MaxStages {
		return nil, fmt.Errorf("%w; got %d stages, more than %d", ErrInvalidStages, len(parts), MaxStages)
	}
	stages := make([]Stage, 0, len(parts))
	for _, p := range parts {
		d, t, ok := strings.Cut(strings.TrimSpace(p), ":")
		dur, derr := time.ParseDuration(d)
		target, terr := strconv.ParseFloat(t, 64)
		if !ok || derr != nil || terr != nil {
			return nil, fmt.Errorf("%w; got %q", ErrInvalidStages, p)
		}
		stages = append(stages, Stage{Duration: dur, Target: target})
	}
	if err := validateStages(stages); err != nil {
		return nil, err
	}
	return stages, nil
}

// validateStages checks durations, targets and their sum.
func validateStages(stages []Stage) error {
	var total time.Duration
	for _, s := range stages {
		if s.Duration < 0 || !(s.Target >= 0 && s.Target <= MaxRate) || total+s.Duration < total {
			return fmt.Errorf("%w; got %s", ErrInvalidStages, StagesText(stages))
		}
		total += s.Duration
	}
	if total <= 0 {
		return fmt.Errorf("%w; got %s", ErrInvalidStages, StagesText(stages))
	}
	return nil
}

// StagesText writes stages as ParseStages reads them: "10s:100,30s:1000".
func StagesText(stages []Stage) string {
	parts := make([]string, len(stages))
	for i, s := range stages {
		parts[i] = s.Duration.String() + ":" + strconv.FormatFloat(s.Target, 'f', -1, 64)
	}
	return strings.Join(parts, ",")
}

// StagesDuration is the stages' sum: a shaped load's duration.
func StagesDuration(stages []Stage) time.Duration {
	var total time.Duration
	for _, s := range stages {
		total += s.Duration
	}
	return total
}

// StagesWorkers is the workers a closed loop's stages need: their highest
// target, rounded up.
func StagesWorkers(stages []Stage) int {
	top := 0.0
	for _, s := range stages {
		top = max(top, s.Target)
	}
	return int(math.Ceil(top))
}

// WarmupWorkers is the workers a warm-up before c's load runs: in a closed
// loop with stages, the shape's target at its start (0, or the first jump's),
// rounded up, at least 1, not the pool (the highest target) that the load
// ramps up to; c.Workers otherwise.
func WarmupWorkers(c Config) int {
	if len(c.Stages) == 0 || c.Rate > 0 {
		return c.Workers
	}
	_, start := newShape(c).at(0)
	return max(int(math.Ceil(start)), 1)
}

// shape is a Config's stages as segments on the load's clock.
type shape struct {
	segs []segment
	// of is what the targets count (results.TargetWorkers or TargetRate).
	of string
	// end is the stages' sum; final is the last target.
	end   time.Duration
	final float64
}

// segment is one stage: from start to start+dur, the target moves from v0
// to v1; count is the open loop's slots due before its start.
type segment struct {
	start, dur time.Duration
	v0, v1     float64
	count      float64
}

// newShape lays out the stages from the start target: 0 workers in a
// closed loop, Config.Rate in an open one. It returns nil for none.
func newShape(cfg Config) *shape {
	if len(cfg.Stages) == 0 {
		return nil
	}
	s := &shape{of: results.TargetWorkers}
	if cfg.Rate > 0 {
		s.of = results.TargetRate
	}
	at, v, count := time.Duration(0), cfg.Rate, 0.0
	for _, st := range cfg.Stages {
		seg := segment{start: at, dur: st.Duration, v0: v, v1: st.Target, count: count}
		s.segs = append(s.segs, seg)
		count += (seg.v0 + seg.v1) / 2 * seg.dur.Seconds()
		at, v = at+st.Duration, st.Target
	}
	s.end, s.final = at, v
	return s
}

// at returns the stage (from 1) in force at t and the target then.
func (s *shape) at(t time.Duration) (stage int, target float64) {
	for i, seg := range s.segs {
		if t < seg.start+seg.dur {
			frac := float64(t-seg.start) / float64(seg.dur)
			return i + 1, seg.v0 + (seg.v1-seg.v0)*max(frac, 0)
		}
	}
	return len(s.segs), s.final
}

// nextAbove returns the first moment from now on when the target exceeds
// level, and false when it never does before the end.
func (s *shape) nextAbove(now time.Duration, level float64) (time.Duration, bool) {
	for _, seg := range s.segs {
		end := seg.start + seg.dur
		if end < now || seg.dur > 0 && end == now {
			continue
		}
		from := max(now, seg.start)
		if seg.dur == 0 {
			if seg.v1 > level {
				return from, true
			}
			continue
		}
		if _, v := s.at(from); v > level {
			return from, true
		}
		if seg.v1 > level { // rising through level within the segment
			frac := (level - seg.v0) / (seg.v1 - seg.v0)
			return seg.start + time.Duration(frac*float64(seg.dur)) + 1, true
		}
	}
	return 0, false
}

// slotOffset returns when the open loop's slot i is due: the moment the
// rate's integral from the start reaches i; maxOffset when it never does.
func (s *shape) slotOffset(i int64) time.Duration {
	n := float64(i)
	for _, seg := range s.segs {
		inSeg := (seg.v0 + seg.v1) / 2 * seg.dur.Seconds()
		if seg.dur == 0 || n >= seg.count+inSeg {
			continue
		}
		// Solve v0 τ + k τ²/2 = m for τ, in the form that keeps its
		// precision when k is small or negative.
		m := n - seg.count
		if m <= 0 {
			return seg.start
		}
		k := (seg.v1 - seg.v0) / seg.dur.Seconds()
		tau := 2 * m / (seg.v0 + math.Sqrt(max(seg.v0*seg.v0+2*k*m, 0)))
		return seg.start + time.Duration(tau*1e9)
	}
	return maxOffset
}

// slotsBefore returns the number of slots due before offset d.
func (s *shape) slotsBefore(d time.Duration) int64 {
	count := 0.0
	for _, seg := range s.segs {
		if d <= seg.start {
			break
		}
		if d >= seg.start+seg.dur {
			count = seg.count + (seg.v0+seg.v1)/2*seg.dur.Seconds()
			continue
		}
		tau := (d - seg.start).Seconds()
		k := (seg.v1 - seg.v0) / seg.dur.Seconds()
		count = seg.count + seg.v0*tau + k*tau*tau/2
	}
	return int64(math.Ceil(count))
}

// meanRate is the open loop's rate over the whole shape.
func (s *shape) meanRate() float64 {
	return float64(s.slotsBefore(s.end)) / s.end.Seconds()
}

// LabelSeries sets the stage and the target of each second of a series of
// a load with cfg's stages, as of the middle of the second (the target to
// three decimals); it leaves a
// series of a load with none as it is.
func (c Config) LabelSeries(series []results.Second) {
	s := newShape(c)
	if s == nil {
		return
	}
	prev := 0.0
	for i := range series {
		mid := time.Duration((prev + series[i].T) / 2 * 1e9)
		stage, target := s.at(mid)
		target = math.Round(target*1000) / 1000
		series[i].Stage, series[i].Target = stage, &target
		prev = series[i].T
	}
}
