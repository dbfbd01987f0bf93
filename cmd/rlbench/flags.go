package main

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/rlbench/rlbench"
	"github.com/rlbench/rlbench/connection"
	"github.com/rlbench/rlbench/faults"
	"github.com/rlbench/rlbench/workload"
)

// The pflag Values of this file parse a flag's text as it is given, so that
// bad input is refused by Parse itself, with a message naming the flag.

// flagError is a flag's value that its Value refused: the message names the
// flag and says what is accepted. parseFlags prints it as it is, not in
// pflag's `invalid argument "VALUE" for "--flag" flag` form, which would
// echo the value (perhaps a password in a URL).
type flagError struct{ err error }

func (e *flagError) Error() string { return e.err.Error() }
func (e *flagError) Unwrap() error { return e.err }

// flagErrorf returns a *flagError with the message fmt.Errorf gives.
func flagErrorf(format string, args ...any) error {
	return &flagError{fmt.Errorf(format, args...)}
}

// errNotInteger is a count that does not parse, in pflag's own words.
var errNotInteger = errors.New("must be an integer")

// countValue is a count that must be >= 1 when given: in rlbench.Config a
// zero means "the default", on the command line it is bad input.
type countValue[T int | int64] struct {
	p    *T
	flag string
	err  error // what is accepted, e.g. workload.ErrInvalidWorkers
}

func newCountValue[T int | int64](p *T, def T, flag string, err error) *countValue[T] {
	*p = def
	return &countValue[T]{p: p, flag: flag, err: err}
}

func (v *countValue[T]) Set(s string) error {
	n, err := strconv.ParseInt(s, 0, 64)
	if err != nil || int64(T(n)) != n {
		return errNotInteger
	}
	if n < 1 {
		return flagErrorf("%s: %w, got %d", v.flag, v.err, n)
	}
	*v.p = T(n)
	return nil
}

func (v *countValue[T]) String() string { return strconv.FormatInt(int64(*v.p), 10) }

func (v *countValue[T]) Type() string {
	if _, ok := any(*v.p).(int); ok {
		return "int"
	}
	return "int64"
}

// maxProcs is the most CPUs --procs accepts: more than any machine rlbench
// is meant for, far fewer than the threads that would exhaust one.
const maxProcs = 1024

// procsValue is --procs: 1 to maxProcs.
type procsValue struct{ p *int }

func (v procsValue) Set(s string) error {
	n, err := strconv.Atoi(s)
	if err != nil {
		return errNotInteger
	}
	if n < 1 {
		return flagErrorf("--procs must be >= 1, got %d", n)
	}
	if n > maxProcs {
		return flagErrorf("--procs must be <= %d, got %d", maxProcs, n)
	}
	*v.p = n
	return nil
}

func (v procsValue) String() string { return strconv.Itoa(*v.p) }
func (v procsValue) Type() string   { return "int" }

// windowValue is --window: whole seconds >= 1, as a number ("60") or a
// duration ("60s", "1m").
type windowValue struct {
	p    *int64
	text string // as given, for the help's default
}

func (v *windowValue) Set(s string) error {
	n, err := parseWindow(s)
	if err != nil {
		return flagErrorf("--window: %w", err)
	}
	*v.p, v.text = n, s
	return nil
}

func (v *windowValue) String() string { return v.text }
func (v *windowValue) Type() string   { return "string" }

// parseWindow accepts whole seconds >= 1, as a number ("60") or a duration
// ("60s", "1m").
func parseWindow(s string) (int64, error) {
	bad := fmt.Errorf("window must be a whole number of seconds >= 1 (e.g. 1, 60, 60s, 1m), got %q", s)
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		if n < 1 {
			return 0, bad
		}
		return n, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < time.Second || d%time.Second != 0 {
		return 0, bad
	}
	return int64(d / time.Second), nil
}

// faultsValue is --fault, repeatable: each parsed with faults.Parse.
type faultsValue struct{ p *[]faults.Fault }

func (v faultsValue) Set(s string) error {
	f, err := faults.Parse(s)
	if err != nil {
		return flagErrorf("--fault: %w", err)
	}
	*v.p = append(*v.p, f)
	return nil
}

func (v faultsValue) String() string {
	texts := make([]string, len(*v.p))
	for i, f := range *v.p {
		texts[i] = f.String()
	}
	return strings.Join(texts, ",")
}

func (v faultsValue) Type() string { return "stringArray" }

// stagesValue is --stages: a load shape, workload.ParseStages's.
type stagesValue struct{ p *[]workload.Stage }

func (v stagesValue) Set(s string) error {
	stages, err := workload.ParseStages(s)
	if err != nil {
		return flagErrorf("--stages: %w", err)
	}
	*v.p = stages
	return nil
}

func (v stagesValue) String() string { return workload.StagesText(*v.p) }

func (v stagesValue) Type() string { return "stages" }

// listValue is a comma-separated list of names (--strategy, --client). An
// empty name is bad input: an unset shell variable, not a choice.
type listValue struct {
	p        *[]string
	flag     string
	accepted []string // for the message; checked by the library
	changed  bool
}

func newListValue(p *[]string, def []string, flag string, accepted []string) *listValue {
	*p = def
	return &listValue{p: p, flag: flag, accepted: accepted}
}

func (v *listValue) Set(s string) error {
	names := strings.Split(s, ",")
	for _, n := range names {
		if strings.TrimSpace(n) == "" {
			return flagErrorf("%s: empty name in %q (accepted: %s, or all)", v.flag, s, strings.Join(v.accepted, ", "))
		}
	}
	if !v.changed {
		*v.p = nil
	}
	*v.p = append(*v.p, names...)
	v.changed = true
	return nil
}

func (v *listValue) String() string { return "[" + strings.Join(*v.p, ",") + "]" }
func (v *listValue) Type() string   { return "stringSlice" }

// textValue is a string flag that must not be given empty (--prefix, and
// verify's --addr and --redis-server): an empty value is usually an unset
// shell variable, and would silently mean the default.
type textValue struct {
	p     *string
	flag  string
	check func(string) error // nil: anything but ""
	hint  string             // what to do instead of giving it empty
}

func (v textValue) Set(s string) error {
	if s == "" {
		return flagErrorf("%s: empty value; %s", v.flag, v.hint)
	}
	if v.check != nil {
		if err := v.check(s); err != nil {
			return flagErrorf("%s: %w", v.flag, err)
		}
	}
	*v.p = s
	return nil
}

func (v textValue) String() string { return *v.p }
func (v textValue) Type() string   { return "string" }

// targetKind is which flag a targetValue reads.
type targetKind int

const (
	targetAddr targetKind = iota
	targetRedisServer
	targetCluster
	targetManagedCluster
	targetManagedSentinel
)

// targetValue is one of the repeatable target flags, each value
// "[LABEL=]VALUE", parsed into rlbench.TargetSpec.
type targetValue struct {
	specs *[]rlbench.TargetSpec
	flag  string
	kind  targetKind
}

func (v targetValue) Set(s string) error {
	spec, err := parseTargetFlag(s, v.kind)
	if err != nil {
		return flagErrorf("%s: %w", v.flag, err)
	}
	*v.specs = append(*v.specs, spec)
	return nil
}

// String is "" when no value was given, as pflag's help expects of a
// flag with no default.
func (v targetValue) String() string {
	if len(*v.specs) == 0 {
		return ""
	}
	return strconv.Itoa(len(*v.specs)) + " targets"
}

func (v targetValue) Type() string { return "stringArray" }

// parseTargetFlag reads "[LABEL=]VALUE" of the target flag of kind.
func parseTargetFlag(s string, kind targetKind) (rlbench.TargetSpec, error) {
	if kind == targetAddr || kind == targetCluster {
		// Before the label is cut: a URL may hold '='.
		if err := checkAddr(s); err != nil {
			return rlbench.TargetSpec{}, err
		}
	}
	t := rlbench.ParseTarget(s, kind == targetRedisServer)
	value := t.Addr + t.RedisServer
	switch {
	case s == "":
		return t, fmt.Errorf("empty value; %s", emptyTargetHint[kind])
	case value == "":
		return t, fmt.Errorf("empty value in %q; %s", s, emptyTargetHint[kind])
	}
	switch kind {
	case targetManagedCluster:
		t.ManagedCluster, t.Addr = t.Addr, ""
	case targetManagedSentinel:
		t.ManagedSentinel, t.Addr = t.Addr, ""
	case targetCluster:
		nodes := strings.Split(t.Addr, ",")
		for _, n := range nodes {
			if strings.TrimSpace(n) == "" {
				return t, fmt.Errorf("empty node address in %q", s)
			}
		}
		t.Cluster, t.Addr = nodes, ""
	}
	return t, nil
}

// emptyTargetHint says, per target flag, what to do instead of giving it
// an empty value.
var emptyTargetHint = map[targetKind]string{
	targetAddr:            "give [LABEL=]host:port, or leave out --addr to start a private server",
	targetRedisServer:     "give [LABEL=]PATH, or leave out --redis-server for redis-server on PATH",
	targetCluster:         "give [LABEL=]host:port[,host:port...]",
	targetManagedCluster:  "give [LABEL=]N[xR]",
	targetManagedSentinel: "give [LABEL=]R, the number of replicas",
}

// checkAddr refuses an address that is a URL or holds credentials
// ("user:password@host:port"): rlbench takes host:port, and the password
// from --password or $REDISCLI_AUTH. The error shows the value with its
// credentials masked.
func checkAddr(s string) error {
	switch {
	case strings.Contains(s, "@"):
		return fmt.Errorf("%q holds credentials; give host:port, and the password with --password or $REDISCLI_AUTH (or the whole URL to --url)", connection.MaskCredentials(s))
	case strings.Contains(s, "://"):
		return fmt.Errorf("%q is a URL; give host:port, or the URL to --url", s)
	}
	return nil
}

// urlCredentials matches the user information of a URL, up to its '@'.
var urlCredentials = regexp.MustCompile(`://[^\s"'\[\]]*@`)

// redactURLs masks the user information of every URL in s, as the last
// guard on whatever rlbench prints about its input.
func redactURLs(s string) string {
	return urlCredentials.ReplaceAllString(s, "://xxxxx@")
}

// Each Value of this file is a pflag.Value.
var (
	_ pflag.Value = (*countValue[int])(nil)
	_ pflag.Value = procsValue{}
	_ pflag.Value = (*windowValue)(nil)
	_ pflag.Value = faultsValue{}
	_ pflag.Value = (*listValue)(nil)
	_ pflag.Value = textValue{}
	_ pflag.Value = targetValue{}
)

// startAtValue is --start-at: an instant as RFC 3339 ("2026-12-01T21:00:00Z")
// or Unix seconds ("1796066400"). That it is in the future is checked by
// the library, when the run starts.
type startAtValue struct{ p *time.Time }

func (v startAtValue) Set(s string) error {
	t, err := parseInstant(s)
	if err != nil {
		return flagErrorf("--start-at: %v", err)
	}
	*v.p = t
	return nil
}

func (v startAtValue) String() string {
	if v.p.IsZero() {
		return ""
	}
	return v.p.Format(time.RFC3339Nano)
}

func (v startAtValue) Type() string { return "time" }

// parseInstant reads RFC 3339 or Unix seconds (with a fraction, if any).
func parseInstant(s string) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil && f > 0 && f < 1e11 {
		sec := int64(f)
		return time.Unix(sec, int64((f-float64(sec))*1e9)), nil
	}
	return time.Time{}, fmt.Errorf("want RFC 3339 (2026-12-01T21:00:00Z) or Unix seconds (1796066400), got %q", s)
}
