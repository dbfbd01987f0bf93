package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/rlbench/rlbench"
	"github.com/rlbench/rlbench/metrics"
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
	fmt.Fprintf(log, "rlbench: serving live metrics at %s\n", srv.URL())
	stop := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := srv.Close(ctx); err != nil {
			fmt.Fprintf(log, "rlbench: %v\n", err)
		}
	}
	return exp, stop, nil
}
