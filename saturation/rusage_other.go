//go:build !unix

package saturation

import "time"

// selfUsage reports nothing where getrusage does not exist.
func selfUsage() (cpu time.Duration, peakRSS int64) { return 0, 0 }
