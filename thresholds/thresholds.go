// Package thresholds checks a run's cells against pass/fail criteria
// written as k6 writes them (rlbench --threshold): "p99<5ms",
// "throughput>10000", "lua/go-redis:errors==0". A threshold holds or fails
// in each cell it applies to, on the cell's final figures (results.Run);
// a figure the cell did not measure fails it.
package thresholds

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rlbench/rlbench/results"
)

// Forms is the accepted syntax, for error messages and help.
const Forms = "[STRATEGY/CLIENT:]METRIC OP VALUE: METRIC is pN (a percentile, p50 p99 p99.9 ...), max or mean (VALUE a duration: 5ms, 500us, 1s), " +
	"throughput (decisions made per second: allowed + rejected), errors, immortal, over or phantom (counts); OP is <, <=, >, >=, == or !=; e.g. p99<5ms, throughput>10000, lua/go-redis:errors==0"

// ErrSyntax is returned, wrapped, for an expression that Parse does not
// accept.
var ErrSyntax = errors.New("want " + Forms)

// Threshold is one parsed expression.
type Threshold struct {
	// Expr is the expression as given.
	Expr string
	// Strategy and Client restrict it to the cells of that strategy and
	// client; both "" means every cell.
	Strategy, Client string
	// Metric is the figure compared: "p99.9", "throughput", "errors" ...
	Metric string
	// Op is the comparison: "<", "<=", ">", ">=", "==" or "!=".
	Op string
	// Value is the bound, in the metric's unit: microseconds for a
	// latency, decisions per second for throughput, a count otherwise.
	Value float64
	// quantile is a percentile's, 0 to 100; -1 for other metrics.
	quantile float64
}

// counts are the metrics that count: their VALUE is a number.
var counts = map[string]bool{"throughput": true, "errors": true, "immortal": true, "over": true, "phantom": true}

// ops, longest first, so that "<=" is not read as "<".
var ops = []string{"<=", ">=", "==", "!=", "<", ">"}

// Parse parses one expression.
func Parse(expr string) (Threshold, error) {
	th := Threshold{Expr: expr, quantile: -1}
	body := strings.TrimSpace(expr)
	if cell, rest, ok := strings.Cut(body, ":"); ok {
		s, c, ok := strings.Cut(cell, "/")
		if !ok || s == "" || c == "" {
			return Threshold{}, fmt.Errorf("%q: prefix %q is not STRATEGY/CLIENT: %w", expr, cell, ErrSyntax)
		}
		th.Strategy, th.Client, body = strings.TrimSpace(s), strings.TrimSpace(c), rest
	}
	i, op := -1, ""
	for _, o := range ops {
		if i = strings.Index(body, o); i >= 0 {
			op = o
			break
		}
	}
	if i < 0 {
		return Threshold{}, fmt.Errorf("%q: no comparison: %w", expr, ErrSyntax)
	}
	th.Op = op
	th.Metric = strings.TrimSpace(body[:i])
	value := strings.TrimSpace(body[i+len(op):])
	if err := th.parseMetric(); err != nil {
		return Threshold{}, fmt.Errorf("%q: %w: %w", expr, err, ErrSyntax)
	}
	v, err := th.parseValue(value)
	if err != nil {
		return Threshold{}, fmt.Errorf("%q: %w: %w", expr, err, ErrSyntax)
	}
	th.Value = v
	return th, nil
}

// parseMetric checks th.Metric and sets th.quantile for a percentile.
func (th *Threshold) parseMetric() error {
	m := th.Metric
	switch {
	case counts[m], m == "max", m == "mean":
		return nil
	case strings.HasPrefix(m, "p"):
		q, err := strconv.ParseFloat(m[1:], 64)
		if err != nil || q <= 0 || q > 100 || strings.ContainsAny(m[1:], "+-eE") {
			return fmt.Errorf("percentile %q is not p followed by a number above 0 and at most 100", m)
		}
		th.quantile = q
		return nil
	}
	return fmt.Errorf("unknown metric %q", m)
}

// parseValue parses the bound in th.Metric's unit.
func (th *Threshold) parseValue(s string) (float64, error) {
	if counts[th.Metric] {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
			return 0, fmt.Errorf("%s needs a number, got %q", th.Metric, s)
		}
		return v, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("%s needs a duration (5ms, 500us, 1s), got %q", th.Metric, s)
	}
	return float64(d) / float64(time.Microsecond), nil
}

// Applies reports whether th applies to the cell of run r.
func (th Threshold) Applies(r *results.Run) bool {
	return th.Strategy == "" || th.Strategy == r.Strategy && th.Client == r.Client
}

// CheckCells returns an error for the first of ths whose STRATEGY/CLIENT
// prefix names no cell of a run of these strategies and clients: it would
// only fail after the whole run.
func CheckCells(ths []Threshold, strategies, clients []string) error {
	for _, th := range ths {
		if th.Strategy == "" || slices.Contains(strategies, th.Strategy) && slices.Contains(clients, th.Client) {
			continue
		}
		return fmt.Errorf("%q: no cell %s/%s in the run (strategies %s; clients %s)", th.Expr, th.Strategy, th.Client,
			strings.Join(strategies, ","), strings.Join(clients, ","))
	}
	return nil
}

// holds compares measured with th's bound.
func (th Threshold) holds(measured float64) bool {
	switch th.Op {
	case "<":
		return measured < th.Value
	case "<=":
		return measured <= th.Value
	case ">":
		return measured > th.Value
	case ">=":
		return measured >= th.Value
	case "==":
		return measured == th.Value
	default:
		return measured != th.Value
	}
}
