package results

import (
	"bufio"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestHGRM writes a run's histogram and reads the percentile distribution
// back: values in milliseconds, percentiles rising to 1.
func TestHGRM(t *testing.T) {
	t.Parallel()
	var rec Recorder
	for us := 1; us <= 1000; us++ {
		rec.Record(0, time.Duration(us)*time.Microsecond, true, nil)
	}
	run := NewRun(&rec, time.Second)
	run.Target, run.Strategy, run.Client = "redis 7.0", "lua", "go-redis"
	if got, want := run.HGRMName(), "redis_7.0-lua-go-redis.hgrm"; got != want {
		t.Errorf("HGRMName() = %q; want %q", got, want)
	}
	var f strings.Builder
	if err := HGRM(run.Histogram)(&f); err != nil {
		t.Fatalf("HGRM error: %v", err)
	}
	var lastValue, lastPct float64
	rows := 0
	sc := bufio.NewScanner(strings.NewReader(f.String()))
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) != 4 {
			continue
		}
		v, err1 := strconv.ParseFloat(fields[0], 64)
		p, err2 := strconv.ParseFloat(fields[1], 64)
		if err1 != nil || err2 != nil {
			continue // the header
		}
		if v < lastValue || p < lastPct {
			t.Errorf("row %d: value %g, percentile %g after %g, %g; want both rising", rows, v, p, lastValue, lastPct)
		}
		lastValue, lastPct = v, p
		rows++
	}
	if rows < 10 || lastPct != 1 || lastValue < 0.99 || lastValue > 1.01 {
		t.Errorf("hgrm: %d rows, last value %g ms at percentile %g; want >= 10 rows ending at 1 ms, 1.0", rows, lastValue, lastPct)
	}
}
