//go:build !unix

package saturation

import (
	"os"
	"time"
)

// selfUsage reports nothing where getrusage does not exist.
func selfUsage() (cpu time.Duration, peakRSS int64) { return 0, 0 }

// ChildPeakRSS is unknown where getrusage does not exist.
func ChildPeakRSS(*os.ProcessState) int64 { return 0 }
