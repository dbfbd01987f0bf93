package compare

import (
	"encoding/json"
	"errors"

	"github.com/rlbench/rlbench/excerpt"
	"github.com/rlbench/rlbench/results"
)

// ErrNoFiles is returned by ReadFiles when it is given no path.
var ErrNoFiles = errors.New("no report files given")

// File is one report read from disk: the Report, and the fields of the file
// as written, so that fields this build's Report does not declare (a newer
// rlbench's target label or environment, say) can still be keyed on and shown.
type File struct {
	// Path is the file's path, as given.
	Path string
	// Name is the file's short name in tables and charts: "A", "B", ...
	Name string
	// Report is the file decoded by results.ReadFile.
	Report *results.Report
	// Fields holds every top-level field of the file, raw, by name.
	Fields map[string]json.RawMessage
	// RunFields holds every field of each run, raw, by name, in the order of
	// Report.Runs.
	RunFields []map[string]json.RawMessage
}

// ReadFile reads the rlbench JSON report at path with results.ReadFile,
// which bounds and validates it. Every error names the file. Every string
// of the Report that would not print as it is (a control character, a
// carriage return, invalid UTF-8) is quoted (excerpt.PrintableAll), so that
// a file cannot write to the terminal through a strategy's or a target's
// name; Fields stay as written.
func ReadFile(path string) (*File, error) {
	f, err := results.ReadFile(path)
	if err != nil {
		return nil, err
	}
	excerpt.PrintableAll(f.Report)
	return &File{Path: f.Path, Report: f.Report, Fields: f.Fields, RunFields: f.RunFields}, nil
}

// ReadFiles reads every path with ReadFile and names the files "A", "B", ...
// in the order given. It stops at the first file that cannot be read, and
// returns ErrNoFiles for an empty list.
func ReadFiles(paths []string) ([]*File, error) {
	if len(paths) == 0 {
		return nil, ErrNoFiles
	}
	files := make([]*File, 0, len(paths))
	for i, p := range paths {
		f, err := ReadFile(p)
		if err != nil {
			return nil, err
		}
		f.Name = FileName(i)
		files = append(files, f)
	}
	return files, nil
}

// FileName is the short name of the i-th file (from 0): "A" to "Z", then
// "AA", "AB", ... as spreadsheet columns are named.
func FileName(i int) string {
	name := ""
	for i++; i > 0; i = (i - 1) / 26 {
		name = string(rune('A'+(i-1)%26)) + name
	}
	return name
}

// Server is the server run i was made against: the run's own "server" when
// the file has one per run (a run over several targets), else the report's.
func (f *File) Server(i int) results.Server {
	if s := f.Report.Runs[i].Server; s != nil && *s != (results.Server{}) {
		return *s
	}
	return f.Report.Server
}

// Target names the target of run i in a cell's key: the run's "target"
// label when the file has one, else "name version" for a private server,
// whose address is a random port, or the address of an existing one.
func (f *File) Target(i int) string {
	if label := f.Report.Runs[i].Target; label != "" {
		return label
	}
	return serverKey(f.Server(i))
}

// Key is run i's cell: its target, strategy and client.
func (f *File) Key(i int) Key {
	r := &f.Report.Runs[i]
	return Key{Target: f.Target(i), Strategy: r.Strategy, Client: r.Client}
}

// serverKey names a server with no label: its address, or its software
// for a private server, whose address is a random port.
func serverKey(s results.Server) string {
	if s.Addr != "" && !s.Managed {
		return s.Addr
	}
	return s.Software()
}
