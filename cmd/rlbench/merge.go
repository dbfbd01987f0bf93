package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/pflag"

	"github.com/rlbench/rlbench/excerpt"
	"github.com/rlbench/rlbench/merge"
	"github.com/rlbench/rlbench/results"
)

// runMerge is `rlbench merge A.json B.json ... -o all.json`: it merges the
// reports of several generators that loaded one target at the same time
// (see package merge), writes the merged report and prints its summary
// (on stderr when the report goes to stdout).
// Exit status 0, or 2 for bad input: fewer than two files, a file that
// cannot be read, is not an rlbench report or cannot be merged exactly, no
// cell common to every file, or an output that cannot be written or is one
// of the inputs. Cells missing from some file are left out with a note.
func runMerge(_ context.Context, args []string, stdout, stderr io.Writer) error {
	var out string
	fs := pflag.NewFlagSet("rlbench merge", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.SortFlags = false
	fs.StringVarP(&out, "output", "o", "", `the merged JSON report to write ("-": to stdout, and the summary to stderr); required`)
	fs.Usage = func() {
		fmt.Fprintf(stderr, `Usage: rlbench merge A.json B.json ... -o all.json

Merge the reports (rlbench --json) of several rlbench processes that ran
the same flags against the same server at the same time, e.g. one per
machine. Histograms are added (percentiles are never averaged), counts are
summed, and throughput is the total decisions over the common interval, from
the latest start to the earliest end. Each file's own throughput and
environment are kept in each run's "parts". Cells not in every file are
left out, with a note. rlbench compare and rlbench report read the result.

Flags:
%s`, fs.FlagUsages())
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	paths := fs.Args()
	switch {
	case len(paths) < 2:
		return badInputHelp(fmt.Errorf("%w, got %d", merge.ErrTooFew, len(paths)))
	case out == "":
		return badInputHelp(errors.New("-o: no output file given"))
	}
	files := make([]merge.File, len(paths))
	for i, p := range paths {
		if out != "-" && sameFile(p, out) {
			return badInputHelp(fmt.Errorf("-o %s: would overwrite an input", out))
		}
		rep, err := results.ReadReportFile(p)
		if err != nil {
			return badInputHelp(err)
		}
		files[i] = merge.File{Name: p, Report: rep}
	}
	outFile, err := openOutputFlag("-o", out)
	if err != nil {
		return err
	}
	defer outFile.discard()
	m, err := merge.Merge(files)
	if err != nil {
		return badInputHelp(err)
	}
	for _, n := range m.Notes {
		fmt.Fprintf(stderr, "rlbench merge: note: %s\n", excerpt.Printable(n))
	}
	var buf bytes.Buffer
	if err := merge.JSON(m)(&buf); err != nil {
		return err
	}
	if err := writeOutput(outFile, buf.Bytes(), stdout); err != nil {
		return err
	}
	// The text goes where the JSON does not: stderr under -o -.
	text := stderr
	if outFile != nil {
		fmt.Fprintf(stderr, "rlbench merge: wrote %s: %d cells from %d files\n", out, len(m.Runs), len(files))
		text = stdout
	}
	// The JSON keeps every string as the inputs had it; the text quotes
	// those that would not print as they are.
	summary := m.Results()
	excerpt.PrintableAll(summary)
	return printed(results.Text(summary)(text))
}

// sameFile reports whether a and b name one existing file.
func sameFile(a, b string) bool {
	sa, errA := os.Stat(a)
	sb, errB := os.Stat(b)
	return errA == nil && errB == nil && os.SameFile(sa, sb)
}
