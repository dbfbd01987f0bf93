package main

import (
	"io"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// TestFlagsTableListsEveryFlag checks that the Flags table of docs/flags.md
// has a row for every flag of the load run, so that a flag added to --help
// is not missing from the table a user scans.
func TestFlagsTableListsEveryFlag(t *testing.T) {
	t.Parallel()
	page, err := os.ReadFile("../../docs/flags.md")
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(page), "\n| flag | default | meaning |\n")
	if !ok {
		t.Fatal("docs/flags.md has no | flag | default | meaning | table")
	}
	table, _, _ = strings.Cut(table, "\n\n")
	documented := map[string]bool{}
	rowFlags := regexp.MustCompile(`--([a-z][a-z-]*)`)
	for line := range strings.Lines(table) {
		if first, _, ok := strings.Cut(strings.TrimPrefix(line, "| "), " | "); ok && strings.HasPrefix(line, "| ") {
			for _, m := range rowFlags.FindAllStringSubmatch(first, -1) {
				documented[m[1]] = true
			}
		}
	}
	var o loadOptions
	fs := testCLI.newLoadFlagSet(&o, io.Discard)
	fs.VisitAll(func(f *pflag.Flag) {
		if !documented[f.Name] {
			t.Errorf("--%s (%s) has no row in the Flags table of docs/flags.md", f.Name, f.Usage)
		}
	})
	if len(documented) < 30 {
		t.Errorf("found %d flags in the Flags table of docs/flags.md; want the whole table (is it still one table?)", len(documented))
	}
}
