package rlbench_test

import (
	"context"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rlbench/rlbench"
	"github.com/rlbench/rlbench/internal/redistest"
	"github.com/rlbench/rlbench/workload"
)

// TestPeakRSSPerCell is issue 35, item 5: a cell's peak RSS is its own
// (VmHWM reset at the cell's start), not the process's high-water mark: a
// 256 MiB buffer touched and freed before the run is in the process's peak
// and not in the cell's. Not parallel: another test's allocations would
// be in the cell's peak.
func TestPeakRSSPerCell(t *testing.T) {
	srv := redistest.Start(t)
	touch := func() {
		buf := make([]byte, 256<<20)
		for i := 0; i < len(buf); i += 4096 {
			buf[i] = 1
		}
	}
	touch()
	debug.FreeOSMemory()
	before := vmHWM(t)
	if before < 256<<20 {
		t.Fatalf("VmHWM = %d bytes after touching 256 MiB; want at least that", before)
	}
	rep, err := rlbench.Run(context.Background(), rlbench.Config{
		Strategies: []string{"lua"},
		Clients:    []string{"go-redis"},
		Window:     60,
		Workload:   workload.Config{Workers: 4, Keys: 10, Duration: 500 * time.Millisecond, Prefix: redistest.Prefix(t)},
		Targets:    []rlbench.TargetSpec{{Addr: srv.Addr()}},
	}, rlbench.Options{})
	if err != nil {
		t.Fatalf("Run error: %v", err)
	}
	sat := rep.Runs[0].Saturation
	if sat == nil {
		t.Fatalf("saturation = nil; want the cell's figures")
	}
	if sat.PeakRSSOfRun || sat.PeakRSSBytes <= 0 || sat.PeakRSSBytes > before-128<<20 {
		t.Errorf("peak RSS = %d bytes (of the run: %v); want the cell's own, under the process's %d less the 256 MiB freed before it", sat.PeakRSSBytes, sat.PeakRSSOfRun, before)
	}
}

// vmHWM returns this process's VmHWM, in bytes, read from /proc/self/status.
func vmHWM(t *testing.T) int64 {
	t.Helper()
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(status), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kib, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				t.Fatalf("parse %q: %v", line, err)
			}
			return kib << 10
		}
	}
	t.Fatalf("/proc/self/status has no VmHWM line")
	return 0
}
