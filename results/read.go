package results

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
)

// Errors the report reader returns, wrapped with the file and the field at
// fault.
var (
	// ErrNotReport means the input is JSON but not a report written by JSON: it
	// has no "tool" field, or another tool's name in it.
	ErrNotReport = errors.New("not an rlbench report")
	// ErrTooLarge means the input is larger than MaxReportBytes.
	ErrTooLarge = errors.New("larger than the 64 MiB a report may be")
	// ErrNoRuns means the report holds no run: nothing to compare, merge or
	// chart (an rlbench interrupted before its first cell writes one).
	ErrNoRuns = errors.New("the report has no runs")
	// ErrNotRun means an element of "runs" is not a run: null, or an
	// object that names no strategy.
	ErrNotRun = errors.New("not a run")
	// ErrImplausible means a figure that no run of rlbench can produce (see
	// Validate for the rules).
	ErrImplausible = errors.New("implausible figure")
)

// MaxReportBytes is the largest report the reader accepts, 64 MiB. A
// report holds a few KiB per run (the histogram, compressed, and the
// percentile curve) and about 100 bytes per second of load, so an hour-long
// run of a hundred cells fits with room to spare; the cap keeps a wrong
// path (a device, a log, `compare /dev/zero`) from filling the memory.
const MaxReportBytes = 64 << 20

// toolName is the Tool of every report rlbench writes.
const toolName = "rlbench"

// File is a report read from a file: the Report, and the fields of the
// file as written, so that fields this build's Report does not declare (a
// newer rlbench's, say) can still be shown.
type File struct {
	// Path is the file's path, as given.
	Path string
	// Report is the file decoded.
	Report *Report
	// Fields holds every top-level field of the file, raw, by name.
	Fields map[string]json.RawMessage
	// RunFields holds every field of each run, raw, by name, in the order of
	// Report.Runs.
	RunFields []map[string]json.RawMessage
}

// ReadFile reads the report at path, as ReadReport does, and keeps its
// fields as written. Every error names the file. It is the one reader of
// report files: compare, merge, report and bench-peers read through it.
func ReadFile(path string) (*File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read report: %w", err)
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Mode().IsRegular() && st.Size() > MaxReportBytes {
		return nil, fmt.Errorf("%s: read report: %w: %d bytes", path, ErrTooLarge, st.Size())
	}
	data, err := readCapped(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	rep, err := decodeReport(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	file := &File{Path: path, Report: rep}
	var raw struct {
		Runs []map[string]json.RawMessage `json:"runs"`
	}
	// decodeReport has checked that data is one JSON object with these shapes.
	if err := json.Unmarshal(data, &file.Fields); err != nil {
		return nil, fmt.Errorf("%s: read report: %w", path, err)
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("%s: read report: runs: %w", path, err)
	}
	file.RunFields = raw.Runs
	return file, nil
}

// ReadReportFile reads the report at path (see ReadReport). Every error
// names the file.
func ReadReportFile(path string) (*Report, error) {
	f, err := ReadFile(path)
	if err != nil {
		return nil, err
	}
	return f.Report, nil
}

// ReadReport decodes a report written by JSON and checks it with Validate.
// Fields that this version of Report does not declare are ignored, so a
// file from a newer rlbench still reads. Config is kept as written, as a
// json.RawMessage. It refuses input over MaxReportBytes (ErrTooLarge), input
// that is not one JSON object with "tool": "rlbench" (ErrNotReport or a
// decoding error), and a report that Validate refuses.
func ReadReport(r io.Reader) (*Report, error) {
	data, err := readCapped(r)
	if err != nil {
		return nil, err
	}
	return decodeReport(data)
}

// readCapped reads r whole, up to MaxReportBytes.
func readCapped(r io.Reader) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxReportBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read report: %w", err)
	}
	if len(data) > MaxReportBytes {
		return nil, fmt.Errorf("read report: %w", ErrTooLarge)
	}
	return data, nil
}

// decodeReport decodes data, which must hold exactly one report object, and
// validates it.
func decodeReport(data []byte) (*Report, error) {
	// A first pass on the envelope alone, so that a file from another tool
	// is named as such rather than by whichever field failed to decode.
	var envelope struct {
		Tool *string `json:"tool"`
	}
	if err := strictUnmarshal(data, &envelope); err != nil {
		return nil, fmt.Errorf("read report: %w: %w", ErrNotReport, err)
	}
	switch {
	case envelope.Tool == nil:
		return nil, fmt.Errorf("read report: %w: no %q field", ErrNotReport, "tool")
	case *envelope.Tool != toolName:
		return nil, fmt.Errorf("read report: %w: tool is %q", ErrNotReport, *envelope.Tool)
	}
	var config json.RawMessage
	rep := &Report{Config: &config}
	if err := strictUnmarshal(data, rep); err != nil {
		return nil, fmt.Errorf("read report: decode: %w", err)
	}
	rep.Config = config
	if len(config) == 0 || string(config) == "null" {
		rep.Config = nil
	}
	if err := checkRuns(data); err != nil {
		return nil, fmt.Errorf("read report: %w", err)
	}
	if err := Validate(rep); err != nil {
		return nil, fmt.Errorf("read report: %w", err)
	}
	return rep, nil
}

// checkRuns refuses a run that is null or names no strategy, which no
// rlbench writes and which would decode as an empty run, drawn as an empty
// cell.
func checkRuns(data []byte) error {
	var raw struct {
		Runs []json.RawMessage `json:"runs"`
	}
	if json.Unmarshal(data, &raw) != nil {
		return nil // decoded already: cannot fail
	}
	for i, r := range raw.Runs {
		if string(r) == "null" {
			return fmt.Errorf("runs[%d] is null: %w: every run rlbench writes is an object naming its strategy and client", i, ErrNotRun)
		}
		var cell struct {
			Strategy string `json:"strategy"`
			Client   string `json:"client"`
		}
		if json.Unmarshal(r, &cell) == nil && cell.Strategy == "" {
			return fmt.Errorf("runs[%d] (%s/%s) names no strategy: %w", i, cell.Strategy, cell.Client, ErrNotRun)
		}
	}
	return nil
}

// strictUnmarshal decodes data into v and refuses anything after the first
// JSON value but white space.
func strictUnmarshal(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(v); err != nil {
		if errors.Is(err, io.EOF) {
			return errors.New("empty input")
		}
		return err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errors.New("data after the report's closing brace")
	}
	return nil
}
