package main

import (
	"fmt"
	"io"
)

// runReport is `rlbench report A.json ... -o report.html`.
func runReport(args []string, stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, "rlbench report: not implemented yet")
	return exitUsage
}
