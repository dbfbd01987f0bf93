package main

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/pflag"

	"github.com/rlbench/rlbench/compare"
)

// runCompare is `rlbench compare A.json B.json ...`: it prints the cells of
// the files side by side, with ratios against the first file and the spread
// of repeated runs. Exit status 0, or 2 for bad input: no file, a file that
// cannot be read, or one that is not an rlbench report.
func runCompare(_ context.Context, args []string, stdout, stderr io.Writer) error {
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
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	files, err := compare.ReadFiles(fs.Args())
	if err != nil {
		return badInputHelp(err)
	}
	return printed(compare.Text(compare.New(files))(stdout))
}
