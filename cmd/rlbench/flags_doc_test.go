package main

import (
	"io"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// TestFlagsTableListsEveryFlag checks that the README's Flags table has a
// row for every flag of the load run, so that a flag added to --help is
// not missing from the table a user scans.
func TestFlagsTableListsEveryFlag(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(readme), "\n## Flags\n")
	if !ok {
		t.Fatal("README.md has no ## Flags section")
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
			t.Errorf("--%s (%s) has no row in the README's Flags table", f.Name, f.Usage)
		}
	})
	if len(documented) < 30 {
		t.Errorf("found %d flags in the README's Flags table; want the whole table (is it still a table after ## Flags?)", len(documented))
	}
}
