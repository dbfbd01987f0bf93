package clients

import (
	"fmt"
	"math/rand/v2"
	"time"
)

// retryDelay is the delay before the retry after attempts failed ones of
// at most retries, for rueidis' and valkey-go's RetryDelayFn (the twins
// ask it the same way: attempts from 1 at the first failure): 2^attempts
// µs and up to as much jitter, capped at a second; a negative delay, which
// stops, after the last.
func retryDelay(attempts, retries int) time.Duration {
	if attempts > retries {
		return -1
	}
	return min(time.Second, time.Duration(1<<min(attempts, 20)+rand.IntN(1<<min(attempts, 20)))*time.Microsecond)
}

// retryDelayFn is rueidis' and valkey-go's RetryDelay (a RetryDelayFn of
// their command type P) for up to retries retries of one command: their
// default back-off (exponential from 1 µs, at most 1 s, with jitter; their
// own would retry until the context ends), and a negative delay, which
// stops, after the last. They ask it only for a read-only command
// (cmds.Completed.IsRetryable) after a network error, and count attempts
// from 1 at the first failure; nil for none.
func retryDelayFn[P any](retries int) func(attempts int, cmd P, err error) time.Duration {
	if retries == 0 {
		return nil
	}
	return func(attempts int, _ P, _ error) time.Duration { return retryDelay(attempts, retries) }
}

// retrySettings is the settings text of rueidis and valkey-go: what they
// retry and their timeouts, e.g. "retry=off dial_timeout=5s
// conn_write_timeout=10s".
func retrySettings(retries int, dial, connWrite time.Duration) string {
	retry := "retry=off"
	if retries > 0 {
		retry = fmt.Sprintf("retry=%d(read-only)", retries)
	}
	return fmt.Sprintf("%s dial_timeout=%s conn_write_timeout=%s", retry, dial, connWrite)
}
