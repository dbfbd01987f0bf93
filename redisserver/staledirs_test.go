package redisserver

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"github.com/rlbench/rlbench/internal/proctest"
)

// deadPID returns the id of a process that has exited.
func deadPID(t *testing.T) int {
	t.Helper()
	return proctest.DeadPID(t)
}

// TestRemoveStaleDirs leaves in the temporary directory what a run killed
// with SIGKILL leaves (a private server's directory, the server stopped by
// Pdeathsig) beside the directories of a live process and names that are
// not a private server's: only the dead run's directory goes.
func TestRemoveStaleDirs(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp) // os.TempDir; not parallel
	dead := strconv.Itoa(deadPID(t))
	mine := strconv.Itoa(os.Getpid())
	mkdir := func(name string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Join(tmp, name, "data"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	mkdir("rlbench-redis-" + dead + "-123")  // a killed run's: removed
	mkdir("rlbench-redis-" + mine + "-456")  // this process's: kept
	mkdir("rlbench-redis-789")               // no pid (older rlbench): kept
	mkdir("other-" + dead + "-1")            // not a private server's: kept
	file := "rlbench-redis-" + dead + "-999" // a file, not a directory: kept
	if err := os.WriteFile(filepath.Join(tmp, file), nil, 0o644); err != nil {
		t.Fatal(err)
	}

	removed := RemoveStaleDirs()
	if want := []string{filepath.Join(tmp, "rlbench-redis-"+dead+"-123")}; !slices.Equal(removed, want) {
		t.Errorf("RemoveStaleDirs() = %q; want %q", removed, want)
	}
	entries, err := os.ReadDir(tmp)
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, e := range entries {
		left = append(left, e.Name())
	}
	want := []string{"other-" + dead + "-1", "rlbench-redis-" + mine + "-456", "rlbench-redis-789", file}
	slices.Sort(want)
	if !slices.Equal(left, want) {
		t.Errorf("after RemoveStaleDirs, %s holds %q; want %q", tmp, left, want)
	}
}

// TestStartDirNamesProcess checks that a private server's directory names
// the process that started it, which RemoveStaleDirs reads.
func TestStartDirNamesProcess(t *testing.T) {
	t.Parallel()
	srv := startServer(t)
	pid, ok := dirOwner(filepath.Base(srv.dir))
	if !ok || pid != os.Getpid() {
		t.Errorf("dirOwner(%q) = (%d, %t); want (%d, true)", filepath.Base(srv.dir), pid, ok, os.Getpid())
	}
}
