// Package redisserver runs a private redis-server (or valkey-server) process
// for tests and for the rlbench CLI, in the shape of net/http/httptest.Server:
// Start launches it on a free loopback port with persistence off and a
// temporary working directory, Addr says where it listens, and Close stops it
// and removes what it wrote.
//
// It also reads what kind of server answers at an address (Probe) and compares
// dotted version numbers (VersionAtLeast).
package redisserver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/rlbench/rlbench/serverinfo"
)

// ErrNotFound is returned, wrapped, by Start when the redis-server binary
// cannot be found or is not executable. Its message is one line that tells the
// user what to do.
var ErrNotFound = errors.New("redis-server not found on PATH: install it (apt-get install redis-server) or pass --redis-server PATH, or target a running server with --addr host:port")

// DefaultBinary is the program Start looks up on PATH when Options.Binary is empty.
const DefaultBinary = "redis-server"

const (
	// startTimeout caps how long Start and Restart wait for the server to answer PING.
	startTimeout = 10 * time.Second
	// stopTimeout is how long Close and Restart wait after SIGTERM before SIGKILL.
	stopTimeout = 5 * time.Second
	// startAttempts is how many ports Start tries when the chosen port is taken.
	startAttempts = 3
	// pollInterval is the pause between readiness checks.
	pollInterval = 5 * time.Millisecond
	// dialTimeout bounds each connect, read and write of Probe and the readiness check.
	dialTimeout = 2 * time.Second
	// logTailLines is how many trailing lines of the server's output go into errors.
	logTailLines = 15
)

// Options configures Start. The zero value runs "redis-server" from PATH with
// no extra arguments.
type Options struct {
	// Binary is the path to redis-server or valkey-server, or a bare program
	// name looked up on PATH. Default: "redis-server" looked up on PATH.
	Binary string
	// Args are extra config arguments appended to the command line, for
	// example []string{"--maxclients", "20000"}. They must not override
	// --port, --bind, --dir, --daemonize or --logfile, which Start sets. If
	// they set --requirepass, Start authenticates its readiness check with it.
	Args []string
	// TLS, when set, makes the server listen with TLS only, with
	// certificates generated for it (see TLSOptions and Server.TLS).
	TLS *TLSOptions

	sentinel bool // run in sentinel mode (StartSentinel)
}

// Server is a redis-server process started by Start and owned by the caller,
// who must Close it.
type Server struct {
	binary   string   // resolved path of the program
	args     []string // Options.Args
	password string   // --requirepass found in args, for the readiness check
	dir      string   // temporary working directory, removed by Close
	port     int
	addr     string
	info     serverinfo.Info
	tls      *serverTLS // nil for a plain server
	sentinel bool

	mu     sync.Mutex
	proc   *process // nil once closed or after a failed restart
	closed bool
}

// process is one run of the server binary.
type process struct {
	cmd     *exec.Cmd
	out     *os.File      // the process's stdout and stderr
	done    chan struct{} // closed when the process has exited
	waitErr error         // cmd.Wait's result, set before done is closed
}

// Start runs a private redis-server on a free port of 127.0.0.1 with
// persistence off (--save "" --appendonly no) and a temporary --dir, and waits
// until it answers PING, for at most ctx's deadline or 10 seconds. If the
// chosen port turns out to be taken, it retries on another port. If the
// binary is missing, the error wraps ErrNotFound; if the server exits early or
// never answers, the error includes the tail of its log.
//
// On Linux the server is also killed (Pdeathsig) when the process that
// started it dies, so it cannot outlive a crashed test or CLI. The caller must
// still Close the server, which also removes its temporary directory.
func Start(ctx context.Context, opts Options) (*Server, error) {
	binary, err := lookBinary(opts.Binary)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", dirPrefix+strconv.Itoa(os.Getpid())+"-")
	if err != nil {
		return nil, fmt.Errorf("redisserver: start: create temp dir: %w", err)
	}
	s := &Server{
		binary:   binary,
		args:     append([]string(nil), opts.Args...),
		password: requirepass(opts.Args),
		dir:      dir,
		sentinel: opts.sentinel,
	}
	if err := s.setupStart(opts); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("redisserver: start: %w", err)
	}
	for attempt := 1; ; attempt++ {
		port, err := freePort()
		if err != nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("redisserver: start: %w", err)
		}
		s.port = port
		s.addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		proc, info, err := s.launch(ctx)
		if err == nil {
			s.proc, s.info = proc, info
			return s, nil
		}
		if !errors.Is(err, errPortTaken) || attempt == startAttempts {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("redisserver: start: %w", s.explainTLS(err))
		}
	}
}

// Addr returns the address the server listens on, "127.0.0.1:PORT". It stays
// the same across Restart.
func (s *Server) Addr() string { return s.addr }

// serverinfo.Info returns what the server reported in INFO server when it first started.
func (s *Server) Info() serverinfo.Info { return s.info }

// Restart stops the server (SIGTERM, then SIGKILL after 5 seconds) and starts
// it again on the same port, waiting until it answers PING. All data is lost:
// the server runs without persistence. If the port was taken in between,
// Restart fails and the Server is left stopped; Close still cleans up.
func (s *Server) Restart(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errors.New("redisserver: restart: server is closed")
	}
	if s.proc != nil {
		s.proc.stop()
		s.proc = nil
	}
	proc, _, err := s.launch(ctx)
	if err != nil {
		return fmt.Errorf("redisserver: restart %s: %w", s.addr, err)
	}
	s.proc = proc
	return nil
}

// Close stops the server with SIGTERM, waits for it to exit (sending SIGKILL
// after 5 seconds), and removes its temporary directory. Calling Close again
// does nothing and returns nil.
func (s *Server) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	if s.proc != nil {
		s.proc.stop()
		s.proc = nil
	}
	if err := os.RemoveAll(s.dir); err != nil {
		return fmt.Errorf("redisserver: close: remove %s: %w", s.dir, err)
	}
	return nil
}

// errPortTaken marks a launch that failed because another process holds the port.
var errPortTaken = errors.New("port already in use")

// launch starts the binary on s.port and waits until it answers as itself.
// On failure the process has been stopped.
func (s *Server) launch(ctx context.Context) (*process, serverinfo.Info, error) {
	logPath := filepath.Join(s.dir, "redis.log")
	outPath := filepath.Join(s.dir, "redis.out")
	// A fresh log per run, so that errors quote this run only.
	os.Remove(logPath)
	out, err := os.Create(outPath)
	if err != nil {
		return nil, serverinfo.Info{}, fmt.Errorf("create output file: %w", err)
	}
	args := []string{
		"--port", strconv.Itoa(s.port),
		"--bind", "127.0.0.1",
		"--save", "",
		"--appendonly", "no",
		"--dir", s.dir,
		"--daemonize", "no",
		"--logfile", logPath,
	}
	args = s.launchArgs(append(args, s.args...))
	cmd := exec.Command(s.binary, args...)
	cmd.Dir = s.dir
	cmd.Stdout = out
	cmd.Stderr = out
	setParentDeathSignal(cmd)
	if err := cmd.Start(); err != nil {
		out.Close()
		return nil, serverinfo.Info{}, fmt.Errorf("run %s: %w", s.binary, err)
	}
	p := &process{cmd: cmd, out: out, done: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		out.Close()
		close(p.done)
	}()

	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	info, err := s.awaitReady(ctx, p)
	if err != nil {
		p.stop()
		tail := s.logTail(logPath, outPath)
		if strings.Contains(tail, "Address already in use") {
			err = fmt.Errorf("%s: %w", s.addr, errPortTaken)
		}
		if tail != "" {
			err = fmt.Errorf("%w; server output:\n%s", err, tail)
		}
		return nil, serverinfo.Info{}, err
	}
	return p, info, nil
}

// awaitReady polls until the server at s.addr answers PING and INFO server
// reports p's process id, so that another server holding the port is never
// mistaken for this one.
func (s *Server) awaitReady(ctx context.Context, p *process) (serverinfo.Info, error) {
	pid := strconv.Itoa(p.cmd.Process.Pid)
	var lastErr error
	for {
		select {
		case <-p.done:
			return serverinfo.Info{}, fmt.Errorf("%s exited before answering on %s: %v", filepath.Base(s.binary), s.addr, p.waitErr)
		case <-ctx.Done():
			if lastErr == nil {
				lastErr = ctx.Err()
			}
			return serverinfo.Info{}, fmt.Errorf("%s did not answer PING on %s: %w", filepath.Base(s.binary), s.addr, lastErr)
		default:
		}
		fields, err := s.readyInfo(ctx)
		if err == nil {
			if fields["process_id"] == pid {
				return serverinfo.FromFields(fields), nil
			}
			err = fmt.Errorf("%s is answered by another process (pid %s)", s.addr, fields["process_id"])
		}
		lastErr = err
		select {
		case <-time.After(pollInterval):
		case <-p.done:
		case <-ctx.Done():
		}
	}
}

// stop sends SIGTERM, waits up to stopTimeout, then kills the process and
// waits for it to exit.
func (p *process) stop() {
	select {
	case <-p.done:
		return
	default:
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	timer := time.NewTimer(stopTimeout)
	defer timer.Stop()
	select {
	case <-p.done:
	case <-timer.C:
		p.cmd.Process.Kill()
		<-p.done
	}
}

// logTail returns the last lines of the server's log file and of its
// stdout/stderr (where startup errors such as a bad config argument go).
func (s *Server) logTail(paths ...string) string {
	var parts []string
	for _, path := range paths {
		data, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		data = bytes.Trim(data, "\r\n")
		if len(data) == 0 {
			continue
		}
		lines := strings.Split(string(data), "\n")
		if len(lines) > logTailLines {
			lines = lines[len(lines)-logTailLines:]
		}
		parts = append(parts, strings.Join(lines, "\n"))
	}
	return strings.Join(parts, "\n")
}

// lookBinary resolves name (DefaultBinary if empty) to an executable path.
func lookBinary(name string) (string, error) {
	if name == "" {
		name = DefaultBinary
	}
	path, err := exec.LookPath(name)
	if err != nil {
		if name == DefaultBinary {
			return "", fmt.Errorf("redisserver: start: %w", ErrNotFound)
		}
		return "", &notFoundError{binary: name, err: err}
	}
	return path, nil
}

// notFoundError reports an explicitly named binary that cannot be run. It
// matches ErrNotFound with errors.Is but names the binary instead of PATH.
type notFoundError struct {
	binary string
	err    error // from exec.LookPath
}

func (e *notFoundError) Error() string {
	return fmt.Sprintf("redisserver: start: redis-server binary %q not usable (%v): name an executable redis-server (a path, relative to the working directory, or a name on PATH), or target a running server with --addr host:port", e.binary, errors.Unwrap(e.err))
}

func (e *notFoundError) Is(target error) bool { return target == ErrNotFound }

func (e *notFoundError) Unwrap() error { return e.err }

// requirepass returns the value of the last --requirepass in args, or "".
func requirepass(args []string) string {
	password := ""
	for i := 0; i+1 < len(args); i++ {
		if args[i] == "--requirepass" {
			password = args[i+1]
		}
	}
	return password
}

// freePort returns a loopback TCP port that was free a moment ago.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}
