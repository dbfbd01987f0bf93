package clients

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	redigo "github.com/gomodule/redigo/redis"

	"github.com/rlbench/rlbench/strategies"
)

// redigoDialTimeout is redigo's own connect timeout (redis.DialContext's
// net.Dialer), pinned so that the report states it.
const redigoDialTimeout = 30 * time.Second

// redigoAdapter adapts a redigo redis.Pool: each round trip takes a
// connection of the pool (GetContext), sends its commands (Do, or Send,
// Flush and Receive for several in one write) and puts it back (Close).
// redigo speaks RESP2, to a single server: it has no cluster or Sentinel
// support of its own (Topologies).
type redigoAdapter struct {
	pool      *redigo.Pool
	server    string
	opts      string
	fallbacks atomic.Int64
	libs      libraries
	// scripts holds a redigo Script (with its SHA-1) per strategies.Script.
	scripts sync.Map
}

func newRedigo(o Options) (*redigoAdapter, error) {
	dial := []redigo.DialOption{
		redigo.DialUsername(o.Username),
		redigo.DialPassword(o.Password),
		redigo.DialDatabase(o.DB),
		redigo.DialConnectTimeout(cmp.Or(o.DialTimeout, redigoDialTimeout)),
		redigo.DialReadTimeout(o.ReadTimeout),
		redigo.DialWriteTimeout(o.WriteTimeout),
	}
	if o.ClientName != "" {
		dial = append(dial, redigo.DialClientName(o.ClientName))
	}
	if o.TLS != nil {
		dial = append(dial, redigo.DialUseTLS(true), redigo.DialTLSConfig(o.TLS))
	}
	size := poolSize(o)
	addr := o.Addr
	pool := &redigo.Pool{
		DialContext: func(ctx context.Context) (redigo.Conn, error) {
			return redigo.DialContext(ctx, "tcp", addr, dial...)
		},
		// Every connection the workers opened stays open between round
		// trips, and a worker beyond the pool waits for one.
		MaxActive: size,
		MaxIdle:   size,
		Wait:      true,
	}
	return &redigoAdapter{
		pool:   pool,
		server: addr,
		libs:   libraries{beforeLoad: o.BeforeLoad},
		opts: fmt.Sprintf("pool_size=%d (max_active=%d max_idle=%d wait=on) protocol=2 retries=none dial_timeout=%s read_timeout=%s write_timeout=%s",
			size, size, size, cmp.Or(o.DialTimeout, redigoDialTimeout), timeoutText(o.ReadTimeout), timeoutText(o.WriteTimeout)),
	}, nil
}

// timeoutText is a redigo timeout as the report states it: 0 is none.
func timeoutText(d time.Duration) string {
	if d == 0 {
		return "none"
	}
	return d.String()
}

func (a *redigoAdapter) Name() string     { return "redigo" }
func (a *redigoAdapter) Options() string  { return a.opts }
func (a *redigoAdapter) Fallbacks() int64 { return a.fallbacks.Load() }
func (a *redigoAdapter) Close() error     { return a.pool.Close() }

// Open takes conns connections of the pool (at most its size) at once,
// with fillDialers goroutines, PINGs each and puts them back, idle; it
// stops at the first that fails.
func (a *redigoAdapter) Open(ctx context.Context, conns int) error {
	n := min(max(conns, 1), a.pool.MaxActive)
	ctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	held := make([]redigo.Conn, n)
	var wg sync.WaitGroup
	for d := range min(n, fillDialers) {
		wg.Go(func() {
			for i := d; i < n && ctx.Err() == nil; i += fillDialers {
				c, err := a.pool.GetContext(ctx)
				if err == nil {
					held[i] = c
					_, err = redigo.DoContext(c, ctx, "PING")
				}
				if err != nil {
					stop(err)
					return
				}
			}
		})
	}
	wg.Wait()
	for _, c := range held {
		if c != nil {
			c.Close() // back to the pool; a failed one is dropped
		}
	}
	if err := context.Cause(ctx); err != nil {
		return fmt.Errorf("open %d connections to %s: %w", n, a.server, redigoErr(err))
	}
	return nil
}

// do sends one command, a round trip named name, unless the context's
// strategies.Tap stops it, on a connection of the pool.
func (a *redigoAdapter) do(ctx context.Context, name, cmd string, args ...any) (any, error) {
	if err := tapRueidis(ctx, name); err != nil {
		return nil, err
	}
	return a.raw(ctx, cmd, args...)
}

// raw sends one command without the Tap: the library bookkeeping's.
func (a *redigoAdapter) raw(ctx context.Context, cmd string, args ...any) (any, error) {
	c, err := a.pool.GetContext(ctx)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	v, err := redigo.DoContext(c, ctx, cmd, args...)
	return v, redigoErr(err)
}

func (a *redigoAdapter) Get(ctx context.Context, key string) (int64, bool, error) {
	v, err := a.do(ctx, "GET", "GET", key)
	if err == nil && v == nil {
		return 0, false, nil
	}
	n, err := redigo.Int64(v, err)
	if err != nil {
		return 0, false, redigoErr(err)
	}
	return n, true, nil
}

func (a *redigoAdapter) SetExAt(ctx context.Context, key string, n int64, unixSeconds int64) error {
	_, err := a.do(ctx, "SET EXAT", "SET", key, n, "EXAT", unixSeconds)
	return err
}

func (a *redigoAdapter) Incr(ctx context.Context, key string) (int64, error) {
	n, err := redigo.Int64(a.do(ctx, "INCR", "INCR", key))
	return n, redigoErr(err)
}

func (a *redigoAdapter) Expire(ctx context.Context, key string, seconds int64) (bool, error) {
	ok, err := redigo.Bool(a.do(ctx, "EXPIRE", "EXPIRE", key, seconds))
	return ok, redigoErr(err)
}

// IncrExpireNX sends MULTI, INCR, EXPIRE NX and EXEC in one write.
func (a *redigoAdapter) IncrExpireNX(ctx context.Context, key string, seconds int64) (int64, error) {
	return a.execFirst(ctx, "MULTI+INCR+EXPIRE NX+EXEC", []any{"INCR", key}, []any{"EXPIRE", key, seconds, "NX"})
}

// HIncrExpireNX sends MULTI, HINCRBY, HEXPIRE NX and EXEC in one write.
func (a *redigoAdapter) HIncrExpireNX(ctx context.Context, key, field string, seconds int64) (int64, error) {
	return a.execFirst(ctx, "MULTI+HINCRBY+HEXPIRE NX+EXEC",
		[]any{"HINCRBY", key, field, 1}, []any{"HEXPIRE", key, seconds, "NX", "FIELDS", 1, field})
}

// execFirst runs cmds in MULTI..EXEC and returns the first one's reply,
// an integer, or the most specific error.
func (a *redigoAdapter) execFirst(ctx context.Context, name string, cmds ...[]any) (int64, error) {
	exec, err := a.transaction(ctx, name, cmds)
	if err != nil {
		if errors.Is(err, strategies.ErrTransactionAborted) {
			if re, ok := errors.AsType[strategies.ReplyError](err); ok {
				return 0, re // the queuing error says why
			}
		}
		return 0, err
	}
	if len(exec) != len(cmds) {
		return 0, fmt.Errorf("exec: reply has %d elements; want %d", len(exec), len(cmds))
	}
	n, err := redigo.Int64(exec[0], nil)
	return n, redigoErr(err)
}

// EvalInts runs s with redigo's Script.DoContext: EVALSHA, then EVAL on
// NOSCRIPT, on one connection of the pool that shows each to the Tap and
// counts the EVAL (tappedConn).
func (a *redigoAdapter) EvalInts(ctx context.Context, s *strategies.Script, keys []string, args strategies.Args) ([]int64, error) {
	sc, ok := a.scripts.Load(s)
	if !ok {
		sc, _ = a.scripts.LoadOrStore(s, redigo.NewScript(-1, s.Src))
	}
	c, err := a.pool.GetContext(ctx)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	return redigoInts(sc.(*redigo.Script).DoContext(ctx, tappedConn{c, a}, keysAndArgs(keys, args.Any())...))
}

// redigoInts is the reply of a script or a function as EvalInts returns
// it: an array of integers, or a bare integer as strategies.IntegerReply.
func redigoInts(reply any, err error) ([]int64, error) {
	if n, ok := reply.(int64); ok && err == nil {
		return nil, strategies.IntegerReply(n)
	}
	v, err := redigo.Int64s(reply, err)
	return v, redigoErr(err)
}

// keysAndArgs is the key count, the keys and the arguments of an EVAL,
// EVALSHA or FCALL.
func keysAndArgs(keys []string, args []any) []any {
	out := make([]any, 0, 1+len(keys)+len(args))
	out = append(out, len(keys))
	for _, k := range keys {
		out = append(out, k)
	}
	return append(out, args...)
}

// tappedConn is a pooled connection for redigo's Script: each command it
// is given is a round trip the Tap sees, and an EVAL is a fallback.
type tappedConn struct {
	redigo.Conn
	a *redigoAdapter
}

func (c tappedConn) DoContext(ctx context.Context, cmd string, args ...any) (any, error) {
	if err := tapRueidis(ctx, cmd); err != nil {
		return nil, err
	}
	if cmd == "EVAL" {
		c.a.fallbacks.Add(1)
	}
	return redigo.DoContext(c.Conn, ctx, cmd, args...)
}

func (c tappedConn) ReceiveContext(ctx context.Context) (any, error) {
	return redigo.ReceiveContext(c.Conn, ctx)
}

// FCallInts sends FCALL fn numkeys keys... args....
func (a *redigoAdapter) FCallInts(ctx context.Context, fn string, keys []string, args strategies.Args) ([]int64, error) {
	return redigoInts(a.do(ctx, "FCALL", "FCALL", append([]any{fn}, keysAndArgs(keys, args.Any())...)...))
}

func (a *redigoAdapter) HIncrBy(ctx context.Context, key, field string, n int64) (int64, error) {
	v, err := redigo.Int64(a.do(ctx, "HINCRBY", "HINCRBY", key, field, n))
	return v, redigoErr(err)
}

func (a *redigoAdapter) HExpire(ctx context.Context, key, field string, seconds int64) (int64, error) {
	return redigoFirstInt(a.do(ctx, "HEXPIRE", "HEXPIRE", key, seconds, "FIELDS", 1, field))
}

func (a *redigoAdapter) HTTL(ctx context.Context, key, field string) (int64, error) {
	return redigoFirstInt(a.do(ctx, "HTTL", "HTTL", key, "FIELDS", 1, field))
}

// redigoFirstInt is the one element of a one-field reply.
func redigoFirstInt(v any, err error) (int64, error) {
	ns, err := redigo.Int64s(v, err)
	if err != nil {
		return 0, redigoErr(err)
	}
	if len(ns) != 1 {
		return 0, fmt.Errorf("reply has %d elements; want 1", len(ns))
	}
	return ns[0], nil
}

// FunctionLoad is goRedis.FunctionLoad's redigo twin, on the one server.
func (a *redigoAdapter) FunctionLoad(ctx context.Context, code string) error {
	return a.libs.load(ctx, code, []functionNode{redigoNode{a}})
}

// DeleteLibraries is goRedis.DeleteLibraries' redigo twin.
func (a *redigoAdapter) DeleteLibraries(ctx context.Context) ([]Library, error) {
	return a.libs.deleteLoaded(ctx, func(context.Context) ([]functionNode, error) {
		return []functionNode{redigoNode{a}}, nil
	})
}

// redigoNode is the server, for the library bookkeeping.
type redigoNode struct{ a *redigoAdapter }

func (redigoNode) addr() string { return "" }

// libraryCode reads FUNCTION LIST's RESP2 reply: per library, a flat
// array of names and values.
func (n redigoNode) libraryCode(ctx context.Context, name string) (string, error) {
	libs, err := redigo.Values(n.a.raw(ctx, "FUNCTION", "LIST", "LIBRARYNAME", name, "WITHCODE"))
	if err != nil {
		return "", redigoErr(err)
	}
	for _, l := range libs {
		fields, err := redigo.StringMap(l, nil)
		if err != nil {
			// StringMap fails on the functions' nested array: read the
			// pairs one by one.
			fields = redigoPairs(l)
		}
		if fields["library_name"] == name {
			return fields["library_code"], nil
		}
	}
	return "", nil
}

// redigoPairs is the string fields of a flat array of names and values.
func redigoPairs(v any) map[string]string {
	vs, _ := redigo.Values(v, nil)
	out := make(map[string]string, len(vs)/2)
	for i := 0; i+1 < len(vs); i += 2 {
		k, err1 := redigo.String(vs[i], nil)
		val, err2 := redigo.String(vs[i+1], nil)
		if err1 == nil && err2 == nil {
			out[k] = val
		}
	}
	return out
}

func (n redigoNode) load(ctx context.Context, code string) error {
	_, err := n.a.raw(ctx, "FUNCTION", "LOAD", code)
	return err
}

func (n redigoNode) delete(ctx context.Context, name string) error {
	_, err := n.a.raw(ctx, "FUNCTION", "DELETE", name)
	return err
}

// redigoErr turns a server error reply (redigo's redis.Error) into
// strategies.ReplyError and leaves other errors as they are.
func redigoErr(err error) error {
	if re, ok := errors.AsType[redigo.Error](err); ok {
		return strategies.ReplyError(string(re))
	}
	return err
}
