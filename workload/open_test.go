package workload

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/rlbench/rlbench/clients"
	"github.com/rlbench/rlbench/internal/redistest"
	"github.com/rlbench/rlbench/redisserver"
	"github.com/rlbench/rlbench/results"
	"github.com/rlbench/rlbench/strategies"
)

func TestSlotOffset(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		slot     int64
		interval float64 // ns
		want     time.Duration
	}{
		{"first slot is due at the start", 0, 500_000, 0},
		{"2000/s", 1999, 500_000, 999_500 * time.Microsecond},
		{"3/s rounds down to the nanosecond", 1, 1e9 / 3, 333_333_333},
		{"a rate too low for a Duration", 2, 1e19, maxOffset},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := slotOffset(tc.slot, tc.interval); got != tc.want {
				t.Errorf("slotOffset(%d, %g) = %v; want %v", tc.slot, tc.interval, got, tc.want)
			}
		})
	}
}

func TestSlotsBefore(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		d        time.Duration
		interval float64 // ns
		want     int64
	}{
		{"nothing before the start", 0, 500_000, 0},
		{"2000/s for 1s", time.Second, 500_000, 2000},
		{"a slot due just before the end counts", time.Second + 1, 500_000, 2001},
		{"3/s for 1s: 0, 1/3 and 2/3", time.Second, 1e9 / 3, 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := slotsBefore(tc.d, tc.interval); got != tc.want {
				t.Errorf("slotsBefore(%v, %g) = %d; want %d", tc.d, tc.interval, got, tc.want)
			}
		})
	}
}

func TestResult(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name         string
		res          Result
		wantAchieved float64
		wantReached  bool
	}{
		{
			name:        "closed loop has no target",
			res:         Result{Elapsed: time.Second},
			wantReached: true,
		},
		{
			name:         "on schedule: 2000 sent, the last at 999.5ms",
			res:          Result{Rate: 2000, Scheduled: 2000, Sent: 2000, LastStart: 999_500 * time.Microsecond, Lag: 0},
			wantAchieved: 2000,
			wantReached:  true,
		},
		{
			name:         "timer lateness on the last request is tolerated",
			res:          Result{Rate: 2000, Scheduled: 2000, Sent: 2000, LastStart: 1000_500 * time.Microsecond, Lag: time.Millisecond},
			wantAchieved: 2000 / 1.001,
			wantReached:  true,
		},
		{
			name:         "a stall at the end: 10% behind",
			res:          Result{Rate: 1000, Scheduled: 1000, Sent: 900, LastStart: 999 * time.Millisecond, Lag: 100 * time.Millisecond},
			wantAchieved: 900,
			wantReached:  false,
		},
		{
			name:         "a short run: 2% behind, but only by the slack",
			res:          Result{Rate: 2500, Scheduled: 500, Sent: 500, LastStart: 203_600 * time.Microsecond, Lag: 4 * time.Millisecond},
			wantAchieved: 500 / 0.204,
			wantReached:  true,
		},
		{
			// A stall at the end: the last request sent was on time, but
			// 279 that fell due during the stall were never sent.
			name:         "stall at the end leaves requests unsent",
			res:          Result{Rate: 1000, Scheduled: 1000, Sent: 721, LastStart: 700 * time.Millisecond},
			wantAchieved: 721,
			wantReached:  false,
		},
		{
			name:         "budget spent, however late",
			res:          Result{Rate: 10_000, Scheduled: 100, Sent: 100, LastStart: 29_900 * time.Microsecond, Lag: 20 * time.Millisecond},
			wantAchieved: 100 / 0.030,
			wantReached:  false,
		},
		{
			name:        "nothing sent",
			res:         Result{Rate: 100, Scheduled: 1},
			wantReached: false,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := tc.res.Achieved(); math.Abs(got-tc.wantAchieved) > 1e-6*tc.wantAchieved {
				t.Errorf("%+v.Achieved() = %v; want %v", tc.res, got, tc.wantAchieved)
			}
			if got := tc.res.Reached(); got != tc.wantReached {
				t.Errorf("%+v.Reached() = %t; want %t", tc.res, got, tc.wantReached)
			}
			if note := tc.res.Note(); (note == "") != tc.wantReached {
				t.Errorf("%+v.Note() = %q; want a note only when the rate is not reached", tc.res, note)
			}
		})
	}
}

// fakeStrategy decides at once, without a server: it isolates the
// workload's own costs.
type fakeStrategy struct{}

func (fakeStrategy) Name() string { return "fake" }
func (fakeStrategy) Decide(context.Context, strategies.Client, string) (strategies.Decision, error) {
	return strategies.Decision{Allowed: true}, nil
}

// TestOpenLoopAllocs checks that the open loop's hot path does not allocate:
// ten times the requests, through the same number of workers, costs no more
// allocations than the run's fixed set-up.
func TestOpenLoopAllocs(t *testing.T) {
	// Not parallel: AllocsPerRun counts every allocation in the process.
	allocs := func(requests int64) float64 {
		var rec results.Recorder
		cfg := Config{Workers: 2, Keys: 10, Requests: requests, Rate: 100_000, Prefix: "p:"}
		run := func() {
			rec.Reset()
			if _, err := Run(context.Background(), cfg, fakeStrategy{}, nil, &rec, nil); err != nil {
				t.Fatalf("Run error: %v", err)
			}
		}
		run() // warm the recorder's histograms
		return testing.AllocsPerRun(5, run)
	}
	small, large := allocs(200), allocs(2000)
	t.Logf("allocations per run: %v for 200 requests, %v for 2000", small, large)
	if perRequest := (large - small) / 1800; perRequest > 0.01 {
		t.Errorf("open loop: %v allocations for 200 requests, %v for 2000: %.3f per request; want 0", small, large, perRequest)
	}
}

// openLoopClient starts a server and a go-redis client sized for workers.
func openLoopClient(t *testing.T, workers int) (strategies.Strategy, strategies.Client, *redisserver.Server) {
	t.Helper()
	srv := redistest.Start(t)
	c, err := clients.New("go-redis", clients.Options{Addr: srv.Addr(), Workers: workers})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	s, err := strategies.New("lua", strategies.Config{Limit: 1 << 40, Window: 60})
	if err != nil {
		t.Fatal(err)
	}
	return s, c, srv
}

// TestOpenLoopRate checks that an open loop sends the scheduled number of
// requests, on time, and records both latencies.
func TestOpenLoopRate(t *testing.T) {
	t.Parallel()
	s, c, _ := openLoopClient(t, 20)
	var rec results.Recorder
	cfg := Config{Workers: 20, Keys: 100, Duration: time.Second, Rate: 2000, Prefix: redistest.Prefix(t)}
	res, err := Run(context.Background(), cfg, s, c, &rec, nil)
	if err != nil {
		t.Fatalf("Run error: %v", err)
	}
	got := rec.Totals()
	if got.Decisions < 1900 || got.Decisions > 2100 || got.Errors != 0 {
		t.Errorf("Run(Rate 2000, Duration 1s): totals %+v; want 2000 ± 5%% decisions, no errors", got)
	}
	if res.Sent != got.Decisions || res.Scheduled != 2000 {
		t.Errorf("Run(Rate 2000, Duration 1s) = %+v; want Sent %d (the decisions) and Scheduled 2000", res, got.Decisions)
	}
	// Whether a loaded machine keeps 2000/s is the machine's business; a
	// run that fell behind must say so, one that did not must not.
	if res.Reached() != (res.Note() == "") {
		t.Errorf("Run(Rate 2000, Duration 1s) = %+v: Reached() = %t, Note() = %q; want a note exactly when the rate was not reached", res, res.Reached(), res.Note())
	}
	if res.Elapsed < time.Second-time.Millisecond {
		t.Errorf("Run(Rate 2000, Duration 1s).Elapsed = %v; want about 1s", res.Elapsed)
	}
	u := rec.UncorrectedHistogram()
	if u == nil || u.TotalCount() != got.Decisions {
		t.Fatalf("UncorrectedHistogram() = %v; want %d values", u, got.Decisions)
	}
	if h := rec.Histogram(); h.Mean() < u.Mean() {
		t.Errorf("corrected mean %.0fµs < uncorrected mean %.0fµs; want corrected >= uncorrected", h.Mean(), u.Mean())
	}
	t.Logf("achieved %.0f/s, lag %v; corrected %+v; uncorrected %+v", res.Achieved(), res.Lag, results.LatencyOf(rec.Histogram()), results.LatencyOf(u))
}

// TestOpenLoopRequests checks that a request budget without a duration
// sends every request, on schedule.
func TestOpenLoopRequests(t *testing.T) {
	t.Parallel()
	s, c, _ := openLoopClient(t, 8)
	var rec results.Recorder
	cfg := Config{Workers: 8, Keys: 10, Requests: 500, Rate: 2500, Prefix: redistest.Prefix(t)}
	res, err := Run(context.Background(), cfg, s, c, &rec, nil)
	if err != nil {
		t.Fatalf("Run error: %v", err)
	}
	if got := rec.Totals().Decisions; got != 500 || res.Sent != 500 || res.Scheduled != 500 {
		t.Errorf("Run(Rate 2500, Requests 500): %d decisions, Result %+v; want 500 decisions, 500 sent, 500 scheduled", got, res)
	}
	// The last of 500 requests at 2500/s is due at 199.6ms: none is sent
	// early. (None late is the machine's business: a loaded one may fall
	// behind, and the run then says so.)
	if res.LastStart < 199600*time.Microsecond {
		t.Errorf("Run(Rate 2500, Requests 500) = %+v; want the last start at >= 199.6ms", res)
	}
	if res.Reached() != (res.Note() == "") {
		t.Errorf("Run(Rate 2500, Requests 500) = %+v: Reached() = %t, Note() = %q; want a note exactly when the rate was not reached", res, res.Reached(), res.Note())
	}
}

// TestOpenLoopStall pauses the server in the middle of an open-loop run.
// The requests due during the pause wait for it, so their corrected latency
// (from their intended start) runs up to the pause's length; they are sent
// once it ends, so their uncorrected latency (from the send) is short. Only
// the few requests that were sent during the pause, one per worker, wait
// for it in both views.
func TestOpenLoopStall(t *testing.T) {
	t.Parallel()
	const (
		rate    = 2000
		workers = 20
		pauseAt = 400 * time.Millisecond
		pause   = 300 * time.Millisecond
	)
	s, c, srv := openLoopClient(t, workers)
	admin := redistest.Client(t, srv)
	var rec results.Recorder
	cfg := Config{Workers: workers, Keys: 100, Duration: 1200 * time.Millisecond, Rate: rate, Prefix: redistest.Prefix(t)}
	paused := make(chan error, 1)
	time.AfterFunc(pauseAt, func() { paused <- admin.ClientPause(context.Background(), pause).Err() })
	res, err := Run(context.Background(), cfg, s, c, &rec, nil)
	if err != nil {
		t.Fatalf("Run error: %v", err)
	}
	if err := <-paused; err != nil {
		t.Fatalf("CLIENT PAUSE: %v", err)
	}
	corrected, uncorrected := results.LatencyOf(rec.Histogram()), results.LatencyOf(rec.UncorrectedHistogram())
	t.Logf("%+v; corrected %+v; uncorrected %+v", res, corrected, uncorrected)

	const stallUS = 250_000 // most of the pause, in µs
	// About 600 of 2400 requests were due during the pause, so the stall
	// fills the corrected tail from p75 up.
	if corrected.P99 < stallUS || corrected.Max < stallUS {
		t.Errorf("corrected latency %+v; want p99 and max >= %dµs (the pause)", corrected, stallUS)
	}
	// Some 20 requests (one per worker, under 1%) were sent during the
	// pause; the rest of the uncorrected distribution does not see it.
	// (Bounds wide enough for a loaded machine, still well under it.)
	if uncorrected.P50 > stallUS/5 || uncorrected.P90 > stallUS/2 {
		t.Errorf("uncorrected latency %+v; want p50 <= %dµs and p90 <= %dµs, well under the pause", uncorrected, stallUS/5, stallUS/2)
	}
	// Whether the backlog clears in time is the machine's business; the
	// run must count what it sent, and say so when it fell behind.
	if decisions := rec.Totals().Decisions; res.Sent != decisions || res.Scheduled != 2400 || res.Reached() != (res.Note() == "") {
		t.Errorf("Run(Rate %d, Duration 1.2s) with a pause: %d decisions, Result %+v, Note() %q; want Sent = decisions, 2400 scheduled, a note exactly when the rate was not reached", rate, decisions, res, res.Note())
	}
}

// TestOpenLoopUnreachable asks 2 workers for a rate they cannot reach and
// checks that the Result says so.
func TestOpenLoopUnreachable(t *testing.T) {
	t.Parallel()
	s, c, _ := openLoopClient(t, 2)
	var rec results.Recorder
	cfg := Config{Workers: 2, Keys: 10, Duration: 300 * time.Millisecond, Rate: 1e6, Prefix: redistest.Prefix(t)}
	res, err := Run(context.Background(), cfg, s, c, &rec, nil)
	if err != nil {
		t.Fatalf("Run error: %v", err)
	}
	t.Logf("%+v: %s", res, res.Note())
	if res.Reached() || res.Achieved() > 0.5e6 {
		t.Errorf("Run(Rate 1e6, 2 workers) = %+v, Achieved() = %.0f; want the target not reached", res, res.Achieved())
	}
	if res.Scheduled != 300_000 || res.Sent != rec.Totals().Decisions {
		t.Errorf("Run(Rate 1e6, 2 workers, 300ms) = %+v; want 300000 scheduled and Sent = %d decisions", res, rec.Totals().Decisions)
	}
	if res.Lag < 100*time.Millisecond {
		t.Errorf("Run(Rate 1e6, 2 workers, 300ms).Lag = %v; want the schedule far behind (>= 100ms)", res.Lag)
	}
	if note := res.Note(); !strings.Contains(note, "not reached") || !strings.Contains(note, "behind schedule") {
		t.Errorf("Run(Rate 1e6, 2 workers).Note() = %q; want it to say the rate was not reached and how far behind", note)
	}
}

func TestRoundLag(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		lag  time.Duration
		want string
	}{
		{"seconds to the millisecond", 1551052880, "1.551s"},
		{"milliseconds to a tenth", 293068203, "293.1ms"},
		{"microseconds whole", 827149, "827µs"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := roundLag(tc.lag).String(); got != tc.want {
				t.Errorf("roundLag(%d) = %s; want %s", tc.lag, got, tc.want)
			}
		})
	}
}
