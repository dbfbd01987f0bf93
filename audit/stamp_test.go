package audit_test

import (
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/rlbench/rlbench/audit"
	"github.com/rlbench/rlbench/internal/redistest"
)

// TestScanWindowStamp checks how Scan reads a window from a key's name,
// key by key, at its edges: a window that ends exactly now is stale, one a
// second later live; milliseconds and nanoseconds are read to the unit; the
// last number is the stamp; a number that cannot be one is unstamped.
func TestScanWindowStamp(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := redistest.Client(t, srv)
	// The audit reads its clock after the keys are written: a window
	// ending an hour from now is live, one that ended a second ago stale.
	now := time.Now().Unix()
	tests := []struct {
		name  string
		stamp string
		key   string
		stale bool
		// unstamped: no number that can be a stamp.
		unstamped bool
	}{
		{name: "ended", stamp: "unix", key: itoa(now - 61), stale: true},
		{name: "ends in an hour", stamp: "unix", key: itoa(now + 3600)},
		{name: "last number is the stamp", stamp: "unix", key: itoa(now+3600) + ":v" + itoa(now-3600), stale: true},
		{name: "ms ended", stamp: "unix-ms", key: itoa((now-61)*1000) + ":minute", stale: true},
		{name: "ms in an hour", stamp: "unix-ms", key: itoa((now+3600)*1000) + ":minute"},
		{name: "ns ended", stamp: "unix-ns", key: itoa((now - 61) * 1e9), stale: true},
		{name: "ns in an hour", stamp: "unix-ns", key: itoa((now + 3600) * 1e9)},
		{name: "index ended", stamp: "index", key: itoa(now/60 - 2), stale: true},
		{name: "index to come", stamp: "index", key: itoa(now/60 + 60)},
		{name: "index overflow", stamp: "index", key: "9223372036854775807", unstamped: true},
		{name: "past the year 9999", stamp: "unix", key: "253402300799", unstamped: true},
		{name: "more than an int64", stamp: "unix", key: "99999999999999999999", unstamped: true},
		{name: "no digits", stamp: "unix", key: "none", unstamped: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			prefix := redistest.Prefix(t)
			if err := rdb.Set(t.Context(), prefix+"k_"+tc.key, 1, 0).Err(); err != nil {
				t.Fatal(err)
			}
			rep, err := audit.Scan(t.Context(), []audit.Node{rdb}, audit.Options{Prefix: prefix, WindowStamp: tc.stamp, Window: time.Minute, StaleMemory: 1})
			if err != nil || rep.StaleFindings == nil {
				t.Fatalf("Scan(%q, %s) = %+v, %v", tc.key, tc.stamp, rep.StaleFindings, err)
			}
			stale, unstamped := rep.Stale == 1, rep.Unstamped == 1
			if stale != tc.stale || unstamped != tc.unstamped || rep.Immortal != 1 {
				t.Errorf("Scan(%q, %s): immortal %d, stale %t, unstamped %t; want 1, %t, %t", tc.key, tc.stamp, rep.Immortal, stale, unstamped, tc.stale, tc.unstamped)
			}
			if wantSampled := int64(rep.Stale); rep.StaleMemorySampled != wantSampled || (rep.Stale == 1) != (rep.StaleMemoryBytes > 0) {
				t.Errorf("Scan(%q, %s): stale memory sampled %d, %d bytes; want %d sampled, bytes > 0 when stale", tc.key, tc.stamp, rep.StaleMemorySampled, rep.StaleMemoryBytes, wantSampled)
			}
		})
	}
}

// TestWindowStampOptions checks that the stamped audit's options are
// refused before any command, with the error of each.
func TestWindowStampOptions(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		opts audit.Options
		want error
	}{
		{"unknown stamp", audit.Options{WindowStamp: "hashed", Window: time.Minute}, audit.ErrInvalidWindowStamp},
		{"stamp without window", audit.Options{WindowStamp: "unix"}, audit.ErrInvalidWindow},
		{"window without stamp", audit.Options{Window: time.Minute}, audit.ErrInvalidWindow},
		{"fractional window", audit.Options{WindowStamp: "index", Window: 1500 * time.Millisecond}, audit.ErrInvalidWindow},
		{"memory without stamp", audit.Options{StaleMemory: 10}, audit.ErrInvalidStaleMemory},
		{"memory too large", audit.Options{WindowStamp: "unix", Window: time.Minute, StaleMemory: audit.MaxSample + 1}, audit.ErrInvalidStaleMemory},
	}
	for _, tc := range tests {
		if err := tc.opts.Validate(); !errors.Is(err, tc.want) {
			t.Errorf("%s: Validate() = %v; want %v", tc.name, err, tc.want)
		}
	}
	if err := (audit.Options{WindowStamp: "unix-ns", Window: time.Minute, StaleMemory: 5}).Validate(); err != nil {
		t.Errorf("Validate(unix-ns, 1m, 5) = %v; want nil", err)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
