package results

import (
	"fmt"
	"io"
	"strings"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// HGRM returns a reporter that writes h, a latency histogram in
// microseconds, as an HdrHistogram percentile distribution (.hgrm), values
// in milliseconds, 5 ticks per half distance: the format the standard
// HdrHistogram plotter reads.
func HGRM(h *hdrhistogram.Histogram) Reporter {
	return func(w io.Writer) error {
		if h == nil {
			return fmt.Errorf("hgrm report: no histogram")
		}
		if _, err := h.PercentilesPrint(w, 5, 1000); err != nil {
			return fmt.Errorf("hgrm report: write: %w", err)
		}
		return nil
	}
}

// HGRMName is the file name of r's .hgrm file: target, strategy and client,
// with anything but letters, digits, '.', '_' and '-' replaced by '_'.
func (r Run) HGRMName() string {
	parts := []string{r.Strategy, r.Client}
	if r.Target != "" {
		parts = append([]string{r.Target}, parts...)
	}
	name := strings.Join(parts, "-")
	name = strings.Map(func(c rune) rune {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '.', c == '_', c == '-':
			return c
		}
		return '_'
	}, name)
	return name + ".hgrm"
}
