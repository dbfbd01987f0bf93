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

	"github.com/valkey-io/valkey-go"

	"github.com/rlbench/rlbench/strategies"
)

// valkeyAdapter adapts a valkey.Client, Valkey's own client, which descends
// from rueidis: the same options, pipelining and command builders, so this
// adapter is rueidisAdapter's twin, call for call. Its workers share a few
// auto-pipelined connections: --clients N means N goroutines, not N sockets.
type valkeyAdapter struct {
	c         valkey.Client
	cluster   bool
	opts      string
	fallbacks atomic.Int64
	libs      libraries
}

func newValkey(o Options) (*valkeyAdapter, error) {
	multiplex := pipelineMultiplex(o)
	// The ring rueidis' adapter sizes (rueidisRing): valkey-go's ring is
	// rueidis'.
	ring := rueidisRing(o.Workers, 1<<multiplex, 1)
	opt := valkey.ClientOption{
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
		RetryDelay:            valkeyRetryDelay(o.Retries),
		ConnWriteTimeout:      cmp.Or(o.ReadTimeout, o.WriteTimeout),
		Dialer:                net.Dialer{Timeout: o.DialTimeout},
		// A single server: no CLUSTER probing on connect.
		ForceSingleClient: true,
	}
	mode, conns := "", "conns"
	if len(o.Cluster) > 0 {
		// A cluster: valkey-go discovers the nodes and routes by slot, with
		// PipelineMultiplex connections per node.
		opt.InitAddress, opt.ForceSingleClient = o.Cluster, false
		mode, conns = "cluster ", "conns/node"
		ring = rueidisRing(o.Workers, 1<<multiplex, o.Masters)
		opt.RingScaleEachConn = ring
	}
	if o.Sentinel.Master != "" {
		// Sentinel: valkey-go asks the sentinels in InitAddress for the
		// master and follows +switch-master.
		opt.InitAddress, opt.ForceSingleClient = o.Sentinel.Addrs, false
		opt.Sentinel = valkey.SentinelOption{
			MasterSet: o.Sentinel.Master,
			Username:  o.Sentinel.Username,
			Password:  o.Sentinel.Password,
			TLSConfig: o.TLS,
		}
		if len(o.Sentinel.Direct) > 0 {
			// The node's own address where Sentinel.Direct gives one, as
			// rueidis' adapter dials it.
			opt.DialCtxFn = func(ctx context.Context, addr string, d *net.Dialer, cfg *tls.Config) (net.Conn, error) {
				return o.Sentinel.Dial(ctx, d, addr, cfg)
			}
		}
		mode = "sentinel "
	}
	c, err := valkey.NewClient(opt)
	if err != nil {
		return nil, fmt.Errorf("valkey-go: connect %s: %w", strings.Join(opt.InitAddress, ","), err)
	}
	return &valkeyAdapter{
		c:       c,
		cluster: len(o.Cluster) > 0,
		libs:    libraries{beforeLoad: o.BeforeLoad},
		opts: fmt.Sprintf("%sauto_pipelining=on always_pipelining=off pipeline_multiplex=%d (%d %s) ring_scale=%d max_flush_delay=%s %s",
			mode, multiplex, 1<<multiplex, conns, ring, o.FlushDelay, valkeySettings(opt, o.Retries)),
	}, nil
}

// valkeyRetryDelay is valkey-go's RetryDelay for up to retries retries of
// one command: its default back-off (exponential from 1 µs, at most 1 s,
// with jitter; valkey-go's own would retry until the context ends), and a
// negative delay, which stops, after the last. valkey-go asks it only for a
// read-only command (cmds.Completed.IsRetryable) after a network error,
// and counts attempts from 1 at the first failure; nil for none.
func valkeyRetryDelay(retries int) valkey.RetryDelayFn {
	if retries == 0 {
		return nil
	}
	return func(attempts int, _ valkey.Completed, _ error) time.Duration { return retryDelay(attempts, retries) }
}

// valkeySettings says what valkey-go retries and its timeouts are, its
// defaults (valkey.go: dial 5 s; ConnWriteTimeout 10 times the TCP
// keep-alive of 1 s) filled in: "retry=off dial_timeout=5s
// conn_write_timeout=10s".
func valkeySettings(opt valkey.ClientOption, retries int) string {
	return retrySettings(retries, cmp.Or(opt.Dialer.Timeout, valkey.DefaultDialTimeout), cmp.Or(opt.ConnWriteTimeout, 10*valkey.DefaultTCPKeepAlive))
}

func (a *valkeyAdapter) Name() string     { return "valkey-go" }
func (a *valkeyAdapter) Options() string  { return a.opts }
func (a *valkeyAdapter) Fallbacks() int64 { return a.fallbacks.Load() }
func (a *valkeyAdapter) Close() error     { a.c.Close(); return nil }


func (a *valkeyAdapter) Get(ctx context.Context, key string) (int64, bool, error) {
	n, err := a.do(ctx, "GET", a.c.B().Get().Key(key).Build()).AsInt64()
	if valkey.IsValkeyNil(err) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, valkeyErr(err)
	}
	return n, true, nil
}

func (a *valkeyAdapter) SetExAt(ctx context.Context, key string, n int64, unixSeconds int64) error {
	cmd := a.c.B().Set().Key(key).Value(strconv.FormatInt(n, 10)).ExatTimestamp(unixSeconds).Build()
	return valkeyErr(a.do(ctx, "SET EXAT", cmd).Error())
}

func (a *valkeyAdapter) Incr(ctx context.Context, key string) (int64, error) {
	n, err := a.do(ctx, "INCR", a.c.B().Incr().Key(key).Build()).AsInt64()
	return n, valkeyErr(err)
}

func (a *valkeyAdapter) Expire(ctx context.Context, key string, seconds int64) (bool, error) {
	ok, err := a.do(ctx, "EXPIRE", a.c.B().Expire().Key(key).Seconds(seconds).Build()).AsBool()
	return ok, valkeyErr(err)
}

// Open sends a PING to each master: valkey-go shares a few pipelined
// connections among all workers, dials the first when the client is built
// and the others as its multiplexing needs them, so conns does not apply.
func (a *valkeyAdapter) Open(ctx context.Context, _ int) error {
	nodes, err := a.masters(ctx)
	if err != nil {
		return fmt.Errorf("open: %w", err)
	}
	for addr, node := range nodes {
		if err := node.Do(ctx, node.B().Ping().Build()).Error(); err != nil {
			if addr == "" {
				return fmt.Errorf("open: %w", valkeyErr(err))
			}
			return fmt.Errorf("open %s: %w", addr, valkeyErr(err))
		}
	}
	return nil
}

// masters returns the servers that take the workers' commands, by
// address: on a cluster its masters (clusterMasters), else the client
// itself under "".
func (a *valkeyAdapter) masters(ctx context.Context) (map[string]valkey.Client, error) {
	if !a.cluster {
		return map[string]valkey.Client{"": a.c}, nil
	}
	return clusterMasters(a.c.Nodes(), func(node valkey.Client) ([]valkey.ValkeyMessage, error) {
		ranges, err := node.Do(ctx, node.B().ClusterSlots().Build()).ToArray()
		return ranges, valkeyErr(err)
	})
}

// loadEverywhere sends SCRIPT LOAD src to every master (loadOnMasters):
// valkey-go would send it to one node, any one.
func (a *valkeyAdapter) loadEverywhere(ctx context.Context, cmds []strategies.Cmd, src string, err error) ([]strategies.Reply, error) {
	return loadOnMasters(ctx, cmds, err, a.masters, func(node valkey.Client) (strategies.Reply, error) {
		r := node.Do(ctx, node.B().ScriptLoad().Script(src).Build())
		if err := r.NonValkeyError(); err != nil {
			return strategies.Reply{}, err
		}
		m, err := r.ToMessage()
		if err != nil {
			return valkeyReplyOfErr(err), nil
		}
		return valkeyValue(&m), nil
	})
}

// do sends cmd, a round trip named name, unless the context's
// strategies.Tap stops it (a client that died after the previous reply):
// the valkey-go adapter's equivalent of the go-redis tapHook. The shared
// connections stay open: they carry every worker's commands.
func (a *valkeyAdapter) do(ctx context.Context, name string, cmd valkey.Completed) valkey.ValkeyResult {
	if err := tapRueidis(ctx, name); err != nil {
		return valkey.NewErrorResult(err)
	}
	return a.c.Do(ctx, cmd)
}

// IncrExpireNX sends MULTI, INCR, EXPIRE NX and EXEC as one DoMulti slice,
// which valkey-go writes contiguously on the shared connection (on a cluster,
// the connection to the key's slot: valkey-go keeps a MULTI..EXEC span
// together).
func (a *valkeyAdapter) IncrExpireNX(ctx context.Context, key string, seconds int64) (int64, error) {
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
	return valkeyExecFirst(resps)
}

// EvalInts does what valkey.Lua.Exec does (EVALSHA, then EVAL on
// NOSCRIPT), spelled out so that the fallbacks can be counted.
func (a *valkeyAdapter) EvalInts(ctx context.Context, s *strategies.Script, keys []string, args strategies.Args) ([]int64, error) {
	r := a.do(ctx, "EVALSHA", a.evalsha(s, keys, args))
	if re, ok := valkey.IsValkeyErr(r.Error()); ok && re.IsNoScript() {
		r = a.evalFallback(ctx, s, keys, args)
	}
	return valkeyInts(r)
}

// valkeyInts is the reply of a script or a function as EvalInts returns it:
// an array of integers, or a bare integer as strategies.IntegerReply.
func valkeyInts(r valkey.ValkeyResult) ([]int64, error) {
	if m, err := r.ToMessage(); err == nil && m.IsInt64() {
		n, _ := m.AsInt64()
		return nil, strategies.IntegerReply(n)
	}
	v, err := r.AsIntSlice()
	return v, valkeyErr(err)
}

// evalsha builds EVALSHA of s. It is a function of its own so that the
// builder's intermediate values are off the stack while the decision waits
// for its reply.
//
//go:noinline
func (a *valkeyAdapter) evalsha(s *strategies.Script, keys []string, args strategies.Args) valkey.Completed {
	return a.c.B().Evalsha().Sha1(s.SHA1).Numkeys(int64(len(keys))).Key(keys...).Arg(args.Strings()...).Build()
}

// evalFallback sends EVAL after a NOSCRIPT, and counts it. It is a
// function of its own so that its command builder's locals do not sit in
// EvalInts' stack frame on every decision.
//
//go:noinline
func (a *valkeyAdapter) evalFallback(ctx context.Context, s *strategies.Script, keys []string, args strategies.Args) valkey.ValkeyResult {
	a.fallbacks.Add(1)
	return a.do(ctx, "EVAL", a.c.B().Eval().Script(s.Src).Numkeys(int64(len(keys))).Key(keys...).Arg(args.Strings()...).Build())
}

// FunctionLoad is goRedis.FunctionLoad's valkey-go twin: FUNCTION LOAD on
// every master where the library is absent (a master that has become a
// replica since answers READONLY, which is not an error here), refusing a
// library of the same name with other code (strategies.ErrForeignLibrary).
func (a *valkeyAdapter) FunctionLoad(ctx context.Context, code string) error {
	nodes, err := a.functionNodes(ctx)
	if err != nil {
		return err
	}
	return a.libs.load(ctx, code, nodes)
}

// DeleteLibraries is goRedis.DeleteLibraries' valkey-go twin.
func (a *valkeyAdapter) DeleteLibraries(ctx context.Context) ([]Library, error) {
	return a.libs.deleteLoaded(ctx, a.functionNodes)
}

// functionNodes returns the masters, by address.
func (a *valkeyAdapter) functionNodes(ctx context.Context) ([]functionNode, error) {
	masters, err := a.masters(ctx)
	if err != nil {
		return nil, err
	}
	nodes := make([]functionNode, 0, len(masters))
	for _, addr := range slices.Sorted(maps.Keys(masters)) {
		nodes = append(nodes, valkeyNode{masters[addr], addr})
	}
	return nodes, nil
}

// valkeyNode is a master, for the library bookkeeping.
type valkeyNode struct {
	c       valkey.Client
	address string
}

func (n valkeyNode) addr() string { return n.address }

func (n valkeyNode) libraryCode(ctx context.Context, name string) (string, error) {
	libs, err := n.c.Do(ctx, n.c.B().FunctionList().Libraryname(name).Withcode().Build()).ToArray()
	if err != nil {
		return "", valkeyErr(err)
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

func (n valkeyNode) load(ctx context.Context, code string) error {
	return valkeyErr(n.c.Do(ctx, n.c.B().FunctionLoad().FunctionCode(code).Build()).Error())
}

func (n valkeyNode) delete(ctx context.Context, name string) error {
	return valkeyErr(n.c.Do(ctx, n.c.B().FunctionDelete().LibraryName(name).Build()).Error())
}

// FCallInts sends FCALL fn numkeys keys... args....
func (a *valkeyAdapter) FCallInts(ctx context.Context, fn string, keys []string, args strategies.Args) ([]int64, error) {
	cmd := a.c.B().Fcall().Function(fn).Numkeys(int64(len(keys))).Key(keys...).Arg(args.Strings()...).Build()
	return valkeyInts(a.do(ctx, "FCALL", cmd))
}

// valkeyErr turns a server error reply into strategies.ReplyError and
// leaves other errors as they are.
//
// valkey-go drops the "ERR " that starts the server's generic error replies
// (ValkeyMessage.Error trims it), so that "ERR Function not found" arrives
// as "Function not found". valkeyErr puts it back, so that both adapters
// return the server's reply as sent and report the same Prefix, unless the
// message starts with one of the other error codes Redis sends
// (redisErrorCodes). A message that started "ERR " followed by one of those
// codes cannot be told apart; Redis sends none.
func valkeyErr(err error) error {
	if err == nil {
		return nil
	}
	if re, ok := valkey.IsValkeyErr(err); ok && !re.IsNil() {
		msg := re.Error()
		code, _, _ := strings.Cut(msg, " ")
		if !redisErrorCodes[code] {
			msg = "ERR " + msg
		}
		return strategies.ReplyError(msg)
	}
	return err
}
