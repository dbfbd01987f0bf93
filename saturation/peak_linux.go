package saturation

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
)

// ResetPeakRSS resets this process's peak resident set (VmHWM) to its
// current one, so that later samples' PeakRSSBytes are the peak from now
// on: it writes 5 to /proc/self/clear_refs (Linux 4.0 and later). An error
// says that the peak could not be reset and is still the process's so far.
func ResetPeakRSS() error {
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		return fmt.Errorf("saturation: reset peak rss: %w", err)
	}
	return nil
}

// peakRSS returns this process's peak resident set in bytes: VmHWM from
// /proc/self/status, which ResetPeakRSS resets (getrusage's maxrss is not
// reset with it), or fromRusage when it cannot be read.
func peakRSS(fromRusage int64) int64 {
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return fromRusage
	}
	for line := range bytes.Lines(status) {
		rest, ok := bytes.CutPrefix(line, []byte("VmHWM:"))
		if !ok {
			continue
		}
		kib, err := strconv.ParseInt(string(bytes.TrimSuffix(bytes.TrimSpace(rest), []byte(" kB"))), 10, 64)
		if err != nil {
			return fromRusage
		}
		return kib << 10
	}
	return fromRusage
}
