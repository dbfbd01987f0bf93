//go:build !linux

package saturation

import (
	"errors"
	"fmt"
)

// ResetPeakRSS cannot reset the peak resident set outside Linux: the peak
// is the process's so far.
func ResetPeakRSS() error {
	return fmt.Errorf("saturation: reset peak rss: %w", errors.ErrUnsupported)
}

// peakRSS is getrusage's peak, fromRusage, outside Linux.
func peakRSS(fromRusage int64) int64 { return fromRusage }
