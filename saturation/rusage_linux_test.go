package saturation

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

// TestPeakRSSIsBytes checks the KiB-to-bytes conversion against the kernel's
// own high-water mark, VmHWM in /proc/self/status, read first: the peak can
// only grow.
func TestPeakRSSIsBytes(t *testing.T) {
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatalf("read /proc/self/status: %v", err)
	}
	var hwmKiB int64 = -1
	for _, line := range strings.Split(string(status), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			hwmKiB, err = strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				t.Fatalf("parse VmHWM %q: %v", line, err)
			}
		}
	}
	if hwmKiB < 0 {
		t.Fatalf("/proc/self/status has no VmHWM line:\n%s", status)
	}
	_, got := selfUsage()
	// Both count the same pages; allow the peak to have grown by 64 MiB since.
	if got < hwmKiB*1024 || got > hwmKiB*1024+64<<20 {
		t.Errorf("selfUsage() peak RSS = %d; want VmHWM %d KiB = %d bytes, or a little more", got, hwmKiB, hwmKiB*1024)
	}
}

func TestMaxrssBytes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		maxrss int64
		goos   string
		want   int64
	}{
		{name: "linux reports KiB", maxrss: 2048, goos: "linux", want: 2 << 20},
		{name: "freebsd reports KiB", maxrss: 1, goos: "freebsd", want: 1024},
		{name: "darwin reports bytes", maxrss: 2048, goos: "darwin", want: 2048},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := maxrssBytes(tc.maxrss, tc.goos); got != tc.want {
				t.Errorf("maxrssBytes(%d, %q) = %d; want %d", tc.maxrss, tc.goos, got, tc.want)
			}
		})
	}
}
