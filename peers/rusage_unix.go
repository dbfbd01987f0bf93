//go:build unix

package peers

import (
	"os"
	"runtime"
	"syscall"
)

// peakRSS returns a finished child's peak resident set, in bytes: Linux and
// the BSDs report ru_maxrss in KiB, Darwin in bytes.
func peakRSS(ps *os.ProcessState) int64 {
	ru, ok := ps.SysUsage().(*syscall.Rusage)
	if !ok || ru == nil {
		return 0
	}
	if runtime.GOOS == "darwin" || runtime.GOOS == "ios" {
		return int64(ru.Maxrss)
	}
	return int64(ru.Maxrss) * 1024
}
