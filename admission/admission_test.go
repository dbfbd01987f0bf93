package admission

import (
	"testing"
	"time"

	"github.com/rlbench/rlbench/strategies"
)

var (
	naiveInfo = strategies.Info{Name: "naive", FixedWindow: true, CountIsRead: true}
	luaInfo   = strategies.Info{Name: "lua", FixedWindow: true}
	gcraInfo  = strategies.Info{Name: "gcra"}
)

func allow(n int64) strategies.Decision  { return strategies.Decision{Allowed: true, Count: n} }
func reject(n int64) strategies.Decision { return strategies.Decision{Count: n} }

func TestOverAdmitted(t *testing.T) {
	t.Parallel()
	ms := time.Millisecond
	tests := []struct {
		name      string
		info      strategies.Info
		limit     int64
		decisions []strategies.Decision
		want      int64
	}{
		{"naive exact", naiveInfo, 3, []strategies.Decision{allow(0), allow(1), allow(2), reject(3)}, 0},
		{"naive two workers read the same value", naiveInfo, 3, []strategies.Decision{allow(0), allow(1), allow(1), allow(2), reject(3)}, 1},
		{"naive two workers both create the counter", naiveInfo, 2, []strategies.Decision{allow(0), allow(0), allow(1), allow(1)}, 2},
		{"admissions in a window begun before the run are not counted", naiveInfo, 1, []strategies.Decision{allow(0)}, 0},
		{"naive window begun before the run", naiveInfo, 1, []strategies.Decision{allow(5), allow(5), allow(5)}, 0},
		{"lua exact", luaInfo, 3, []strategies.Decision{allow(1), allow(2), allow(3), reject(4)}, 0},
		// The reply ranked 2 reaches the recorder before the window's
		// first: it counts in the old window, whose highest rank stays 3.
		{"lua replies out of order", luaInfo, 3, []strategies.Decision{allow(1), allow(2), allow(3), reject(4), allow(2), allow(1), allow(3)}, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tr := New(tc.info, 1, tc.limit, 1)
			for i, d := range tc.decisions {
				tr.Observe(0, d, time.Duration(i)*ms)
			}
			got := tr.Result().OverAdmitted
			if got == nil || *got != tc.want {
				t.Errorf("OverAdmitted after %v = %v; want %d", tc.decisions, got, tc.want)
			}
		})
	}
	if got := New(gcraInfo, 1, 3, 1).Result().OverAdmitted; got != nil {
		t.Errorf("OverAdmitted for a non-fixed-window strategy = %d; want nil", *got)
	}
}

func TestMaxAdmittedPerWindow(t *testing.T) {
	t.Parallel()
	const window = 1 // second; buckets of 50ms
	tests := []struct {
		name string
		at   []time.Duration // completion times of allowed decisions
		want int64
	}{
		{"none", nil, 0},
		{"one burst", []time.Duration{0, time.Millisecond, 2 * time.Millisecond}, 3},
		// 3 just before a boundary and 3 just after: a fixed window lets
		// both through; they fall within one window length.
		{"boundary burst", []time.Duration{950 * time.Millisecond, 960 * time.Millisecond, 970 * time.Millisecond,
			1010 * time.Millisecond, 1020 * time.Millisecond, 1030 * time.Millisecond}, 6},
		{"spread over two windows", []time.Duration{0, 100 * time.Millisecond, 1100 * time.Millisecond, 1200 * time.Millisecond}, 2},
		{"far apart", []time.Duration{0, 10 * time.Second, 20 * time.Second}, 1},
		{"late reply inside the span", []time.Duration{500 * time.Millisecond, 600 * time.Millisecond, 550 * time.Millisecond}, 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tr := New(gcraInfo, 1, 100, window)
			for _, at := range tc.at {
				tr.Observe(0, allow(1), at)
			}
			if got := tr.Result().MaxAdmittedPerWindow; got != tc.want {
				t.Errorf("MaxAdmittedPerWindow after %v = %d; want %d", tc.at, got, tc.want)
			}
		})
	}
}

func TestRejectionsAreNotAdmissions(t *testing.T) {
	t.Parallel()
	tr := New(luaInfo, 2, 1, 1)
	for i := 0; i < 10; i++ {
		tr.Observe(1, reject(int64(i+2)), 0)
	}
	if got := tr.Result().MaxAdmittedPerWindow; got != 0 {
		t.Errorf("MaxAdmittedPerWindow after only rejections = %d; want 0", got)
	}
}

// TestNaiveNewWindow checks that a creator well after the window's first
// opens a new window.
func TestNaiveNewWindow(t *testing.T) {
	t.Parallel()
	tr := New(naiveInfo, 1, 2, 1)
	for _, o := range []struct {
		d  strategies.Decision
		at time.Duration
	}{
		{allow(0), 0}, {allow(1), time.Millisecond}, {reject(2), 2 * time.Millisecond},
		{allow(0), 1100 * time.Millisecond}, {allow(1), 1101 * time.Millisecond},
	} {
		tr.Observe(0, o.d, o.at)
	}
	if got := tr.Result().OverAdmitted; got == nil || *got != 0 {
		t.Errorf("OverAdmitted over two windows of 2 each = %v; want 0", got)
	}
}
