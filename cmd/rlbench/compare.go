package main

import (
	"fmt"
	"io"
)

// runCompare is `rlbench compare A.json B.json ...`.
func runCompare(args []string, stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, "rlbench compare: not implemented yet")
	return exitUsage
}
