package workload

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/rlbench/rlbench/internal/redistest"
	"github.com/rlbench/rlbench/results"
)

func TestParseStages(t *testing.T) {
	t.Parallel()
	tests := []struct {
		spec string
		want string // StagesText of the result; "" for an error
	}{
		{"10s:100,30s:1000,10s:0", "10s:100,30s:1000,10s:0"},
		{"500ms:2.5", "500ms:2.5"},
		{"0s:10,1m:10", "0s:10,1m0s:10"}, // a jump, then a plateau
		{" 1s:1 , 2s:3 ", "1s:1,2s:3"},   // spaces around stages
		{"10s", ""},                      // no target
		{"10:100", ""},                   // a duration with no unit
		{"10s:x", ""},                    // a target that is no number
		{"10s:-1", ""},                   // a negative target
		{"-1s:10,5s:10", ""},             // a negative duration
		{"0s:10", ""},                    // stages of no length
		{"10s:100,", ""},                 // an empty stage
		{"", ""},
	}
	for _, tc := range tests {
		got, err := ParseStages(tc.spec)
		switch {
		case tc.want == "" && !errors.Is(err, ErrInvalidStages):
			t.Errorf("ParseStages(%q) = (%s, %v); want ErrInvalidStages", tc.spec, StagesText(got), err)
		case tc.want != "" && (err != nil || StagesText(got) != tc.want):
			t.Errorf("ParseStages(%q) = (%s, %v); want (%s, nil)", tc.spec, StagesText(got), err, tc.want)
		}
	}
}

// TestStagesConfig: the stages set the duration and a closed loop's
// workers, and a config that says otherwise is refused.
func TestStagesConfig(t *testing.T) {
	t.Parallel()
	stages := []Stage{{10 * time.Second, 100}, {30 * time.Second, 1000.5}, {10 * time.Second, 0}}
	c := Config{Prefix: "p:", Stages: stages}.WithDefaults()
	if c.Duration != 50*time.Second || c.Workers != 1001 {
		t.Errorf("WithDefaults() with stages: duration %s, workers %d; want 50s, 1001", c.Duration, c.Workers)
	}
	if err := c.Validate(); err != nil {
		t.Errorf("Validate() = %v; want nil", err)
	}
	open := Config{Prefix: "p:", Stages: stages, Rate: 10}.WithDefaults()
	if open.Workers != DefaultWorkers {
		t.Errorf("WithDefaults() of an open loop with stages: workers %d; want %d (the stages are rates)", open.Workers, DefaultWorkers)
	}
	tests := []struct {
		name string
		mod  func(*Config)
		want error
	}{
		{"duration not the sum", func(c *Config) { c.Duration = 10 * time.Second }, ErrStagesDuration},
		{"fewer workers than the top", func(c *Config) { c.Workers = 10 }, ErrStagesWorkers},
		{"more workers", func(c *Config) { c.Workers = 2000 }, nil},
		{"open loop, few workers", func(c *Config) { c.Rate, c.Workers = 10, 10 }, nil},
		{"a negative target", func(c *Config) { c.Stages = []Stage{{50 * time.Second, -1}} }, ErrInvalidStages},
		{"a closed loop past MaxWorkers", func(c *Config) { c.Stages, c.Workers = []Stage{{50 * time.Second, 1e8}}, 1e8 }, ErrInvalidStages},
		{"an open loop's rate past MaxWorkers", func(c *Config) { c.Stages, c.Rate = []Stage{{50 * time.Second, 1e8}}, 10 }, nil},
		{"workers past MaxWorkers", func(c *Config) { c.Stages, c.Workers = nil, MaxWorkers+1 }, ErrInvalidWorkers},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := c
			c.Stages = append([]Stage(nil), stages...)
			tc.mod(&c)
			if err := c.Validate(); !errors.Is(err, tc.want) {
				t.Errorf("Validate(%+v) = %v; want %v", c, err, tc.want)
			}
		})
	}
}

// TestWarmupWorkers: a closed loop's shape warms up at its start (a ramp
// from 0: one worker; a first jump: its target, rounded up), not with the
// pool it ramps up to; a flat or open loop with its workers.
func TestWarmupWorkers(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		cfg  Config
		want int
	}{
		{"a ramp from 0", Config{Workers: 100, Stages: []Stage{{10 * time.Second, 100}}}, 1},
		{"a first jump", Config{Workers: 100, Stages: []Stage{{0, 29.5}, {10 * time.Second, 100}}}, 30},
		{"a flat load", Config{Workers: 50}, 50},
		{"an open loop", Config{Workers: 50, Rate: 10, Stages: []Stage{{10 * time.Second, 1000}}}, 50},
	}
	for _, tc := range tests {
		if got := WarmupWorkers(tc.cfg); got != tc.want {
			t.Errorf("WarmupWorkers(%s) = %d; want %d", tc.name, got, tc.want)
		}
	}
}

// TestShapeAt checks the target along a ramp, a plateau, a jump and a
// ramp down, and when a worker's turn comes.
func TestShapeAt(t *testing.T) {
	t.Parallel()
	s := newShape(Config{Stages: []Stage{{4 * time.Second, 8}, {2 * time.Second, 8}, {0, 2}, {2 * time.Second, 0}}})
	tests := []struct {
		at     time.Duration
		stage  int
		target float64
	}{
		{0, 1, 0},
		{time.Second, 1, 2},
		{3 * time.Second, 1, 6},
		{5 * time.Second, 2, 8},
		{6 * time.Second, 4, 2}, // the jump has no length: the ramp down is in force
		{7 * time.Second, 4, 1},
		{9 * time.Second, 4, 0}, // past the end: the last target
	}
	for _, tc := range tests {
		if stage, target := s.at(tc.at); stage != tc.stage || math.Abs(target-tc.target) > 1e-9 {
			t.Errorf("at(%s) = (%d, %g); want (%d, %g)", tc.at, stage, target, tc.stage, tc.target)
		}
	}
	turns := []struct {
		now   time.Duration
		level float64
		want  time.Duration
		ok    bool
	}{
		{0, 0, 1, true},                             // worker 0 starts at once
		{0, 3, 1500*time.Millisecond + 1, true},     // worker 3 once the target passes 3
		{5 * time.Second, 7, 5 * time.Second, true}, // on the plateau, now
		{6 * time.Second, 3, 0, false},              // after the drop to 2, never again
		{6 * time.Second, 1, 6 * time.Second, true}, // 2 > 1: still on
	}
	for _, tc := range turns {
		if got, ok := s.nextAbove(tc.now, tc.level); ok != tc.ok || ok && got != tc.want {
			t.Errorf("nextAbove(%s, %g) = (%s, %t); want (%s, %t)", tc.now, tc.level, got, ok, tc.want, tc.ok)
		}
	}
}

// TestShapeSlots checks the open loop's schedule on a ramp from 100/s to
// 500/s over 2 s, then 500/s for 1 s, then down to 0 over 1 s: the slots
// due in each second are the rate's integral over it, and slotsBefore
// inverts slotOffset.
func TestShapeSlots(t *testing.T) {
	t.Parallel()
	s := newShape(Config{Rate: 100, Stages: []Stage{{2 * time.Second, 500}, {time.Second, 500}, {time.Second, 0}}})
	want := []int64{200, 400, 500, 250} // per second
	var total int64
	for sec, w := range want {
		total += w
		if got := s.slotsBefore(time.Duration(sec+1) * time.Second); got != total {
			t.Errorf("slotsBefore(%ds) = %d; want %d", sec+1, got, total)
		}
	}
	for i := int64(0); i < total; i++ {
		due := s.slotOffset(i)
		if due < 0 || due > 4*time.Second {
			t.Fatalf("slotOffset(%d) = %s; want within the 4 s of the stages", i, due)
		}
		if n := s.slotsBefore(due + time.Microsecond); n != i+1 {
			t.Fatalf("slotsBefore(slotOffset(%d) + 1µs) = %d; want %d", i, n, i+1)
		}
	}
	if due := s.slotOffset(total); due != maxOffset {
		t.Errorf("slotOffset(%d), past the stages' last slot = %s; want never", total, due)
	}
	if got := s.meanRate(); got != 337.5 {
		t.Errorf("meanRate() = %g; want 337.5", got)
	}
}

// TestRunStages runs a shaped closed loop and a shaped open loop: each
// lasts its stages' sum though its last stage ends at 0 (the idle workers
// wait for the end), has a figure per stage that adds up to its decisions,
// and the open loop schedules the rate's integral.
func TestRunStages(t *testing.T) {
	t.Parallel()
	s, c, _ := openLoopClient(t, 8)
	tests := []struct {
		name  string
		cfg   Config
		sched int64 // the open loop's scheduled requests; 0 for a closed loop
	}{
		{"closed", Config{Keys: 10, Stages: []Stage{{time.Second, 4}, {500 * time.Millisecond, 0}}}, 0},
		// 100/s to 200/s over 1 s (150 requests), then down to 0 over 0.5 s (50).
		{"open", Config{Workers: 8, Keys: 10, Rate: 100, Stages: []Stage{{time.Second, 200}, {500 * time.Millisecond, 0}}}, 200},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var rec results.Recorder
			cfg := tc.cfg
			cfg.Prefix = redistest.Prefix(t)
			res, err := Run(t.Context(), cfg, s, c, &rec, nil)
			if err != nil {
				t.Fatalf("Run error: %v", err)
			}
			if res.Elapsed < 1500*time.Millisecond {
				t.Errorf("Run(%s).Elapsed = %s; want 1.5s or more, the stages' sum", StagesText(cfg.Stages), res.Elapsed)
			}
			total := rec.Totals().Decisions
			var sum int64
			for _, st := range res.Stages {
				sum += st.Decisions
			}
			if len(res.Stages) != 2 || sum != total || total == 0 {
				t.Errorf("Run(%s): %d stages adding up to %d decisions; want 2 adding up to the run's %d (> 0)", StagesText(cfg.Stages), len(res.Stages), sum, total)
			}
			// Scheduled is the rate's integral, exactly; what was sent by the
			// end depends on a loaded machine, hence 15%.
			if tc.sched > 0 && (res.Scheduled != tc.sched || res.Sent < tc.sched*85/100 || res.Sent > tc.sched) {
				t.Errorf("Run(%s): scheduled %d, sent %d; want %d scheduled, and sent within 15%% below", StagesText(cfg.Stages), res.Scheduled, res.Sent, tc.sched)
			}
		})
	}
}
