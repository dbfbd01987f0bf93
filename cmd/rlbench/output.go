package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// newFileMode is the mode of an output file that did not exist: what
// os.Create gives under the usual umask.
const newFileMode = 0o644

// maxSymlinks bounds how many symbolic links outputFile follows, as the
// kernel's own limit (ELOOP) does.
const maxSymlinks = 40

// outputFile is a file a command writes once its content is complete: a
// report (--json, -o), a profile (--cpuprofile), a histogram (--hdr-dir).
// openOutput checks the path before the command does any work, so that a
// path that cannot be written is bad input found before the first write
// to Redis; write then writes it.
//
// A regular file, or a missing path, is written to a temporary file beside
// it and renamed over it, so that it is only ever replaced by a complete
// file; an existing file keeps its mode. Anything else (a device such as
// /dev/null, a FIFO) is written straight through: it is never replaced. A
// symbolic link is followed: the file it names is replaced, the link stays.
type outputFile struct {
	flag string // the flag that names the file, for errors: "--json", "-o"
	path string // as given
	// target is path with its symbolic links followed, when it names a
	// regular file or nothing; "" when the file is written straight
	// through path.
	target string
	mode   os.FileMode // of the file written at target
	temp   *os.File    // beside target, created by openOutput; nil when written through
}

// openOutput checks that path can be written as the file that flag names:
// it is not a directory, and its directory can hold a new file. It first
// removes the temporary files that rlbench processes which no longer run
// left beside it. The caller must call discard (a no-op once written).
func openOutput(flag, path string) (*outputFile, error) {
	o := &outputFile{flag: flag, path: path, mode: newFileMode}
	fi, err := os.Stat(path) // follows symbolic links
	switch {
	case errors.Is(err, os.ErrNotExist):
		// A missing file, or a link to one: created where the link points.
		if o.target, err = followLinks(path); err != nil {
			return nil, o.errorf(err)
		}
	case err != nil:
		return nil, o.errorf(err)
	case fi.IsDir():
		return nil, o.errorf(errors.New("is a directory"))
	case fi.Mode().IsRegular():
		if o.target, err = filepath.EvalSymlinks(path); err != nil {
			return nil, o.errorf(err)
		}
		o.mode = fi.Mode().Perm()
	default:
		return o, nil // a device, a FIFO, a socket: written through
	}
	removeStaleTemps(o.target)
	f, err := os.CreateTemp(filepath.Dir(o.target), tempPattern(o.target))
	if err != nil {
		return nil, o.errorf(pathErrorCause(err))
	}
	if err := f.Chmod(o.mode); err != nil { // CreateTemp made it 0600
		f.Close()
		os.Remove(f.Name())
		return nil, o.errorf(err)
	}
	o.temp = f
	return o, nil
}

// write writes the file with report: into the temporary file, then renamed
// over the target; or straight through a device or a FIFO.
func (o *outputFile) write(report func(io.Writer) error) error {
	if o.temp == nil {
		f, err := os.OpenFile(o.path, os.O_WRONLY, 0)
		if err != nil {
			return o.errorf(err)
		}
		err = report(f)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return o.errorf(err)
		}
		return nil
	}
	f := o.temp
	o.temp = nil
	err := report(f)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), o.target)
	}
	if err != nil {
		os.Remove(f.Name())
		return o.errorf(err)
	}
	return nil
}

// discard removes the temporary file if it was not written; the path is
// left as it was.
func (o *outputFile) discard() {
	if o == nil || o.temp == nil {
		return
	}
	o.temp.Close()
	os.Remove(o.temp.Name())
	o.temp = nil
}

// errorf says that the file cannot be written, naming the flag and the path
// as the user gave them.
func (o *outputFile) errorf(err error) error {
	return fmt.Errorf("%s: cannot write %s: %w", o.flag, o.path, err)
}

// pathErrorCause returns the cause of a *os.PathError, whose path would be
// the temporary file's, unknown to the user; other errors as they are.
func pathErrorCause(err error) error {
	if pe, ok := errors.AsType[*os.PathError](err); ok {
		return pe.Err
	}
	return err
}

// followLinks follows path's symbolic links, if any, to the path they end
// at, which need not exist.
func followLinks(path string) (string, error) {
	for range maxSymlinks {
		fi, err := os.Lstat(path)
		if err != nil || fi.Mode()&os.ModeSymlink == 0 {
			return path, nil
		}
		link, err := os.Readlink(path)
		if err != nil {
			return "", err
		}
		if !filepath.IsAbs(link) {
			link = filepath.Join(filepath.Dir(path), link)
		}
		path = link
	}
	return "", errors.New("too many levels of symbolic links")
}

// tempPattern is the os.CreateTemp pattern of the temporary files written
// beside target: hidden, with the writer's process id, so that a later run
// can tell those of a process that died (removeStaleTemps).
func tempPattern(target string) string {
	return "." + filepath.Base(target) + "." + strconv.Itoa(os.Getpid()) + "-*.tmp"
}

// removeStaleTemps removes the temporary files beside target that an
// rlbench process left when it was killed before it could rename or remove
// them: those that match tempPattern and whose process no longer runs.
func removeStaleTemps(target string) {
	prefix := "." + filepath.Base(target) + "."
	matches, _ := filepath.Glob(filepath.Join(filepath.Dir(target), globEscape(prefix)+"*-*.tmp"))
	for _, m := range matches {
		pid, ok := tempWriter(filepath.Base(m), prefix)
		if ok && pid != os.Getpid() && !processAlive(pid) {
			os.Remove(m)
		}
	}
}

// tempWriter reads the process id in the name of a temporary file made
// with tempPattern: prefix, the pid, '-', digits, ".tmp".
func tempWriter(name, prefix string) (pid int, ok bool) {
	rest, ok := strings.CutPrefix(name, prefix)
	if !ok {
		return 0, false
	}
	rest, ok = strings.CutSuffix(rest, ".tmp")
	if !ok {
		return 0, false
	}
	pidText, random, ok := strings.Cut(rest, "-")
	if !ok || !allDigits(random) || !allDigits(pidText) {
		return 0, false
	}
	pid, err := strconv.Atoi(pidText)
	return pid, err == nil && pid > 0
}

// allDigits reports whether s is one or more ASCII digits.
func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// globEscape quotes the characters filepath.Match gives a meaning to.
func globEscape(s string) string {
	var b strings.Builder
	for _, c := range s {
		if strings.ContainsRune(`*?[\`, c) {
			b.WriteByte('\\')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// writeOutput writes data to the file out (see openOutputFlag), or to
// stdout when out is nil ("-o -"), where a reader that went away (EPIPE)
// is no failure.
func writeOutput(out *outputFile, data []byte, stdout io.Writer) error {
	write := func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	}
	if out == nil {
		if err := printed(write(stdout)); err != nil {
			return fmt.Errorf("write: %w", err)
		}
		return nil
	}
	return out.write(write)
}

// writeJSONReport writes a JSON report to the file out, or to stdout when out
// is nil (--json -), as writeOutput does.
func writeJSONReport(out *outputFile, report func(io.Writer) error, stdout io.Writer) error {
	if out != nil {
		return out.write(report)
	}
	var data bytes.Buffer
	if err := report(&data); err != nil {
		return fmt.Errorf("json: %w", err)
	}
	return writeOutput(out, data.Bytes(), stdout)
}

// printed returns the error of a write to stdout, or nil when stdout was
// closed by its reader (EPIPE: `rlbench ... | head -1`), which is a reason
// to stop printing, not a failure of the command.
func printed(err error) error {
	if errors.Is(err, syscall.EPIPE) {
		return nil
	}
	return err
}

// openOutputFlag opens the file that flag (-o, --json) names (see
// openOutput); "-" is stdout, for which it returns nil. A path that cannot
// be written is bad input.
func openOutputFlag(flag, path string) (*outputFile, error) {
	if path == "-" {
		return nil, nil
	}
	f, err := openOutput(flag, path)
	if err != nil {
		return nil, badInput(err)
	}
	return f, nil
}
