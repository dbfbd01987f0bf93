// Command rlbench load-tests rate-limiter counter strategies against a real
// Redis and counts the immortal keys (counters with no TTL) they leave.
//
//	rlbench --strategy lua --clients 500
//	rlbench --strategy naive,multi-nx,lua --client go-redis,rueidis --clients 200 --keys 10 --window 1 --duration 10s --json out.json
//
// Each command parses its flags into a config, calls the library and
// returns an error; main alone turns that error into a message and an exit
// status. Every other piece of logic lives in the library packages.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"github.com/rlbench/rlbench"
	"github.com/rlbench/rlbench/redisserver"
)

// Exit statuses.
const (
	exitOK      = 0
	exitFailure = 1 // the run failed, or --fail-on-immortal found immortal keys
	exitUsage   = 2 // bad input: nothing was written to Redis
)

func main() {
	rlbench.SetDefaultGC()
	var debug atomic.Bool // --debug
	dump := func() bool { return debug.Load() || os.Getenv("GOTRACEBACK") != "" }
	ctx, abort, stop := handleSignals(context.Background(), os.Stderr, dump)
	// Private servers' directories of runs that were killed (SIGKILL gives
	// no chance to remove them).
	redisserver.RemoveStaleDirs()
	c := cli{setProcs: setGOMAXPROCS, abort: abort, debug: &debug}
	code := c.main(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// cli is the rlbench command line: its commands, and what they may change
// in the process that runs them.
type cli struct {
	// setProcs sets GOMAXPROCS to n and returns what restores it. Tests,
	// which run many commands in one process, give one that does nothing.
	setProcs func(n int) (restore func())
	// abort is done at the second interrupt (rlbench.Options.Abort); nil
	// means never.
	abort context.Context
	// debug, when not nil, is set by --debug: a SIGQUIT then also writes
	// every goroutine's stack to stderr (handleSignals).
	debug *atomic.Bool
}

// command is one subcommand of rlbench.
type command struct {
	// name follows "rlbench" on the command line; "" is the load run.
	name string
	// usage is the command's line in rlbench --help, after "rlbench ".
	usage string
	// run parses args (those after the name) and does the work. Its error
	// is printed once, by main, after the command's name.
	run func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

// commands is the command table, in the order of rlbench --help.
func (c cli) commands() []command {
	return []command{
		{"", "[flags]", c.load},
		{"verify", "verify [flags]   (check each strategy's guarantees; see rlbench verify --help)", c.verify},
		{"compare", "compare A.json B.json ...   (cells side by side, with ratios)", runCompare},
		{"report", "report A.json ... -o report.html   (one self-contained HTML page)", runReport},
		{"merge", "merge A.json B.json ... -o all.json   (several generators' reports as one, exactly)", runMerge},
		{"audit", "audit --match 'ratelimit:*' --addr host:port   (find immortal keys in any keyspace, read-only)", c.audit},
		{"cleanup", "cleanup --prefix P --addr host:port   (delete the keys of a run that was killed)", c.cleanup},
		{"acl", "acl --strategy lua,multi-nx [--prefix P]   (print the ACL SETUSER line of a least-privilege user)", c.acl},
		{"--version", "--version   (rlbench's version and commit, and the Go and client library versions)", runVersion},
	}
}

// main runs the command args name, and returns its exit status.
func (c cli) main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cmds := c.commands()
	cmd := cmds[0]
	if len(args) > 0 {
		if err := unknownCommand(args[0], cmds); err != nil {
			return exitStatus(stderr, "rlbench", err)
		}
		for _, sub := range cmds[1:] {
			if args[0] == sub.name {
				cmd, args = sub, args[1:]
				break
			}
		}
	}
	name := strings.TrimSpace("rlbench " + cmd.name)
	return exitStatus(stderr, name, cmd.run(ctx, args, stdout, stderr))
}

// usageLines is the command list at the top of rlbench --help.
func (c cli) usageLines() string {
	var b strings.Builder
	for i, cmd := range c.commands() {
		if i == 0 {
			b.WriteString("Usage: rlbench " + cmd.usage + "\n")
		} else {
			b.WriteString("       rlbench " + cmd.usage + "\n")
		}
	}
	return b.String()
}

// usageError is bad input: the command ends with exit status 2, having
// written nothing to Redis.
type usageError struct {
	err error
	// help adds " (see rlbench CMD --help)" to the message.
	help bool
}

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

// badInput marks err as bad input.
func badInput(err error) error { return &usageError{err: err} }

// badInputHelp marks err as bad input, with a pointer to the help.
func badInputHelp(err error) error { return &usageError{err: err, help: true} }

// errReported ends a command with exit status 1 once it has said why on
// stdout (immortal keys under --fail-on-immortal, a verify cell that is not
// as documented): main prints nothing more for it.
var errReported = errors.New("reported on stdout")

// exitStatus prints err on stderr, one line per error it joins, each after
// the command's name, and returns the exit status it means: 0 for nil or
// --help, 2 for bad input, else 1.
func exitStatus(stderr io.Writer, name string, err error) int {
	if err == nil || errors.Is(err, pflag.ErrHelp) {
		return exitOK
	}
	code := exitFailure
	if _, ok := errors.AsType[*usageError](err); ok {
		code = exitUsage
	}
	for _, e := range flatten(err) {
		if errors.Is(e, errReported) {
			continue
		}
		msg := e.Error()
		if ue, ok := errors.AsType[*usageError](e); ok && ue.help {
			msg += " (see " + name + " --help)"
		}
		fmt.Fprintf(stderr, "%s: %s\n", name, redactURLs(msg))
	}
	return code
}

// flatten lists the errors that err joins (errors.Join), or err alone.
func flatten(err error) []error {
	joined, ok := err.(interface{ Unwrap() []error })
	if !ok {
		return []error{err}
	}
	var all []error
	for _, e := range joined.Unwrap() {
		all = append(all, flatten(e)...)
	}
	return all
}

// parseFlags parses args into fs. A value that a Value of flags.go refused
// is bad input with its own message; any other error keeps pflag's, with a
// pointer to the help. After --help it returns pflag.ErrHelp.
func parseFlags(fs *pflag.FlagSet, args []string) error {
	err := fs.Parse(args)
	switch {
	case err == nil, errors.Is(err, pflag.ErrHelp):
		return err
	}
	if ferr, ok := errors.AsType[*flagError](err); ok {
		return badInput(ferr)
	}
	return badInputHelp(unknownFlagError(fs, err))
}

// parseFlagsOnly is parseFlags for a command that takes no arguments
// beside its flags: one is bad input.
func parseFlagsOnly(fs *pflag.FlagSet, args []string) error {
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return badInputHelp(fmt.Errorf("unexpected argument %q", fs.Arg(0)))
	}
	return nil
}

// sameInterrupt is how soon after the first interrupt another counts as
// the same one. timeout(1) signals its child and then the child's process
// group, so two signals come microseconds apart (tens of milliseconds on a
// loaded machine, where the second waits for a CPU); a person who presses
// Ctrl-C again on purpose does so after seeing nothing happen, a reaction
// of 200 ms or more. A second interrupt taken too early costs the run's
// clean-up; one taken as the first costs another press.
const sameInterrupt = 250 * time.Millisecond

// handleSignals returns ctx, done at the first SIGINT, SIGTERM, SIGHUP or
// SIGQUIT, and abort, done at the second (see rlbench.Options.Abort); a
// third ends the process as the signal's default does. A signal within
// sameInterrupt of the first is the same interrupt, not a second: it is
// said on stderr and changes nothing. SIGQUIT (Ctrl-\)
// is an interrupt like the others, so that the run still deletes its keys
// and writes its files; when dump reports true (--debug, or GOTRACEBACK
// set), it first writes every goroutine's stack to stderr, as Go's own
// SIGQUIT does. It also takes SIGPIPE, so that a write to a closed stdout
// fails with EPIPE instead of killing rlbench before it has written its
// files. stop releases the signals.
func handleSignals(parent context.Context, stderr io.Writer, dump func() bool) (ctx, abort context.Context, stop func()) {
	ctx, cancel := context.WithCancel(parent)
	abort, cancelAbort := context.WithCancel(context.Background())
	interrupts := make(chan os.Signal, 2)
	signal.Notify(interrupts, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT)
	pipe := make(chan os.Signal, 1) // never read: the signal is dropped
	signal.Notify(pipe, syscall.SIGPIPE)
	done := make(chan struct{})
	dumpOnQuit := func(s os.Signal) {
		if s == syscall.SIGQUIT && dump != nil && dump() {
			fmt.Fprintf(stderr, "rlbench: %s: every goroutine's stack (--debug or GOTRACEBACK):\n", s)
			_ = pprof.Lookup("goroutine").WriteTo(stderr, 2)
		}
	}
	go func() {
		var first time.Time
		select {
		case s := <-interrupts:
			first = time.Now()
			dumpOnQuit(s)
			cancel()
		case <-done:
			return
		}
		for {
			select {
			case s := <-interrupts:
				if after := time.Since(first); after < sameInterrupt {
					fmt.Fprintf(stderr, "rlbench: signal (%s) %s after the first: the same interrupt (send another to stop at once)\n",
						s, after.Round(time.Millisecond))
					continue
				}
				dumpOnQuit(s)
				fmt.Fprintf(stderr, "rlbench: second signal (%s): stopping at once\n", s)
				cancelAbort()
				signal.Stop(interrupts)
			case <-done:
			}
			return
		}
	}()
	return ctx, abort, func() {
		close(done)
		signal.Stop(interrupts)
		signal.Stop(pipe)
		cancel()
		cancelAbort()
	}
}

// setGOMAXPROCS sets GOMAXPROCS to n and returns what restores it.
func setGOMAXPROCS(n int) (restore func()) {
	prev := runtime.GOMAXPROCS(n)
	return func() { runtime.GOMAXPROCS(prev) }
}

// isTerminal reports whether w is a character device, such as a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
