package examples_test

import (
	"time"

	"github.com/rlbench/rlbench/workload"
)

// workloadOf is a short load under prefix.
func workloadOf(prefix string) workload.Config {
	return workload.Config{Workers: 2, Keys: 5, Duration: 300 * time.Millisecond, Prefix: prefix}
}
