package workload

import (
	"testing"
	"time"
)

// TestDefaultFlushDelay checks that rueidis waits to gather a batch only in
// a closed loop of many workers.
func TestDefaultFlushDelay(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		c    Config
		want time.Duration
	}{
		{"default workers", Config{}, 0},
		{"99 workers", Config{Workers: 99}, 0},
		{"100 workers", Config{Workers: 100}, 20 * time.Microsecond},
		{"500 workers", Config{Workers: 500}, 20 * time.Microsecond},
		{"open loop", Config{Workers: 500, Rate: 1000}, 0},
	}
	for _, tc := range tests {
		if got := DefaultFlushDelay(tc.c); got != tc.want {
			t.Errorf("%s: DefaultFlushDelay(%+v) = %s; want %s", tc.name, tc.c, got, tc.want)
		}
	}
}
