package main

import (
	"bytes"
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
func runReport(args []string, stdout, stderr io.Writer) int {
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
	if code, ok := parseFlags(fs, args, stderr); !ok {
		return code
	}
	paths, audits, err := splitAuditFiles(fs.Args())
	var files []*compare.File
	if err == nil && (len(paths) > 0 || len(audits) == 0) {
		files, err = compare.ReadFiles(paths)
	}
	if err != nil {
		fmt.Fprintf(stderr, "rlbench report: %v (see rlbench report --help)\n", err)
		return exitUsage
	}
	c := compare.New(files)
	var page bytes.Buffer
	if err := htmlreport.HTML(c, htmlreport.Options{Title: title, Audits: audits})(&page); err != nil {
		fmt.Fprintf(stderr, "rlbench report: %v\n", err)
		return exitFailure
	}
	if code, ok := writeOutput("rlbench report", out, page.Bytes(), stdout, stderr); !ok || out == "-" {
		return code
	}
	fmt.Fprintf(stderr, "rlbench report: wrote %s: %d cells from %d files, %d charts\n", out, len(c.Cells), len(files), htmlreport.Charts(c))
	return exitOK
}
