package clients

import (
	"cmp"
	"context"
	"crypto/tls"
	"fmt"
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"

	"github.com/rlbench/rlbench/strategies"
)

// rueidisRingScale is rueidis' default ring size per connection (2^10),
// pinned so that a change of default shows in the report: the least
// rueidisRing gives.
const rueidisRingScale = 10

// rueidisMaxRingScale bounds rueidisRing: 2^16 slots per connection, some
// 20 MiB of rueidis' ring nodes.
const rueidisMaxRingScale = 16

// rueidisRing is the ring scale (log2 of its slots) per connection for
// workers sharing conns connections to each of masters nodes (a cluster's
// requests spread over its masters; 0 or 1 for a single server): room for
// every worker's request in flight, at least rueidis' default. Sized per
// master, a cluster's rings add up to about the workers, not masters times
// them. A ring smaller than the requests in
// flight makes each request past its size wait for a slot (a sync.Cond
// per slot, another park and wake-up per decision): at 8,000 workers on
// one connection, 2^13 slots rather than 2^10 cut rlbench's CPU per
// decision by a quarter (docs/performance.md).
func rueidisRing(workers, conns, masters int) int {
	all := max(conns, 1) * max(masters, 1)
	per := (workers + all - 1) / all
	scale := rueidisRingScale
	for scale < rueidisMaxRingScale && 1<<scale < per {
		scale++
	}
	return scale
}

// rueidisAdapter adapts a rueidis.Client. Its workers share a few
// auto-pipelined connections: --clients N means N goroutines, not N sockets.
type rueidisAdapter struct {
	c         rueidis.Client
	cluster   bool
	opts      string
	fallbacks atomic.Int64
	libs      libraries
}

func newRueidis(o Options) (*rueidisAdapter, error) {
	multiplex := pipelineMultiplex(o)
	ring := rueidisRing(o.Workers, 1<<multiplex, 1)
	opt := rueidis.ClientOption{
		InitAddress:           []string{o.Addr},
		Username:              o.Username,
		Password:              o.Password,
		TLSConfig:             o.TLS,
		SelectDB:              o.DB,
		ClientName:            o.ClientName,
		DisableCache:          true,
		DisableAutoPipelining: false,
		AlwaysPipelining:      false,
		PipelineMultiplex:     multiplex,
		RingScaleEachConn:     ring,
		MaxFlushDelay:         o.FlushDelay,
		DisableRetry:          o.Retries == 0,
		RetryDelay:            rueidisRetryDelay(o.Retries),
		ConnWriteTimeout:      cmp.Or(o.ReadTimeout, o.WriteTimeout),
		Dialer:                net.Dialer{Timeout: o.DialTimeout},
		// A single server: no CLUSTER probing on connect.
		ForceSingleClient: true,
	}
	mode, conns := "", "conns"
	if len(o.Cluster) > 0 {
		// A cluster: rueidis discovers the nodes and routes by slot, with
		// PipelineMultiplex connections per node.
		opt.InitAddress, opt.ForceSingleClient = o.Cluster, false
		mode, conns = "cluster ", "conns/node"
		ring = rueidisRing(o.Workers, 1<<multiplex, o.Masters)
		opt.RingScaleEachConn = ring
	}
	if o.Sentinel.Master != "" {
		// Sentinel: rueidis asks the sentinels in InitAddress for the
		// master and follows +switch-master.
		opt.InitAddress, opt.ForceSingleClient = o.Sentinel.Addrs, false
		opt.Sentinel = rueidis.SentinelOption{
			MasterSet: o.Sentinel.Master,
			Username:  o.Sentinel.Username,
			Password:  o.Sentinel.Password,
			TLSConfig: o.TLS,
		}
		if len(o.Sentinel.Direct) > 0 {
			// The node's own address where Sentinel.Direct gives one.
			opt.DialCtxFn = func(ctx context.Context, addr string, d *net.Dialer, cfg *tls.Config) (net.Conn, error) {
				return o.Sentinel.Dial(ctx, d, addr, cfg)
			}
		}
		mode = "sentinel "
	}
	if o.ReadTimeout != 0 && o.WriteTimeout != 0 && o.ReadTimeout != o.WriteTimeout {
		return nil, fmt.Errorf("rueidis: read timeout %s, write timeout %s: %w", o.ReadTimeout, o.WriteTimeout, ErrRueidisTimeouts)
	}
	c, err := rueidis.NewClient(opt)
	if err != nil {
		return nil, fmt.Errorf("rueidis: connect %s: %w", strings.Join(opt.InitAddress, ","), err)
	}
	return &rueidisAdapter{
		c:       c,
		cluster: len(o.Cluster) > 0,
		libs:    libraries{beforeLoad: o.BeforeLoad},
		opts: fmt.Sprintf("%sauto_pipelining=on always_pipelining=off pipeline_multiplex=%d (%d %s) ring_scale=%d max_flush_delay=%s %s",
			mode, multiplex, 1<<multiplex, conns, ring, o.FlushDelay, rueidisSettings(opt, o.Retries)),
	}, nil
}

// rueidisRetryDelay is rueidis' RetryDelay for up to retries retries of
// one command: its default back-off (exponential from 1 µs, at most 1 s,
// with jitter; rueidis' own would retry until the context ends), and a
// negative delay, which stops, after the last. rueidis asks it only for a
// read-only command (cmds.Completed.IsRetryable) after a network error,
// and counts attempts from 1 at the first failure; nil for none.
func rueidisRetryDelay(retries int) rueidis.RetryDelayFn {
	if retries == 0 {
		return nil
	}
	return func(attempts int, _ rueidis.Completed, _ error) time.Duration { return retryDelay(attempts, retries) }
}

// rueidisSettings says what rueidis retries and its timeouts are, its
// defaults (rueidis.go: dial 5 s; ConnWriteTimeout 10 times the TCP
// keep-alive of 1 s) filled in: "retry=off dial_timeout=5s
// conn_write_timeout=10s".
func rueidisSettings(opt rueidis.ClientOption, retries int) string {
	return retrySettings(retries, cmp.Or(opt.Dialer.Timeout, rueidis.DefaultDialTimeout), cmp.Or(opt.ConnWriteTimeout, 10*rueidis.DefaultTCPKeepAlive))
}

func (a *rueidisAdapter) Name() string     { return "rueidis" }
func (a *rueidisAdapter) Options() string  { return a.opts }
func (a *rueidisAdapter) Fallbacks() int64 { return a.fallbacks.Load() }
func (a *rueidisAdapter) Close() error     { a.c.Close(); return nil }


func (a *rueidisAdapter) Get(ctx context.Context, key string) (int64, bool, error) {
	n, err := a.do(ctx, "GET", a.c.B().Get().Key(key).Build()).AsInt64()
	if rueidis.IsRedisNil(err) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, rueidisErr(err)
	}
	return n, true, nil
}

func (a *rueidisAdapter) SetExAt(ctx context.Context, key string, n int64, unixSeconds int64) error {
	cmd := a.c.B().Set().Key(key).Value(strconv.FormatInt(n, 10)).ExatTimestamp(unixSeconds).Build()
	return rueidisErr(a.do(ctx, "SET EXAT", cmd).Error())
}

func (a *rueidisAdapter) Incr(ctx context.Context, key string) (int64, error) {
	n, err := a.do(ctx, "INCR", a.c.B().Incr().Key(key).Build()).AsInt64()
	return n, rueidisErr(err)
}

func (a *rueidisAdapter) Expire(ctx context.Context, key string, seconds int64) (bool, error) {
	ok, err := a.do(ctx, "EXPIRE", a.c.B().Expire().Key(key).Seconds(seconds).Build()).AsBool()
	return ok, rueidisErr(err)
}

// Open sends a PING to each master: rueidis shares a few pipelined
// connections among all workers, dials the first when the client is built
// and the others as its multiplexing needs them, so conns does not apply.
func (a *rueidisAdapter) Open(ctx context.Context, _ int) error {
	nodes, err := a.masters(ctx)
	if err != nil {
		return fmt.Errorf("open: %w", err)
	}
	for addr, node := range nodes {
		if err := node.Do(ctx, node.B().Ping().Build()).Error(); err != nil {
			if addr == "" {
				return fmt.Errorf("open: %w", rueidisErr(err))
			}
			return fmt.Errorf("open %s: %w", addr, rueidisErr(err))
		}
	}
	return nil
}

// masters returns the servers that take the workers' commands, by
// address: on a cluster its masters (clusterMasters), else the client
// itself under "".
func (a *rueidisAdapter) masters(ctx context.Context) (map[string]rueidis.Client, error) {
	if !a.cluster {
		return map[string]rueidis.Client{"": a.c}, nil
	}
	return clusterMasters(a.c.Nodes(), func(node rueidis.Client) ([]rueidis.RedisMessage, error) {
		ranges, err := node.Do(ctx, node.B().ClusterSlots().Build()).ToArray()
		return ranges, rueidisErr(err)
	})
}

// loadEverywhere sends SCRIPT LOAD src to every master (loadOnMasters):
// rueidis would send it to one node, any one.
func (a *rueidisAdapter) loadEverywhere(ctx context.Context, cmds []strategies.Cmd, src string, err error) ([]strategies.Reply, error) {
	return loadOnMasters(ctx, cmds, err, a.masters, func(node rueidis.Client) (strategies.Reply, error) {
		r := node.Do(ctx, node.B().ScriptLoad().Script(src).Build())
		if err := r.NonRedisError(); err != nil {
			return strategies.Reply{}, err
		}
		m, err := r.ToMessage()
		if err != nil {
			return rueidisReplyOfErr(err), nil
		}
		return rueidisValue(&m), nil
	})
}

// do sends cmd, a round trip named name, unless the context's
// strategies.Tap stops it (a client that died after the previous reply):
// the rueidis adapter's equivalent of the go-redis tapHook. The shared
// connections stay open: they carry every worker's commands.
func (a *rueidisAdapter) do(ctx context.Context, name string, cmd rueidis.Completed) rueidis.RedisResult {
	if err := tapRueidis(ctx, name); err != nil {
		return rueidis.NewErrorResult(err)
	}
	return a.c.Do(ctx, cmd)
}

// IncrExpireNX sends MULTI, INCR, EXPIRE NX and EXEC as one DoMulti slice,
// which rueidis writes contiguously on the shared connection (on a cluster,
// the connection to the key's slot: rueidis keeps a MULTI..EXEC span
// together).
func (a *rueidisAdapter) IncrExpireNX(ctx context.Context, key string, seconds int64) (int64, error) {
	if err := tapRueidis(ctx, "MULTI+INCR+EXPIRE NX+EXEC"); err != nil {
		return 0, err
	}
	b := a.c.B()
	resps := a.c.DoMulti(ctx,
		b.Multi().Build(),
		b.Incr().Key(key).Build(),
		b.Expire().Key(key).Seconds(seconds).Nx().Build(),
		b.Exec().Build(),
	)
	return execFirst(resps)
}

// EvalInts does what rueidis.Lua.Exec does (EVALSHA, then EVAL on
// NOSCRIPT), spelled out so that the fallbacks can be counted.
func (a *rueidisAdapter) EvalInts(ctx context.Context, s *strategies.Script, keys []string, args strategies.Args) ([]int64, error) {
	r := a.do(ctx, "EVALSHA", a.evalsha(s, keys, args))
	if re, ok := rueidis.IsRedisErr(r.Error()); ok && re.IsNoScript() {
		r = a.evalFallback(ctx, s, keys, args)
	}
	return rueidisInts(r)
}

// rueidisInts is the reply of a script or a function as EvalInts returns it:
// an array of integers, or a bare integer as strategies.IntegerReply.
func rueidisInts(r rueidis.RedisResult) ([]int64, error) {
	if m, err := r.ToMessage(); err == nil && m.IsInt64() {
		n, _ := m.AsInt64()
		return nil, strategies.IntegerReply(n)
	}
	v, err := r.AsIntSlice()
	return v, rueidisErr(err)
}

// evalsha builds EVALSHA of s. It is a function of its own so that the
// builder's intermediate values are off the stack while the decision waits
// for its reply.
//
//go:noinline
func (a *rueidisAdapter) evalsha(s *strategies.Script, keys []string, args strategies.Args) rueidis.Completed {
	return a.c.B().Evalsha().Sha1(s.SHA1).Numkeys(int64(len(keys))).Key(keys...).Arg(args.Strings()...).Build()
}

// evalFallback sends EVAL after a NOSCRIPT, and counts it. It is a
// function of its own so that its command builder's locals do not sit in
// EvalInts' stack frame on every decision.
//
//go:noinline
func (a *rueidisAdapter) evalFallback(ctx context.Context, s *strategies.Script, keys []string, args strategies.Args) rueidis.RedisResult {
	a.fallbacks.Add(1)
	return a.do(ctx, "EVAL", a.c.B().Eval().Script(s.Src).Numkeys(int64(len(keys))).Key(keys...).Arg(args.Strings()...).Build())
}

// FunctionLoad is goRedis.FunctionLoad's rueidis twin: FUNCTION LOAD on
// every master where the library is absent (a master that has become a
// replica since answers READONLY, which is not an error here), refusing a
// library of the same name with other code (strategies.ErrForeignLibrary).
func (a *rueidisAdapter) FunctionLoad(ctx context.Context, code string) error {
	nodes, err := a.functionNodes(ctx)
	if err != nil {
		return err
	}
	return a.libs.load(ctx, code, nodes)
}

// DeleteLibraries is goRedis.DeleteLibraries' rueidis twin.
func (a *rueidisAdapter) DeleteLibraries(ctx context.Context) ([]Library, error) {
	return a.libs.deleteLoaded(ctx, a.functionNodes)
}

// functionNodes returns the masters, by address.
func (a *rueidisAdapter) functionNodes(ctx context.Context) ([]functionNode, error) {
	masters, err := a.masters(ctx)
	if err != nil {
		return nil, err
	}
	nodes := make([]functionNode, 0, len(masters))
	for _, addr := range slices.Sorted(maps.Keys(masters)) {
		nodes = append(nodes, rueidisNode{masters[addr], addr})
	}
	return nodes, nil
}

// rueidisNode is a master, for the library bookkeeping.
type rueidisNode struct {
	c       rueidis.Client
	address string
}

func (n rueidisNode) addr() string { return n.address }

func (n rueidisNode) libraryCode(ctx context.Context, name string) (string, error) {
	libs, err := n.c.Do(ctx, n.c.B().FunctionList().Libraryname(name).Withcode().Build()).ToArray()
	if err != nil {
		return "", rueidisErr(err)
	}
	for _, l := range libs {
		m, err := l.AsMap()
		if err != nil {
			return "", err
		}
		nm, cm := m["library_name"], m["library_code"]
		if got, _ := nm.ToString(); got == name {
			code, _ := cm.ToString()
			return code, nil
		}
	}
	return "", nil
}

func (n rueidisNode) load(ctx context.Context, code string) error {
	return rueidisErr(n.c.Do(ctx, n.c.B().FunctionLoad().FunctionCode(code).Build()).Error())
}

func (n rueidisNode) delete(ctx context.Context, name string) error {
	return rueidisErr(n.c.Do(ctx, n.c.B().FunctionDelete().LibraryName(name).Build()).Error())
}

// FCallInts sends FCALL fn numkeys keys... args....
func (a *rueidisAdapter) FCallInts(ctx context.Context, fn string, keys []string, args strategies.Args) ([]int64, error) {
	cmd := a.c.B().Fcall().Function(fn).Numkeys(int64(len(keys))).Key(keys...).Arg(args.Strings()...).Build()
	return rueidisInts(a.do(ctx, "FCALL", cmd))
}

// rueidisErr turns a server error reply into strategies.ReplyError and
// leaves other errors as they are.
//
// rueidis drops the "ERR " that starts the server's generic error replies
// (RedisMessage.Error trims it), so that "ERR Function not found" arrives
// as "Function not found". rueidisErr puts it back, so that both adapters
// return the server's reply as sent and report the same Prefix, unless the
// message starts with one of the other error codes Redis sends
// (redisErrorCodes). A message that started "ERR " followed by one of those
// codes cannot be told apart; Redis sends none.
func rueidisErr(err error) error {
	if err == nil {
		return nil
	}
	if re, ok := rueidis.IsRedisErr(err); ok && !re.IsNil() {
		msg := re.Error()
		code, _, _ := strings.Cut(msg, " ")
		if !redisErrorCodes[code] {
			msg = "ERR " + msg
		}
		return strategies.ReplyError(msg)
	}
	return err
}

// redisErrorCodes are the first words of the Redis error replies other than
// ERR: those of redis-server (7.x), of the cluster, and the WRONGTYPE that
// rlbench's own scripts use for a value that is not theirs.
var redisErrorCodes = map[string]bool{
	"ASK": true, "BUSY": true, "BUSYGROUP": true, "BUSYKEY": true,
	"CLUSTERDOWN": true, "CROSSSLOT": true, "DENIED": true, "EXECABORT": true, "LOADING": true,
	"MASTERDOWN": true, "MISCONF": true, "MOVED": true, "NOAUTH": true,
	"NOGROUP": true, "NOPERM": true, "NOPROTO": true, "NOREPLICAS": true,
	"NOSCRIPT": true, "NOTBUSY": true, "OOM": true, "READONLY": true,
	"TRYAGAIN": true, "UNBLOCKED": true, "UNKILLABLE": true, "WRONGPASS": true,
	"WRONGTYPE": true,
}
