package saturation

import (
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
)

// TestPeakRSSIsBytes checks the KiB-to-bytes conversion against the kernel's
// own high-water mark, VmHWM in /proc/self/status. A 128 MiB buffer touched
// first makes the peak large and settled, so the two agree to a few MiB and a
// conversion off by a factor cannot pass.
func TestPeakRSSIsBytes(t *testing.T) {
	buf := make([]byte, 128<<20)
	for i := 0; i < len(buf); i += 4096 {
		buf[i] = 1
	}
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
	runtime.KeepAlive(buf)
	// Both count the same pages, updated at slightly different moments.
	const slack = 8 << 20
	if want := hwmKiB * 1024; got < 128<<20 || got < want-slack || got > want+slack {
		t.Errorf("selfUsage() peak RSS = %d; want VmHWM %d KiB = %d bytes (within 8 MiB), and at least the 128 MiB touched", got, hwmKiB, want)
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

// TestChildPeakRSS checks a finished child's peak in bytes: any process
// takes hundreds of KiB at least, which ru_maxrss left in KiB would not show.
func TestChildPeakRSS(t *testing.T) {
	t.Parallel()
	cmd := exec.Command("sh", "-c", ":")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	if got := ChildPeakRSS(cmd.ProcessState); got < 100<<10 || got > 1<<30 {
		t.Errorf("ChildPeakRSS(sh -c :) = %d bytes; want between 100 KiB and 1 GiB", got)
	}
}

// TestResetPeakRSS is issue 35, item 5: ResetPeakRSS brings the peak that
// Take reports down to the current resident set, so a 128 MiB buffer
// touched and freed before it is no longer in the peak.
func TestResetPeakRSS(t *testing.T) {
	func() {
		buf := make([]byte, 128<<20)
		for i := 0; i < len(buf); i += 4096 {
			buf[i] = 1
		}
	}()
	debug.FreeOSMemory()
	before := peakRSS(0)
	if err := ResetPeakRSS(); err != nil {
		t.Fatalf("ResetPeakRSS() = %v; want nil on Linux", err)
	}
	after := peakRSS(0)
	if before < 128<<20 || after <= 0 || after > before-64<<20 {
		t.Errorf("peakRSS = %d before ResetPeakRSS, %d after; want at least 128 MiB, then 64 MiB less", before, after)
	}
}
