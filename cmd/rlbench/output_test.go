package main

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rlbench/rlbench/internal/proctest"
)

// writeString is a report that writes s.
func writeString(s string) func(io.Writer) error {
	return func(w io.Writer) error {
		_, err := io.WriteString(w, s)
		return err
	}
}

// dirNames returns the names in dir, sorted: what a write left there.
func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// mkfifo makes a FIFO at path and reads from it in the background until
// the writer closes it; the returned function waits and returns what it
// read.
func mkfifo(t *testing.T, path string) (read func() string) {
	t.Helper()
	if err := syscall.Mkfifo(path, 0o644); err != nil {
		t.Fatalf("mkfifo %s: %v", path, err)
	}
	mustChmod(t, path, 0o644) // past the umask
	got := make(chan string, 1)
	go func() {
		f, err := os.Open(path) // blocks until the writer opens it
		if err != nil {
			got <- "open: " + err.Error()
			return
		}
		defer f.Close()
		data, _ := io.ReadAll(f)
		got <- string(data)
	}()
	return func() string {
		select {
		case s := <-got:
			return s
		case <-time.After(10 * time.Second):
			return "nothing: no writer opened the FIFO in 10s"
		}
	}
}

// TestOutputFileKinds writes through openOutput to each kind of path
// (issue 12, item 1: a device, a FIFO or a symbolic link used to become a
// regular file, and a 0600 file a 0644 one). A regular file or a missing
// path is replaced through a rename and keeps its mode; a device or a FIFO
// is written through and stays what it was; a symbolic link stays and the
// file it names is replaced.
func TestOutputFileKinds(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		// setup makes the path in dir and returns it, the file whose
		// content and mode are checked (itself, or a link's target), and
		// read, for a FIFO, which returns what it received.
		setup    func(t *testing.T, dir string) (path, file string, read func() string)
		wantMode os.FileMode // of file's type and permissions after the write
	}{
		{
			name: "missing path: a new 0644 file",
			setup: func(t *testing.T, dir string) (string, string, func() string) {
				p := filepath.Join(dir, "new.json")
				return p, p, nil
			},
			wantMode: 0o644,
		},
		{
			name: "0600 file keeps its mode",
			setup: func(t *testing.T, dir string) (string, string, func() string) {
				p := filepath.Join(dir, "private.json")
				mustWrite(t, p, "old", 0o600)
				return p, p, nil
			},
			wantMode: 0o600,
		},
		{
			name: "symlink to a 0600 file: the link stays, its file is replaced",
			setup: func(t *testing.T, dir string) (string, string, func() string) {
				target := filepath.Join(dir, "real.json")
				mustWrite(t, target, "old", 0o600)
				link := filepath.Join(dir, "link.json")
				mustSymlink(t, "real.json", link)
				return link, target, nil
			},
			wantMode: 0o600,
		},
		{
			name: "symlink to a missing file: the link stays, the file is made",
			setup: func(t *testing.T, dir string) (string, string, func() string) {
				link := filepath.Join(dir, "link.json")
				mustSymlink(t, "later.json", link)
				return link, filepath.Join(dir, "later.json"), nil
			},
			wantMode: 0o644,
		},
		{
			name: "FIFO is written through",
			setup: func(t *testing.T, dir string) (string, string, func() string) {
				p := filepath.Join(dir, "fifo")
				return p, p, mkfifo(t, p)
			},
			wantMode: os.ModeNamedPipe | 0o644,
		},
		{
			name: "character device is written through",
			setup: func(t *testing.T, dir string) (string, string, func() string) {
				p := filepath.Join(dir, "null")
				// The repro: mknod n c 1 3 (a /dev/null of its own).
				if err := syscall.Mknod(p, syscall.S_IFCHR|0o644, 1<<8|3); err != nil {
					t.Skipf("mknod %s c 1 3: %v (needs root)", p, err)
				}
				mustChmod(t, p, 0o644)
				return p, p, nil
			},
			wantMode: os.ModeDevice | os.ModeCharDevice | 0o644,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			path, file, read := tc.setup(t, dir)
			before := dirNames(t, dir)
			if !slices.Contains(before, filepath.Base(file)) {
				before = append(before, filepath.Base(file))
				slices.Sort(before)
			}
			out, err := openOutput("--json", path)
			if err != nil {
				t.Fatalf("openOutput(%s) = %v; want nil", path, err)
			}
			defer out.discard()
			if err := out.write(writeString("new")); err != nil {
				t.Fatalf("write(%s) = %v; want nil", path, err)
			}
			fi, err := os.Lstat(file)
			if err != nil {
				t.Fatal(err)
			}
			if got := fi.Mode(); got != tc.wantMode {
				t.Errorf("after write(%s), %s mode = %v; want %v", path, file, got, tc.wantMode)
			}
			if path != file {
				if fi, err := os.Lstat(path); err != nil || fi.Mode().Type() != os.ModeSymlink {
					t.Errorf("after write(%s): Lstat = %v, %v; want the symbolic link kept", path, fi, err)
				}
			}
			switch {
			case read != nil:
				if got := read(); got != "new" {
					t.Errorf("the FIFO's reader got %q; want %q", got, "new")
				}
			case fi.Mode().IsRegular():
				if got, _ := os.ReadFile(file); string(got) != "new" {
					t.Errorf("after write(%s), %s holds %q; want %q", path, file, got, "new")
				}
			}
			if got := dirNames(t, dir); !slices.Equal(got, before) {
				t.Errorf("after write(%s), the directory holds %q; want %q (no temporary file left)", path, got, before)
			}
		})
	}
}

// TestOutputFileRefused checks the paths openOutput refuses before any work:
// each message names the flag and the path.
func TestOutputFileRefused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tests := []struct {
		name string
		path string
		want string
	}{
		{"directory", dir, "is a directory"},
		{"missing directory", filepath.Join(dir, "no", "such", "file.json"), "no such file or directory"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			out, err := openOutput("--json", tc.path)
			if err == nil {
				out.discard()
				t.Fatalf("openOutput(%s) = nil; want an error", tc.path)
			}
			if msg := err.Error(); !strings.HasPrefix(msg, "--json: cannot write "+tc.path+": ") || !strings.Contains(msg, tc.want) {
				t.Errorf("openOutput(%s) = %q; want it to name --json and the path, and say %q", tc.path, msg, tc.want)
			}
		})
	}
}

// TestOutputFileDiscard checks that an output opened and never written
// leaves the existing file as it was, and no temporary file.
func TestOutputFileDiscard(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "report.json")
	mustWrite(t, path, "earlier", 0o644)
	out, err := openOutput("--json", path)
	if err != nil {
		t.Fatal(err)
	}
	out.discard()
	if got, _ := os.ReadFile(path); string(got) != "earlier" {
		t.Errorf("after discard, %s holds %q; want %q", path, got, "earlier")
	}
	if got := dirNames(t, dir); !slices.Equal(got, []string{"report.json"}) {
		t.Errorf("after discard, the directory holds %q; want only report.json", got)
	}
}

// TestOutputRemovesStaleTemps leaves beside an output path what a killed
// run leaves (issue 12, item 9: a hidden .NAME.PID-N.tmp), and checks
// that opening the output removes it, and nothing of a running process or
// of another name.
func TestOutputRemovesStaleTemps(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	dead := strconv.Itoa(deadPID(t))
	mine := strconv.Itoa(os.Getpid())
	stale := ".o.json." + dead + "-123.tmp"
	kept := []string{
		".o.json." + mine + "-456.tmp", // a running process's
		".o.json.789.tmp",              // no pid: not ours to judge
		".p.json." + dead + "-1.tmp",   // beside another output
		".o.json." + dead + "-x.tmp",   // not the pattern
	}
	for _, name := range append([]string{stale}, kept...) {
		mustWrite(t, filepath.Join(dir, name), "partial", 0o644)
	}
	out, err := openOutput("--json", filepath.Join(dir, "o.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := out.write(writeString("{}")); err != nil {
		t.Fatal(err)
	}
	want := append(slices.Clone(kept), "o.json")
	slices.Sort(want)
	if got := dirNames(t, dir); !slices.Equal(got, want) {
		t.Errorf("after opening o.json, the directory holds %q; want %q (only %s removed)", got, want, stale)
	}
}

// deadPID returns the id of a process that has exited.
func deadPID(t *testing.T) int {
	t.Helper()
	return proctest.DeadPID(t)
}

func mustWrite(t *testing.T, path, content string, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	mustChmod(t, path, mode) // past the umask
}

func mustChmod(t *testing.T, path string, mode os.FileMode) {
	t.Helper()
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}

func mustSymlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

// TestPrinted checks that a closed stdout (EPIPE) is no failure, and that
// any other write error is.
func TestPrinted(t *testing.T) {
	t.Parallel()
	other := errors.New("disk full")
	if err := printed(&os.PathError{Op: "write", Path: "/dev/stdout", Err: syscall.EPIPE}); err != nil {
		t.Errorf("printed(EPIPE) = %v; want nil", err)
	}
	if err := printed(other); err != other {
		t.Errorf("printed(%v) = %v; want it unchanged", other, err)
	}
}
