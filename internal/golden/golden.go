// Package golden compares test output with golden files under testdata/,
// and rewrites them when the test binary runs with -update.
package golden

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// Check compares got with testdata/name, or writes got there under -update.
func Check(tb testing.TB, name string, got []byte) {
	tb.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			tb.Fatalf("os.WriteFile(%s) = %v; want nil", path, err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		tb.Fatalf("os.ReadFile(%s) = %v; want nil (run go test -update to create it)", path, err)
	}
	if !bytes.Equal(got, want) {
		tb.Errorf("output differs from %s (run go test -update if the change is intended)\ngot:\n%s\nwant:\n%s", path, got, want)
	}
}
