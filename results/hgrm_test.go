package results

import (
	"bufio"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestWriteHGRMFiles writes a run's histogram and reads the percentile
// distribution back: values in milliseconds, percentiles rising to 1.
func TestWriteHGRMFiles(t *testing.T) {
	t.Parallel()
	var rec Recorder
	for us := 1; us <= 1000; us++ {
		rec.Record(0, time.Duration(us)*time.Microsecond, true, nil)
	}
	run := NewRun(&rec, time.Second)
	run.Target, run.Strategy, run.Client = "redis 7.0", "lua", "go-redis"
	dir := t.TempDir()
	paths, err := WriteHGRMFiles(dir, &Report{Runs: []Run{run}})
	if err != nil {
		t.Fatalf("WriteHGRMFiles error: %v", err)
	}
	if want := filepath.Join(dir, "redis_7.0-lua-go-redis.hgrm"); len(paths) != 1 || paths[0] != want {
		t.Fatalf("WriteHGRMFiles paths = %q; want [%q]", paths, want)
	}
	f, err := os.Open(paths[0])
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lastValue, lastPct float64
	rows := 0
	sc := bufio.NewScanner(f)
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
