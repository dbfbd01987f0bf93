package results

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
)

// ErrNotReport means the input is JSON but not a report written by JSON: it
// has no "tool" field, or another tool's name in it.
var ErrNotReport = errors.New("not an rlbench report")

// toolName is the Tool of every report rlbench writes.
const toolName = "rlbench"

// ReadReport decodes a report written by JSON. Fields that this version of
// Report does not declare are ignored, so a file from a newer rlbench still
// reads. Config is kept as written, as a json.RawMessage. Input that is not
// one JSON object with "tool": "rlbench" is refused with ErrNotReport or a
// decoding error.
func ReadReport(r io.Reader) (*Report, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("read report: %w", err)
	}
	return decodeReport(data)
}

// ReadReportFile reads the report at path (see ReadReport). Every error names
// the file.
func ReadReportFile(path string) (*Report, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read report: %w", err)
	}
	rep, err := decodeReport(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return rep, nil
}

// decodeReport decodes data, which must hold exactly one report object.
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
	return rep, nil
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
