package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/rlbench/rlbench"
	"github.com/rlbench/rlbench/metrics"
	"github.com/rlbench/rlbench/results"
	"github.com/rlbench/rlbench/thresholds"
)

// serveMetrics serves the run's live metrics on --metrics-addr, when given,
// and returns the sink for rlbench.Options and the function that stops the
// server. A bad address, or one it cannot listen on, is bad input.
func serveMetrics(addr string, log io.Writer) (rlbench.LiveMetrics, func(), error) {
	if addr == "" {
		return nil, func() {}, nil
	}
	exp := metrics.New()
	srv, err := metrics.Listen(addr, exp)
	if err != nil {
		return nil, nil, badInput(fmt.Errorf("--metrics-addr: %w", err))
	}
	fmt.Fprintf(log, "rlbench: serving live metrics at %s\n", srv.Where())
	stop := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := srv.Close(ctx); err != nil {
			fmt.Fprintf(log, "rlbench: %v\n", err)
		}
	}
	return exp, stop, nil
}

// thresholdsValue is --threshold, repeatable: each expression is parsed
// as it is given, so a malformed one is bad input before the run.
type thresholdsValue struct{ p *[]thresholds.Threshold }

func (v thresholdsValue) Set(s string) error {
	th, err := thresholds.Parse(s)
	if err != nil {
		return flagErrorf("--threshold: %w", err)
	}
	*v.p = append(*v.p, th)
	return nil
}

func (v thresholdsValue) String() string {
	texts := make([]string, len(*v.p))
	for i, th := range *v.p {
		texts[i] = th.Expr
	}
	return strings.Join(texts, ",")
}

func (v thresholdsValue) Type() string { return "stringArray" }

// errThresholds ends a run with exit status 1 when a threshold failed; the
// lines after the summary list each with its figure.
var errThresholds = errors.New("--threshold")

// checkThresholds checks ths on rep's cells (before the report is
// written, so that the JSON carries them) and returns the text that the
// summary ends with and errThresholds, wrapped, when any failed.
func checkThresholds(rep *results.Report, ths []thresholds.Threshold) (text func(io.Writer) error, err error) {
	if len(ths) == 0 || rep == nil {
		return func(io.Writer) error { return nil }, nil
	}
	checked, failed := thresholds.Check(rep, ths)
	text = func(w io.Writer) error { return thresholds.Text(w, rep) }
	if failed > 0 {
		return text, fmt.Errorf("%w: %d of %d failed (listed after the summary, with their figures)", errThresholds, failed, checked)
	}
	return text, nil
}
