package main

import (
	"fmt"
	"io"

	"github.com/spf13/pflag"

	"github.com/rlbench/rlbench/compare"
)

// runCompare is `rlbench compare A.json B.json ...`: it prints the cells of
// the files side by side, with ratios against the first file and the spread
// of repeated runs. Exit status 0, or 2 for bad input: no file, a file that
// cannot be read, or one that is not an rlbench report.
func runCompare(args []string, stdout, stderr io.Writer) int {
	fs := pflag.NewFlagSet("rlbench compare", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, `Usage: rlbench compare A.json B.json ...

Print the cells (target x strategy x client) of reports written by
rlbench --json side by side: throughput, p50, p99 and p99.9 per file, with
the ratio of each file to the first; immortal keys and over-admission per
file. A cell that ran more than once (the same command run into several
files) also gets the spread of its runs: min, median, max and the
coefficient of variation, so that noise can be told from a difference.
%s`, fs.FlagUsages())
	}
	if code, ok := parseFlags(fs, args, stderr); !ok {
		return code
	}
	files, err := compare.ReadFiles(fs.Args())
	if err != nil {
		fmt.Fprintf(stderr, "rlbench compare: %v (see rlbench compare --help)\n", err)
		return exitUsage
	}
	if err := compare.Text(compare.New(files))(stdout); err != nil {
		fmt.Fprintf(stderr, "rlbench compare: %v\n", err)
		return exitFailure
	}
	return exitOK
}
