package results_test

import (
	"fmt"
	"time"

	"github.com/rlbench/rlbench/results"
	"github.com/rlbench/rlbench/strategies"
)

func ExampleRecorder() {
	var rec results.Recorder // the zero value is ready to use
	rec.Record(0, 180*time.Microsecond, true, nil)
	rec.Record(1, 220*time.Microsecond, false, nil)
	rec.Record(2, 5*time.Millisecond, false, fmt.Errorf("lua: evalsha: %w", strategies.ReplyError("NOSCRIPT No matching script")))

	run := results.NewRun(&rec, time.Second)
	fmt.Printf("%+v\n", rec.Totals())
	fmt.Println(run.ErrorKinds, run.ThroughputPerS, run.LatencyUS.P50)
	// Output:
	// {Decisions:3 Allowed:1 Rejected:1 Errors:1}
	// map[NOSCRIPT:1] 3 220
}

func ExampleProgress() {
	t := results.Totals{Decisions: 41234, Allowed: 1234, Rejected: 40000}
	fmt.Println(results.Progress("lua/rueidis", 3*time.Second, t, 41203))
	// Output: lua/rueidis  3s  41203/s  allowed 1234  rejected 40000  errors 0
}
