package peers

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/rlbench/rlbench/results"
	"github.com/rlbench/rlbench/serverinfo"
)

// parseRlbench reads runs[0] from rlbench's --json output, with
// results.ReadReport: the binary compared is built from this tree.
func parseRlbench(data []byte) (*results.Run, error) {
	rep, err := results.ReadReport(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("parse rlbench json: %w", err)
	}
	if len(rep.Runs) == 0 {
		return nil, errors.New("parse rlbench json: no runs")
	}
	r := &rep.Runs[0]
	if r.ThroughputPerS <= 0 || r.Decisions <= 0 {
		return nil, fmt.Errorf("parse rlbench json: runs[0] has throughput_per_s %v and decisions %d; want both > 0", r.ThroughputPerS, r.Decisions)
	}
	return r, nil
}

// gomaxprocs is the CPUs run r's Go code could use at once; 0 if the report
// does not say.
func gomaxprocs(r *results.Run) int {
	if r.Environment == nil {
		return 0
	}
	return r.Environment.GOMAXPROCS
}

// redisBenchmarkResult is one test's row of redis-benchmark --csv.
type redisBenchmarkResult struct {
	rps   float64 // requests per second
	p50Ms float64 // latency percentiles, in milliseconds
	p99Ms float64
}

// parseRedisBenchmarkCSV reads the row after the "test","rps",... header of
// redis-benchmark --csv (Redis 7 layout: test, rps, avg, min, p50, p95, p99,
// max latency in ms), finding the columns by name. Lines before the header,
// such as warnings, are skipped. Exactly one test row is expected.
func parseRedisBenchmarkCSV(out []byte) (redisBenchmarkResult, error) {
	start := -1
	if bytes.HasPrefix(out, []byte(`"test",`)) {
		start = 0
	} else if i := bytes.Index(out, []byte("\n\"test\",")); i >= 0 {
		start = i + 1
	}
	if start < 0 {
		return redisBenchmarkResult{}, fmt.Errorf("parse redis-benchmark --csv: no header line in %q", out)
	}
	r := csv.NewReader(bytes.NewReader(out[start:]))
	header, err := r.Read()
	if err != nil {
		return redisBenchmarkResult{}, fmt.Errorf("parse redis-benchmark --csv: header: %w", err)
	}
	col := make(map[string]int, len(header))
	for i, name := range header {
		col[name] = i
	}
	for _, name := range []string{"rps", "p50_latency_ms", "p99_latency_ms"} {
		if _, ok := col[name]; !ok {
			return redisBenchmarkResult{}, fmt.Errorf("parse redis-benchmark --csv: no %q column in %q", name, header)
		}
	}
	row, err := r.Read()
	if err != nil {
		return redisBenchmarkResult{}, fmt.Errorf("parse redis-benchmark --csv: no result row: %w", err)
	}
	if extra, err := r.Read(); err != io.EOF {
		return redisBenchmarkResult{}, fmt.Errorf("parse redis-benchmark --csv: want one result row, also got %q (%v)", extra, err)
	}
	field := func(name string) (float64, error) {
		v, err := strconv.ParseFloat(row[col[name]], 64)
		if err != nil {
			return 0, fmt.Errorf("parse redis-benchmark --csv: %s: %w", name, err)
		}
		return v, nil
	}
	var res redisBenchmarkResult
	if res.rps, err = field("rps"); err != nil {
		return redisBenchmarkResult{}, err
	}
	if res.rps <= 0 {
		return redisBenchmarkResult{}, fmt.Errorf("parse redis-benchmark --csv: rps %v; want > 0", res.rps)
	}
	if res.p50Ms, err = field("p50_latency_ms"); err != nil {
		return redisBenchmarkResult{}, err
	}
	if res.p99Ms, err = field("p99_latency_ms"); err != nil {
		return redisBenchmarkResult{}, err
	}
	return res, nil
}

// evalshaStats are the server's EVALSHA counters.
type evalshaStats struct {
	calls  int64 // commands run
	failed int64 // failed_calls + rejected_calls
}

// parseEvalshaStats reads the cmdstat_evalsha line of INFO commandstats:
// "cmdstat_evalsha:calls=9,usec=40,usec_per_call=4.44,rejected_calls=0,failed_calls=0".
// A server that has run no EVALSHA has no such line: zero counters.
func parseEvalshaStats(text string) (evalshaStats, error) {
	var s evalshaStats
	line, ok := serverinfo.Parse(text)["cmdstat_evalsha"]
	if !ok {
		return s, nil
	}
	for _, kv := range strings.Split(line, ",") {
		k, v, _ := strings.Cut(kv, "=")
		if k != "calls" && k != "failed_calls" && k != "rejected_calls" {
			continue
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return evalshaStats{}, fmt.Errorf("parse info commandstats: %s: %w", kv, err)
		}
		if k == "calls" {
			s.calls = n
		} else {
			s.failed += n
		}
	}
	return s, nil
}
