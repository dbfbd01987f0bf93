package audit_test

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlbench/rlbench/audit"
	"github.com/rlbench/rlbench/connection"
	"github.com/rlbench/rlbench/internal/proctest"
	"github.com/rlbench/rlbench/internal/redistest"
)

// stallKeys is how many keys TestScanAfterStall audits, in batches of
// stallCount: a batch small enough for the server to read it whole at
// once when it resumes, as it would a bigger one's first part.
const (
	stallKeys  = 3000
	stallCount = 100
)

// TestScanAfterStall stops the server (SIGSTOP) just before the first
// pipeline that holds a given command, for longer than the read timeout of
// rlbench's own connections, and checks that every figure is exact once it
// resumes: no write is run twice (a retried UNLINK that finds its key gone,
// a key deleted before its TTL was read), and none is lost.
func TestScanAfterStall(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		// at is the command whose pipeline the server stops before: the
		// second that holds it (the first batch's may wait for a dial
		// instead, and never reach the stopped server).
		at   string
		opts audit.Options
		want func(t *testing.T, rep audit.Report, rdb *redis.Client, prefix string)
	}{
		// The clean-up (rlbench cleanup, the in-run audit): deleted == N.
		{"unlink", "unlink", audit.Options{Unlink: true, Dedup: true}, wantDeleted},
		// A stall on the TTL reads of the same audit.
		{"pttl", "pttl", audit.Options{Unlink: true, Dedup: true}, wantDeleted},
		// --fix-ttl: fixed == N, and every key has the TTL.
		{"fix-ttl", "eval", audit.Options{FixTTL: time.Hour}, wantFixed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := redistest.Start(t)
			rdb := redistest.Client(t, srv)
			prefix := redistest.Prefix(t)
			seedImmortal(t, rdb, prefix, stallKeys)
			admin := connection.Admin{}.PlainClient(srv.Addr())
			t.Cleanup(func() { admin.Close() })
			h := &stallHook{t: t, pid: serverPid(t, rdb), at: tc.at, skip: 1, hold: 2 * admin.Options().ReadTimeout}
			admin.AddHook(h)
			opts := tc.opts
			opts.Prefix, opts.Count = prefix, stallCount
			rep, err := audit.Scan(t.Context(), []audit.Node{admin}, opts)
			if err != nil {
				t.Fatalf("Scan after a stall: %v", err)
			}
			if !h.stopped {
				t.Fatalf("no pipeline held %s: the server was never stopped", tc.at)
			}
			if rep.Keys != stallKeys || rep.Immortal != stallKeys || rep.Vanished != 0 || !rep.Complete {
				t.Errorf("Scan after a stall = %d keys, %d immortal, %d vanished, complete %t; want %d, %d, 0, true",
					rep.Keys, rep.Immortal, rep.Vanished, rep.Complete, stallKeys, stallKeys)
			}
			tc.want(t, rep, rdb, prefix)
		})
	}
}

func wantDeleted(t *testing.T, rep audit.Report, rdb *redis.Client, prefix string) {
	t.Helper()
	if rep.Deleted != stallKeys {
		t.Errorf("Scan after a stall deleted %d; want %d", rep.Deleted, stallKeys)
	}
	if n := rdb.DBSize(context.Background()).Val(); n != 0 {
		t.Errorf("DBSIZE after the clean-up = %d; want 0", n)
	}
}

func wantFixed(t *testing.T, rep audit.Report, rdb *redis.Client, prefix string) {
	t.Helper()
	if rep.Fixed != stallKeys || rep.FixSkipped != 0 {
		t.Errorf("Scan after a stall fixed %d, left alone %d; want %d, 0", rep.Fixed, rep.FixSkipped, stallKeys)
	}
	for i := range stallKeys {
		key := prefix + "{" + strconv.Itoa(i) + "}"
		if ttl := rdb.TTL(context.Background(), key).Val(); ttl <= 0 || ttl > time.Hour {
			t.Fatalf("TTL %s after the fix = %s; want up to 1h", key, ttl)
		}
	}
}

// seedImmortal writes n immortal counters under prefix.
func seedImmortal(t *testing.T, rdb *redis.Client, prefix string, n int) {
	t.Helper()
	pipe := rdb.Pipeline()
	for i := range n {
		pipe.Set(t.Context(), prefix+"{"+strconv.Itoa(i)+"}", 1, 0)
	}
	if _, err := pipe.Exec(t.Context()); err != nil {
		t.Fatalf("seed: %v", err)
	}
}

// serverPid is the process id of rdb's server, from INFO server.
func serverPid(t *testing.T, rdb *redis.Client) int {
	t.Helper()
	return proctest.ServerPID(t, rdb)
}

// stallHook stops the server with SIGSTOP before the first pipeline that
// holds the command at (after skip such), and lets it go on (SIGCONT) when that pipeline
// has failed (a connection that does not retry) or after hold (one that
// does: its retry then meets the commands the stopped server had read).
type stallHook struct {
	t       *testing.T
	pid     int
	at      string
	skip    int
	hold    time.Duration
	once    sync.Once
	stopped bool
}

func (h *stallHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *stallHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }

func (h *stallHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if !slices.ContainsFunc(cmds, func(c redis.Cmder) bool { return c.Name() == h.at }) {
			return next(ctx, cmds)
		}
		var resume func()
		if h.skip--; h.skip < 0 {
			h.once.Do(func() { resume = h.stop() })
		}
		if resume == nil {
			return next(ctx, cmds)
		}
		err := next(ctx, cmds)
		resume()
		return err
	}
}

// stop sends SIGSTOP, and returns the SIGCONT that is also sent after
// h.hold and when the test ends.
func (h *stallHook) stop() (resume func()) {
	if err := syscall.Kill(h.pid, syscall.SIGSTOP); err != nil {
		h.t.Errorf("SIGSTOP %d: %v", h.pid, err)
		return func() {}
	}
	h.stopped = true
	var once sync.Once
	resume = func() {
		once.Do(func() {
			if err := syscall.Kill(h.pid, syscall.SIGCONT); err != nil {
				h.t.Errorf("SIGCONT %d: %v", h.pid, err)
			}
		})
	}
	time.AfterFunc(h.hold, resume)
	h.t.Cleanup(resume)
	return resume
}

// TestScanWhileWritesRefused checks that the clean-up waits out a master
// that refuses writes for now (NOREPLICAS: min-replicas-to-write with too
// few replicas, as after a failover until a replica has caught up) and
// deletes every key once it takes writes again, instead of failing.
func TestScanWhileWritesRefused(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := redistest.Client(t, srv)
	prefix := redistest.Prefix(t)
	const n = 300
	seedImmortal(t, rdb, prefix, n)
	if err := rdb.ConfigSet(t.Context(), "min-replicas-to-write", "1").Err(); err != nil {
		t.Fatal(err)
	}
	admin := connection.Admin{}.PlainClient(srv.Addr())
	t.Cleanup(func() { admin.Close() })
	refused := make(chan struct{})
	admin.AddHook(refusedHook{seen: sync.OnceFunc(func() { close(refused) })})
	go func() {
		<-refused // the first UNLINK was refused: the master takes writes again a second later
		time.Sleep(time.Second)
		rdb.ConfigSet(context.Background(), "min-replicas-to-write", "0")
	}()
	rep, err := audit.Scan(t.Context(), []audit.Node{admin}, audit.Options{Prefix: prefix, Unlink: true, Dedup: true, Count: 100})
	if err != nil {
		t.Fatalf("Scan while writes are refused: %v", err)
	}
	if rep.Deleted != n || rep.Immortal != n || !rep.Complete {
		t.Errorf("Scan = %d deleted, %d immortal, complete %t; want %d, %d, true", rep.Deleted, rep.Immortal, rep.Complete, n, n)
	}
	if got := rdb.DBSize(t.Context()).Val(); got != 0 {
		t.Errorf("DBSIZE after the clean-up = %d; want 0", got)
	}
}

// refusedHook calls seen when a pipeline's command is answered NOREPLICAS.
type refusedHook struct{ seen func() }

func (refusedHook) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (refusedHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }
func (h refusedHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		for _, c := range cmds {
			if c.Err() != nil && strings.HasPrefix(c.Err().Error(), "NOREPLICAS") {
				h.seen()
				break
			}
		}
		return err
	}
}
