//go:build unix

package saturation

import (
	"os"
	"runtime"
	"syscall"
	"time"
)

// selfUsage returns this process's user+sys CPU time and peak resident set,
// in bytes, from getrusage(RUSAGE_SELF); zeros if the call fails.
func selfUsage() (cpu time.Duration, peakRSS int64) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, 0
	}
	cpu = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	return cpu, maxrssBytes(int64(ru.Maxrss), runtime.GOOS)
}

// ChildPeakRSS returns a finished child process's peak resident set, in
// bytes; 0 where the OS does not report it.
func ChildPeakRSS(ps *os.ProcessState) int64 {
	ru, ok := ps.SysUsage().(*syscall.Rusage)
	if !ok || ru == nil {
		return 0
	}
	return maxrssBytes(int64(ru.Maxrss), runtime.GOOS)
}

// maxrssBytes converts ru_maxrss to bytes: Darwin and iOS report bytes,
// Linux and the BSDs KiB.
func maxrssBytes(maxrss int64, goos string) int64 {
	if goos == "darwin" || goos == "ios" {
		return maxrss
	}
	return maxrss * 1024
}
