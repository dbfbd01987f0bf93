//go:build !unix

package peers

import "os"

// peakRSS is unknown where there is no getrusage.
func peakRSS(*os.ProcessState) int64 { return 0 }
