package clients

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"

	"github.com/rlbench/rlbench/strategies"
)

// goRedisBufferSize is each go-redis connection's read and write buffer,
// in bytes (go-redis' default is 32 KiB each). A decision's request and
// reply take a few hundred bytes at most; a longer one passes in several
// reads or writes. With one connection per worker, 10,000 workers hold 20
// MB of buffers instead of 640.
const goRedisBufferSize = 1024

// goRedis adapts a go-redis v9 *redis.Client, or a *redis.ClusterClient
// when the options name a cluster.
type goRedis struct {
	rdb     redis.UniversalClient
	cluster *redis.ClusterClient // nil for a single server
	// server names a single server or a Sentinel master, for errors.
	server    string
	opts      string
	fallbacks atomic.Int64
	libs      libraries
}

// newGoRedis builds one set of options for a single server and a cluster
// alike: redis.NewUniversalClient makes a *redis.ClusterClient of them when
// o.Cluster is set (IsClusterMode, even with one seed node), with the pool
// per node.
func newGoRedis(o Options) *goRedis {
	addrs := []string{o.Addr}
	if len(o.Cluster) > 0 {
		addrs = o.Cluster
	}
	if o.Sentinel.Master != "" {
		addrs = o.Sentinel.Addrs
	}
	rdb := redis.NewUniversalClient(&redis.UniversalOptions{
		Addrs:         addrs,
		IsClusterMode: len(o.Cluster) > 0,
		Password:      o.Password,
		DB:            o.DB,
		Username:      o.Username,
		TLSConfig:     o.TLS,
		// With MasterName set, NewUniversalClient makes a failover client
		// that asks the sentinels in Addrs for the master.
		MasterName:       o.Sentinel.Master,
		SentinelUsername: o.Sentinel.Username,
		SentinelPassword: o.Sentinel.Password,
		ClientName:       o.ClientName,
		Protocol:         3,
		// One connection per worker: callers never queue inside the client.
		PoolSize:        poolSize(o),
		ReadBufferSize:  goRedisBufferSize,
		WriteBufferSize: goRedisBufferSize,
		// MULTI/EXEC goes through TxPipelined; keep it on the main pool so
		// that it is sized for the workers too (the dedicated pipeline pool
		// holds only 10 connections).
		PipelinePoolSize: -1,
		// By default no silent retries: a fault shows as an error, as with
		// rueidis, and a retried INCR can never count one request twice.
		MaxRetries:  goRedisRetries(o.Retries),
		DialTimeout: o.DialTimeout,
		// The node's own address where Sentinel.Direct gives one.
		Dialer:       o.Sentinel.GoRedisDialer(o.DialTimeout, o.TLS),
		ReadTimeout:  o.ReadTimeout,
		WriteTimeout: o.WriteTimeout,
		// A context that ends mid-request (an interrupt, or a worker that
		// --crash-rate kills) ends the request and drops its connection.
		ContextTimeoutEnabled: true,
		DisableIdentity:       true,
		MaintNotificationsConfig: &maintnotifications.Config{
			Mode: maintnotifications.ModeDisabled,
		},
	})
	c := &goRedis{rdb: rdb, server: o.Addr, libs: libraries{beforeLoad: o.BeforeLoad}, opts: fmt.Sprintf("pool_size=%d protocol=3 %s buffers=%d", poolSize(o), goRedisSettings(o), goRedisBufferSize)}
	if o.Sentinel.Master != "" {
		c.opts = "sentinel " + c.opts
		c.server = fmt.Sprintf("master %s of sentinels %s", o.Sentinel.Master, strings.Join(o.Sentinel.Addrs, ","))
	}
	rdb.AddHook(tapHook{noscripts: &c.fallbacks})
	if cluster, ok := rdb.(*redis.ClusterClient); ok {
		c.cluster = cluster
		c.opts = fmt.Sprintf("cluster pool_size=%d/node protocol=3 %s buffers=%d", poolSize(o), goRedisSettings(o), goRedisBufferSize)
	}
	return c
}

// goRedisRetries is go-redis' MaxRetries for o.Retries: -1 for none, since
// go-redis reads 0 as its default, 3.
func goRedisRetries(retries int) int {
	if retries == 0 {
		return -1
	}
	return retries
}

// goRedisSettings says what go-redis retries and its timeouts are, its
// defaults (go-redis v9 options.go: dial 5 s, read 5 s, write the read's)
// filled in: "retries=off dial_timeout=5s read_timeout=5s
// write_timeout=5s".
func goRedisSettings(o Options) string {
	retries := "retries=off"
	if o.Retries > 0 {
		retries = fmt.Sprintf("retries=%d", o.Retries)
	}
	dial, read := cmp.Or(o.DialTimeout, 5*time.Second), cmp.Or(o.ReadTimeout, 5*time.Second)
	return fmt.Sprintf("%s dial_timeout=%s read_timeout=%s write_timeout=%s", retries, dial, read, cmp.Or(o.WriteTimeout, read))
}

func (c *goRedis) Name() string     { return "go-redis" }
func (c *goRedis) Options() string  { return c.opts }
func (c *goRedis) Fallbacks() int64 { return c.fallbacks.Load() }
func (c *goRedis) Close() error     { return c.rdb.Close() }

// Open fills the pool with conns connections, at most its size, taken by
// fillDialers goroutines (redis.Client.Conn), checked with PING and put
// back; it stops at the first that fails. On a cluster each master gets a
// share, all masters at once (ForEachMaster), each stopping at its own
// first failure.
func (c *goRedis) Open(ctx context.Context, conns int) error {
	conns = max(conns, 1)
	if c.cluster != nil {
		// The workers spread over the masters: a share each, not the
		// whole count, which would open masters x workers connections.
		var masters atomic.Int64
		if err := c.cluster.ForEachMaster(ctx, func(context.Context, *redis.Client) error {
			masters.Add(1)
			return nil
		}); err != nil {
			return fmt.Errorf("open: %w", err)
		}
		m := int(max(masters.Load(), 1))
		share := (conns + m - 1) / m
		return c.cluster.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error {
			return fillPool(ctx, node, share, node.Options().Addr)
		})
	}
	rdb, ok := c.rdb.(*redis.Client)
	if !ok {
		return fmt.Errorf("open: unexpected go-redis client %T", c.rdb)
	}
	return fillPool(ctx, rdb, conns, c.server)
}

// fillDialers is how many goroutines fillPool dials with: enough to open
// 10,000 connections on loopback in well under a second, few enough that
// their stacks (a dial's is deep) stay small beside the workers'.
const fillDialers = 64

// fillPool opens n connections of rdb's pool (n at most its size), all
// held at once so that none is taken twice, and puts them back. The first
// failure stops the others: a server that is gone costs one dial's
// retries, not n. server names rdb's server in the error.
func fillPool(ctx context.Context, rdb *redis.Client, n int, server string) error {
	n = min(n, rdb.Options().PoolSize)
	ctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	conns := make([]*redis.Conn, n)
	var wg sync.WaitGroup
	for d := range min(n, fillDialers) {
		wg.Go(func() {
			for i := d; i < n && ctx.Err() == nil; i += fillDialers {
				conns[i] = rdb.Conn()
				if err := conns[i].Ping(ctx).Err(); err != nil {
					stop(err) // the first cause is kept
					return
				}
			}
		})
	}
	wg.Wait()
	for _, cn := range conns {
		if cn != nil {
			cn.Close() // back to the pool; a failed one is dropped
		}
	}
	if err := context.Cause(ctx); err != nil {
		return fmt.Errorf("open %d connections to %s: %w", n, server, err)
	}
	return nil
}

var _ GoRedisConn = (*goRedis)(nil)

// GoRedis returns the go-redis client itself (GoRedisConn), a
// *redis.Client or a *redis.ClusterClient, for the strategies that call a
// published library written for go-redis (package strategies/published).
// Its commands go through the same hook as the adapter's own.
func (c *goRedis) GoRedis() redis.UniversalClient { return c.rdb }

func (c *goRedis) Get(ctx context.Context, key string) (int64, bool, error) {
	n, err := c.rdb.Get(ctx, key).Int64()
	if err == redis.Nil {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, goRedisErr(err)
	}
	return n, true, nil
}

func (c *goRedis) SetExAt(ctx context.Context, key string, n int64, unixSeconds int64) error {
	err := c.rdb.SetArgs(ctx, key, n, redis.SetArgs{ExpireAt: time.Unix(unixSeconds, 0)}).Err()
	return goRedisErr(err)
}

func (c *goRedis) Incr(ctx context.Context, key string) (int64, error) {
	n, err := c.rdb.Incr(ctx, key).Result()
	return n, goRedisErr(err)
}

func (c *goRedis) Expire(ctx context.Context, key string, seconds int64) (bool, error) {
	ok, err := c.rdb.Expire(ctx, key, time.Duration(seconds)*time.Second).Result()
	return ok, goRedisErr(err)
}

func (c *goRedis) IncrExpireNX(ctx context.Context, key string, seconds int64) (int64, error) {
	var incr *redis.IntCmd
	_, err := c.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		incr = p.Incr(ctx, key)
		p.ExpireNX(ctx, key, time.Duration(seconds)*time.Second)
		return nil
	})
	if err != nil {
		return 0, goRedisErr(err)
	}
	return incr.Val(), nil
}

// EvalInts does what redis.Script.Run does (EVALSHA with the SHA-1
// computed on the client, then EVAL on NOSCRIPT); the hook counts the
// fallbacks, the published libraries' too.
func (c *goRedis) EvalInts(ctx context.Context, s *strategies.Script, keys []string, args strategies.Args) ([]int64, error) {
	r := c.rdb.EvalSha(ctx, s.SHA1, keys, args.Any()...)
	if isNoScript(r.Err()) {
		// tapHook counted the NOSCRIPT.
		r = c.rdb.Eval(ctx, s.Src, keys, args.Any()...)
	}
	return goRedisInts(r)
}

// goRedisInts is the reply of a script or a function as EvalInts returns
// it: an array of integers, or a bare integer as strategies.IntegerReply.
func goRedisInts(r *redis.Cmd) ([]int64, error) {
	if n, ok := r.Val().(int64); ok && r.Err() == nil {
		return nil, strategies.IntegerReply(n)
	}
	v, err := r.Int64Slice()
	return v, goRedisErr(err)
}

// FunctionLoad sends FUNCTION LOAD code to every master where its library
// is absent (on a cluster, each master: replicas get it by replication),
// after FUNCTION LIST, and records what it did (DeleteLibraries). It
// refuses, with strategies.ErrForeignLibrary, a library of the same name
// whose code differs: that one is not rlbench's, or not this run's.
func (c *goRedis) FunctionLoad(ctx context.Context, code string) error {
	nodes, err := c.functionNodes(ctx)
	if err != nil {
		return err
	}
	return c.libs.load(ctx, code, nodes)
}

// DeleteLibraries sends FUNCTION DELETE of each library FunctionLoad
// loaded, on every master that holds it with its code, and returns every
// library FunctionLoad was given.
func (c *goRedis) DeleteLibraries(ctx context.Context) ([]Library, error) {
	return c.libs.deleteLoaded(ctx, c.functionNodes)
}

// functionNodes returns the masters (the server itself, unless a cluster).
func (c *goRedis) functionNodes(ctx context.Context) ([]functionNode, error) {
	if c.cluster == nil {
		return []functionNode{goRedisNode{c.rdb, ""}}, nil
	}
	var mu sync.Mutex
	var nodes []functionNode
	err := c.cluster.ForEachMaster(ctx, func(_ context.Context, m *redis.Client) error {
		mu.Lock()
		defer mu.Unlock()
		nodes = append(nodes, goRedisNode{m, m.Options().Addr})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("cluster masters: %w", err)
	}
	return nodes, nil
}

// goRedisNode is a master, for the library bookkeeping.
type goRedisNode struct {
	m       redis.UniversalClient
	address string
}

func (n goRedisNode) addr() string { return n.address }

func (n goRedisNode) libraryCode(ctx context.Context, name string) (string, error) {
	libs, err := n.m.FunctionList(ctx, redis.FunctionListQuery{LibraryNamePattern: name, WithCode: true}).Result()
	if err != nil {
		return "", goRedisErr(err)
	}
	for _, l := range libs {
		if l.Name == name {
			return l.Code, nil
		}
	}
	return "", nil
}

func (n goRedisNode) load(ctx context.Context, code string) error {
	return goRedisErr(n.m.FunctionLoad(ctx, code).Err())
}

func (n goRedisNode) delete(ctx context.Context, name string) error {
	return goRedisErr(n.m.FunctionDelete(ctx, name).Err())
}

// FCallInts sends FCALL fn numkeys keys... args....
func (c *goRedis) FCallInts(ctx context.Context, fn string, keys []string, args strategies.Args) ([]int64, error) {
	return goRedisInts(c.rdb.FCall(ctx, fn, keys, args.Any()...))
}

// goRedisErr turns a server error reply into strategies.ReplyError and
// leaves other errors as they are.
func goRedisErr(err error) error {
	if err == nil {
		return nil
	}
	if re, ok := errors.AsType[redis.Error](err); ok && err != redis.Nil {
		return strategies.ReplyError(re.Error())
	}
	return err
}

// isNoScript is redis.HasErrorPrefix(err, "NOSCRIPT") without its
// allocation on every successful call.
func isNoScript(err error) bool {
	if err == nil {
		return false
	}
	re, ok := errors.AsType[redis.Error](err)
	return ok && strings.HasPrefix(re.Error(), "NOSCRIPT")
}
