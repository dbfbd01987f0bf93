package usercode

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlbench/rlbench/strategies"
)

// ErrScriptTimeout is returned, wrapped, when a user strategy's script or
// function ran longer than Config.ScriptTimeout and rlbench sent SCRIPT
// KILL (FUNCTION KILL).
var ErrScriptTimeout = errors.New("ran longer than --script-timeout")

// How the watchdog asks: a PING this often, answered within pingWait, or
// the server is blocked; a kill waits killWait for the server, which
// reads nothing before its busy-reply-threshold (5 s by default).
const (
	watchEvery = 200 * time.Millisecond
	pingWait   = time.Second
	killWait   = 30 * time.Second
)

// scriptWatch is the watchdog of a user strategy's cell: on every master,
// a connection of its own that PINGs; a server blocked (no answer, or
// BUSY) for longer than the timeout runs a script too long, and gets
// SCRIPT KILL, or, when FUNCTION STATS names the cell's function on the
// cell's keys, FUNCTION KILL. A --script cannot be told from another
// tenant's script that runs at the same moment (the server names neither);
// a --function can.
type scriptWatch struct {
	label, source string
	timeout       time.Duration
	// function is the function a --function cell calls; "" for a --script.
	function string
	// prefix starts every key of the cell.
	prefix  string
	cancel  context.CancelCauseFunc
	conns   []*redis.Client
	stopped chan struct{}
	// abort, set by stop, ends the wait for a busy server at once.
	abort    context.Context
	wg       sync.WaitGroup
	stopOnce sync.Once
	mu       sync.Mutex
	err      error // the first kill, or why the server stayed busy
}

// watchScripts starts the watchdog of c on nodes; cancel stops c's load.
func watchScripts(c Cell, info strategies.Info, nodes []*redis.Client, cancel context.CancelCauseFunc) *scriptWatch {
	w := &scriptWatch{label: c.Strategy, source: info.Source, timeout: c.ScriptTimeout, prefix: c.RunPrefix,
		cancel: cancel, stopped: make(chan struct{})}
	if strings.Contains(info.Commands, "FCALL") {
		w.function = c.Strategy
	}
	for _, n := range nodes {
		o := *n.Options()
		o.PoolSize, o.MinIdleConns, o.MaxRetries = 1, 0, -1
		o.ReadTimeout, o.ContextTimeoutEnabled = killWait, true
		conn := redis.NewClient(&o)
		w.blocked(conn) // dialled now, before the cell's first saturation sample
		w.conns = append(w.conns, conn)
		w.wg.Add(1)
		go w.node(conn)
	}
	return w
}

// stop stops the watchdog once no script of the cell runs any more (at
// most the timeout and killWait after the load stopped, or when abort is
// done), and returns its error: the kill, or why the server stayed busy.
// Calling it again returns the same error.
func (w *scriptWatch) stop(abort context.Context) error {
	w.stopOnce.Do(func() {
		w.abort = abort
		close(w.stopped)
		w.wg.Wait()
		for _, c := range w.conns {
			c.Close()
		}
		w.cancel(nil)
	})
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// fail records the first error, and stops the cell's load.
func (w *scriptWatch) fail(err error) {
	w.mu.Lock()
	if w.err == nil {
		w.err = err
	}
	w.mu.Unlock()
	w.cancel(err)
}

// node watches one master until stop, and after it until the server
// answers a PING: the load may have stopped (a decision's read timeout,
// an interrupt) with a script of the cell's still running.
func (w *scriptWatch) node(conn *redis.Client) {
	defer w.wg.Done()
	var since, stopAt time.Time
	for {
		stopping := w.isStopping()
		if stopping && stopAt.IsZero() {
			stopAt = time.Now()
		}
		start := time.Now()
		if !w.blocked(conn) {
			if stopping {
				return
			}
			since = time.Time{}
			w.pause()
			continue
		}
		if since.IsZero() {
			since = start
		}
		if time.Since(since) >= w.timeout && w.kill(conn, since) {
			since = time.Time{} // a decision sent since may run it again
		}
		if stopping && w.abort.Err() != nil {
			return
		}
		if stopping && time.Since(stopAt) > w.timeout+killWait {
			w.fail(fmt.Errorf("%s (%s): %s is still busy running a script %s after the load stopped; rlbench stops waiting (SCRIPT KILL, FUNCTION KILL or the script's end frees it)",
				w.label, w.source, conn.Options().Addr, time.Since(since).Round(time.Second)))
			return
		}
		w.pause()
	}
}

func (w *scriptWatch) isStopping() bool {
	select {
	case <-w.stopped:
		return true
	default:
		return false
	}
}

// pause waits watchEvery, or less when the watchdog is told to stop.
func (w *scriptWatch) pause() {
	t := time.NewTimer(watchEvery)
	defer t.Stop()
	if w.isStopping() {
		<-t.C
		return
	}
	select {
	case <-t.C:
	case <-w.stopped:
	}
}

// blocked reports whether the server runs a script: it answers PING with
// BUSY, or not within pingWait. Any other error (a refused connection)
// is not a script's doing.
func (w *scriptWatch) blocked(conn *redis.Client) bool {
	ctx, cancel := context.WithTimeout(context.Background(), pingWait)
	defer cancel()
	err := conn.Ping(ctx).Err()
	return err != nil && (isBusy(err) || errors.Is(err, context.DeadlineExceeded) || isTimeout(err))
}

func isBusy(err error) bool { return err != nil && strings.HasPrefix(err.Error(), "BUSY") }

func isTimeout(err error) bool {
	var ne interface{ Timeout() bool }
	return errors.As(err, &ne) && ne.Timeout()
}

// kill sends SCRIPT KILL (FUNCTION KILL, after FUNCTION STATS named the
// cell's function) for a script that has blocked the server since then,
// and reports whether one of the cell's was killed, or could not be.
func (w *scriptWatch) kill(conn *redis.Client, since time.Time) bool {
	ctx, cancel := context.WithTimeout(context.Background(), killWait)
	defer cancel()
	addr := conn.Options().Addr
	container := "script"
	if w.function != "" {
		if !w.runsOurFunction(ctx, conn) {
			return false
		}
		container = "function"
	}
	err := conn.Do(ctx, container, "kill").Err()
	cmd := strings.ToUpper(container) + " KILL"
	ran := time.Since(since).Round(100 * time.Millisecond) // the server reads the kill at its busy-reply-threshold
	switch {
	case err == nil:
		w.fail(fmt.Errorf("%s (%s): %w (%s): it had run for at least %s; rlbench sent %s to %s, which stopped it",
			w.label, w.source, ErrScriptTimeout, w.timeout, ran, cmd, addr))
		return true
	case strings.HasPrefix(err.Error(), "UNKILLABLE"):
		w.fail(fmt.Errorf("%s (%s): %w (%s): it had run for at least %s; rlbench sent %s to %s, which cannot stop it, the script having written (%w); the server stays busy until the script ends, and rlbench never sends SHUTDOWN",
			w.label, w.source, ErrScriptTimeout, w.timeout, ran, cmd, addr, err))
		return true
	}
	return false // NOTBUSY: it ended; BUSY: another kind of script runs; or no answer
}

// runsOurFunction reports whether FUNCTION STATS names the cell's function,
// called on a key of the cell, as the one running. It answers BUSY while
// a script (not a function) runs.
func (w *scriptWatch) runsOurFunction(ctx context.Context, conn *redis.Client) bool {
	reply, err := conn.Do(ctx, "function", "stats").Result()
	if err != nil {
		return false
	}
	running := field(reply, "running_script")
	name, _ := field(running, "name").(string)
	command, _ := field(running, "command").([]any)
	if name != w.function {
		return false
	}
	for _, word := range command {
		if s, ok := word.(string); ok && strings.HasPrefix(s, w.prefix) {
			return true
		}
	}
	return false
}

// field returns the value of key in a reply that is a map (RESP3) or a
// flat array of pairs (RESP2); nil when absent.
func field(reply any, key string) any {
	switch r := reply.(type) {
	case map[any]any:
		return r[key]
	case map[string]any:
		return r[key]
	case []any:
		for i := 0; i+1 < len(r); i += 2 {
			if k, ok := r[i].(string); ok && k == key {
				return r[i+1]
			}
		}
	}
	return nil
}
