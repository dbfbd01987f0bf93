package workload

import "time"

// flushDelayWorkers is the fewest closed-loop workers for which
// DefaultFlushDelay is not 0.
const flushDelayWorkers = 100

// DefaultFlushDelay is the rueidis (and valkey-go) MaxFlushDelay,
// clients.Options.FlushDelay, that the rlbench command uses for the
// workload c unless --rueidis-flush-delay is given (in rlbench.Config,
// FlushDelay 0 means none): 20 µs in a closed loop of at least 100
// workers, where it lets rueidis gather a batch per write (as
// redis-benchmark -P does) at no cost in latency; none otherwise, since
// with few workers, or in an open loop, each write would wait for company
// that does not come. docs/performance.md has the measurements behind it.
func DefaultFlushDelay(c Config) time.Duration {
	if c.Rate == 0 && c.WithDefaults().Workers >= flushDelayWorkers {
		return 20 * time.Microsecond
	}
	return 0
}
