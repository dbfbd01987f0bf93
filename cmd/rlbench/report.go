package main

import (
	"bytes"
	"context"
	"fmt"
	"io"

	"github.com/spf13/pflag"

	"github.com/rlbench/rlbench/compare"
	"github.com/rlbench/rlbench/htmlreport"
)

// defaultReportPath is where `rlbench report` writes its page when -o is
// not given.
const defaultReportPath = "report.html"

// runReport is `rlbench report A.json ... -o report.html`: one
// self-contained HTML page with the charts of every cell of the files.
// Exit status 0, or 2 for bad input: no file, a file that cannot be read
// or is not an rlbench report, or an output that cannot be written.
func runReport(_ context.Context, args []string, stdout, stderr io.Writer) error {
	var out, title string
	fs := pflag.NewFlagSet("rlbench report", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.SortFlags = false
	fs.StringVarP(&out, "output", "o", defaultReportPath, `the HTML file to write ("-" for stdout)`)
	fs.StringVar(&title, "title", htmlreport.DefaultTitle, "the page's title")
	fs.Usage = func() {
		fmt.Fprintf(stderr, `Usage: rlbench report A.json B.json ... [-o report.html]

Write one self-contained HTML page (it needs no network to open) from
reports written by rlbench --json: the latency percentile curve of every
cell (target x strategy x client) on log scales, its throughput and errors
over time with the faults marked, the immortal keys per cell, and the
environment of each file.

Flags:
%s`, fs.FlagUsages())
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	paths, audits, err := splitAuditFiles(fs.Args())
	var files []*compare.File
	if err == nil && (len(paths) > 0 || len(audits) == 0) {
		files, err = compare.ReadFiles(paths)
	}
	if err != nil {
		return badInputHelp(err)
	}
	outFile, err := openOutputFlag("-o", out)
	if err != nil {
		return err
	}
	defer outFile.discard()
	c := compare.New(files)
	var page bytes.Buffer
	if err := htmlreport.HTML(c, htmlreport.Options{Title: title, Audits: audits})(&page); err != nil {
		return err
	}
	if err := writeOutput(outFile, page.Bytes(), stdout); err != nil || outFile == nil {
		return err
	}
	fmt.Fprintf(stderr, "rlbench report: wrote %s: %s\n", out, reportContents(c, files, audits))
	return nil
}

// reportContents says what the page holds: its cells, files and charts,
// and the audit reports beside them; an audit report alone is named as
// such, with how to add the load runs.
func reportContents(c *compare.Comparison, files []*compare.File, audits []htmlreport.AuditFile) string {
	if len(files) == 0 && len(audits) > 0 {
		what := "the audit report " + audits[0].Path
		if len(audits) > 1 {
			what = fmt.Sprintf("%d audit reports", len(audits))
		}
		return what + " alone (the keyspace audit's TTL distribution and immortal keys; no load run's cells: add files written by rlbench --json to chart them beside it)"
	}
	line := fmt.Sprintf("%d cells from %d files, %d charts", len(c.Cells), len(files), htmlreport.Charts(c))
	switch len(audits) {
	case 0:
	case 1:
		line += ", and 1 audit report"
	default:
		line += fmt.Sprintf(", and %d audit reports", len(audits))
	}
	return line
}
