package main

import (
	"context"
	"errors"
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

With --baseline A.json, each cell of the other files is judged against the
same cell of A from the per-second samples of both (a Mann-Whitney U test,
as benchstat does), and the exit status is 1 when a throughput (of the
decisions answered) or a p50 or p99 latency is worse beyond the noise by
more than --max-regression, when the error rate rises beyond the noise,
when a figure cannot be judged (too few per-second samples, or none, or
samples too noisy to detect a change of --max-regression where none was
found: see --accept-low-power), or
when a later file lacks a cell of A (unless --allow-missing) or nothing is
compared.
%s`, fs.FlagUsages())
	}
	baseline := fs.String("baseline", "", "report to judge the other files against: exit status 1 on a regression beyond the noise past --max-regression")
	maxRegression := fs.String("max-regression", "5%", "with --baseline: the regression tolerated, a percentage (a throughput lower or a latency higher by more fails)")
	alpha := fs.Float64("alpha", compare.DefaultAlpha, "with --baseline: the significance level of the Mann-Whitney U test (a change with p not above it is beyond the noise)")
	allowMissing := fs.Bool("allow-missing", false, "with --baseline: pass when a later file lacks some of the baseline's cells (by default that fails)")
	acceptLowPower := fs.Bool("accept-low-power", false, "with --baseline: pass a figure with no change beyond the noise whose samples could not detect a change of --max-regression (by default that fails: too few samples to judge)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *baseline == "" {
		for _, name := range []string{"max-regression", "alpha", "allow-missing", "accept-low-power"} {
			if fs.Changed(name) {
				return badInputHelp(fmt.Errorf("--%s needs --baseline", name))
			}
		}
		files, err := compare.ReadFiles(fs.Args())
		if err != nil {
			return badInputHelp(err)
		}
		return printed(compare.Text(compare.New(files))(stdout))
	}
	opts := compare.BaselineOptions{Alpha: *alpha, AllowMissing: *allowMissing, AcceptLowPower: *acceptLowPower}
	return compareBaseline(append([]string{*baseline}, fs.Args()...), *maxRegression, opts, stdout)
}

// compareBaseline is `rlbench compare --baseline A.json B.json ...`.
func compareBaseline(paths []string, maxRegression string, opts compare.BaselineOptions, stdout io.Writer) error {
	var err error
	if opts.MaxRegression, err = compare.ParseRegression(maxRegression); err != nil {
		return badInput(fmt.Errorf("--max-regression: %w", err))
	}
	if err := opts.Validate(); err != nil {
		return badInput(fmt.Errorf("--alpha: %w", err))
	}
	if len(paths) < 2 {
		return badInputHelp(errors.New("--baseline needs at least one report to judge against it"))
	}
	files, err := compare.ReadFiles(paths)
	if err != nil {
		return badInputHelp(err)
	}
	if err := compare.CheckBaseline(files); err != nil {
		return badInput(fmt.Errorf("--baseline: %w", err))
	}
	res := compare.Baseline(files, opts)
	if err := printed(compare.BaselineText(res)(stdout)); err != nil {
		return err
	}
	if !res.Passed() {
		return errReported
	}
	return nil
}
