package main

import (
	"context"
	"fmt"
	"io"
)

// runVerify is `rlbench verify`: it checks each strategy's guarantees.
func runVerify(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, "rlbench verify: not implemented yet")
	return exitUsage
}
