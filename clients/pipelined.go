package clients

// The rueidis and valkey-go adapters are one adapter, pipelinedAdapter,
// written once as generic code. valkey-go is a fork of rueidis: the same
// API under other type names (valkey.Client, ValkeyResult, ValkeyMessage
// for rueidis.Client, RedisResult, RedisMessage), so what the adapter does
// is said once over type parameters, and the little that differs, each
// client's command builders (their chains of types cannot be a type
// parameter) and the functions of other names, in a dialect of small
// methods per client (rueidisDialect, valkeyDialect); their ClientOptions,
// alike field for field, are set from one struct (pipelinedOption). Generic
// code rather than one source generated twice with go:generate: a
// generated copy is still a copy in the tree, for the reader and for every
// tool, and generic code is one text that the compiler checks against both
// clients.
//
// The hot path allocates no more than a hand-written adapter: a method
// call on a type parameter is an indirect call through the instantiation's
// dictionary, which passes a value as it is (a RedisResult, a message) but
// makes a pointer escape. So results are used through their own methods
// (value receivers: pipelinedResult), and messages, whose methods take a
// pointer, through the dialect by value.

import (
	"cmp"
	"context"
	"crypto/tls"
	"fmt"
	"maps"
	"net"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/rlbench/rlbench/strategies"
)

// pipelinedClient is what the adapter calls of a rueidis.Client or a
// valkey.Client (C itself), whose commands are of type P and replies of
// type R.
type pipelinedClient[C, P, R any] interface {
	Do(ctx context.Context, cmd P) R
	DoMulti(ctx context.Context, multi ...P) []R
	Nodes() map[string]C
	Close()
}

// pipelinedResult is what the adapter reads of a rueidis.RedisResult or a
// valkey.ValkeyResult, whose messages are of type M.
type pipelinedResult[M any] interface {
	Error() error
	ToMessage() (M, error)
	AsInt64() (int64, error)
	AsBool() (bool, error)
	AsIntSlice() ([]int64, error)
	ToArray() ([]M, error)
}

// dialect is where rueidis and valkey-go differ: each one's command
// builders (c.B()...Build(), each built command of type P), the functions
// of other names, and the methods of a message M, taken by value so that
// none escapes. The adapters' dialects are zero-size types. Called through
// the dictionary, a builder is never inlined: its intermediate values stay
// off the stack frame of the decision that waits for the reply.
type dialect[C, P, R, M any] interface {
	get(c C, key string) P
	setExAt(c C, key, value string, unixSeconds int64) P
	incr(c C, key string) P
	expire(c C, key string, seconds int64) P
	expireNX(c C, key string, seconds int64) P
	evalsha(c C, sha1 string, keys, args []string) P
	eval(c C, src string, keys, args []string) P
	fcall(c C, fn string, keys, args []string) P
	hincrby(c C, key, field string, n int64) P
	hexpire(c C, key, field string, seconds int64) P
	hexpireNX(c C, key, field string, seconds int64) P
	httl(c C, key, field string) P
	// command builds any other command with the client's Arbitrary
	// builder: Name and Head, Keys (which give the slot), then Args. The
	// commands the adapter builds so (MULTI, EXEC, PING, CLUSTER SLOTS,
	// SCRIPT LOAD, FUNCTION ...) are as their own builders make them:
	// none takes a flag.
	command(c C, cmd strategies.Cmd) P

	// nonServerError is r's error that is not a reply (NonRedisError).
	nonServerError(r R) error
	// errorResult is a result of err alone (NewErrorResult).
	errorResult(err error) R
	// isNil reports whether err is the nil reply (IsRedisNil).
	isNil(err error) bool
	// serverError returns the message of an error reply other than nil
	// (IsRedisErr), as the client gives it.
	serverError(err error) (msg string, ok bool)

	// A message's methods: Error, IsNil, IsInt64...
	msgError(m M) error
	isNilMsg(m M) bool
	isInt64(m M) bool
	asInt64(m M) (int64, error)
	isBool(m M) bool
	asBool(m M) (bool, error)
	isArray(m M) bool
	toArray(m M) ([]M, error)
	toString(m M) (string, error)
	asFloat64(m M) (float64, error)
	asMap(m M) (map[string]M, error)
}

// pipelinedAdapter adapts a rueidis.Client or a valkey.Client (rueidis'
// twin: the same options, pipelining and command builders). Its workers
// share a few auto-pipelined connections: N workers are N goroutines, not
// N sockets.
type pipelinedAdapter[C pipelinedClient[C, P, R], P any, R pipelinedResult[M], M any, D dialect[C, P, R, M]] struct {
	name      string // "rueidis" or "valkey-go"
	c         C
	d         D
	cluster   bool
	opts      string
	fallbacks atomic.Int64
	libs      libraries
}

// pipelinedSetup is how the adapter sets up either client, worked out once
// from Options.
type pipelinedSetup struct {
	option   pipelinedOption
	sentinel pipelinedSentinel
	// mode and conns are for Options(): "cluster " and "conns/node" on a
	// cluster.
	mode, conns string
}

// pipelinedOption is the part of ClientOption that rueidis and valkey-go
// share: fields of the same names and types in both (valkey-go forked
// rueidis' ClientOption), which setFields sets on either by name, so that
// they are written once. The adapters set beside it the one field of a
// type of the client's own, RetryDelay.
type pipelinedOption struct {
	InitAddress        []string
	Username, Password string
	TLSConfig          *tls.Config
	SelectDB           int
	ClientName         string
	DisableCache       bool
	// DisableAutoPipelining and AlwaysPipelining stay false: auto
	// pipelining on, no pipelining of what it would not pipeline.
	DisableAutoPipelining, AlwaysPipelining bool
	PipelineMultiplex                       int
	RingScaleEachConn                       int
	MaxFlushDelay                           time.Duration
	DisableRetry                            bool
	ConnWriteTimeout                        time.Duration
	Dialer                                  net.Dialer
	ForceSingleClient                       bool
	DialCtxFn                               func(ctx context.Context, addr string, d *net.Dialer, cfg *tls.Config) (net.Conn, error)
}

// pipelinedSentinel is SentinelOption as both clients take it (setFields).
type pipelinedSentinel struct {
	MasterSet          string
	Username, Password string
	TLSConfig          *tls.Config
}

// setFields sets each field of src, a struct, on the field of the same name
// of *dst, of the same type; it panics when dst has no such field, which
// TestPipelinedOptionFields would catch for each client.
func setFields[T any](dst *T, src any) {
	to, from := reflect.ValueOf(dst).Elem(), reflect.ValueOf(src)
	for i := range from.NumField() {
		name := from.Type().Field(i).Name
		field := to.FieldByName(name)
		if !field.IsValid() {
			panic(fmt.Sprintf("clients: %T has no field %s", *dst, name))
		}
		field.Set(from.Field(i))
	}
}

func pipelinedSetupOf(o Options) pipelinedSetup {
	multiplex := pipelineMultiplex(o)
	s := pipelinedSetup{conns: "conns", option: pipelinedOption{
		InitAddress: []string{o.Addr},
		Username:    o.Username,
		Password:    o.Password,
		TLSConfig:   o.TLS,
		SelectDB:    o.DB,
		ClientName:  o.ClientName,
		// rlbench counts every request the server serves.
		DisableCache:      true,
		PipelineMultiplex: multiplex,
		RingScaleEachConn: rueidisRing(o.Workers, 1<<multiplex, 1),
		MaxFlushDelay:     o.FlushDelay,
		DisableRetry:      o.Retries == 0,
		// The one timeout of writes and replies: whichever of the read and
		// write timeouts is set (CheckOptions refuses two that differ).
		ConnWriteTimeout: cmp.Or(o.ReadTimeout, o.WriteTimeout),
		Dialer:           net.Dialer{Timeout: o.DialTimeout},
		// A single server: no CLUSTER probing on connect.
		ForceSingleClient: true,
	}}
	if len(o.Cluster) > 0 {
		// A cluster: the client discovers the nodes and routes by slot,
		// with PipelineMultiplex connections per node.
		s.option.InitAddress, s.option.ForceSingleClient = o.Cluster, false
		s.option.RingScaleEachConn = rueidisRing(o.Workers, 1<<multiplex, o.Masters)
		s.mode, s.conns = "cluster ", "conns/node"
	}
	if o.Sentinel.Master != "" {
		// Sentinel: the client asks the sentinels in InitAddress for the
		// master and follows +switch-master.
		s.option.InitAddress, s.option.ForceSingleClient = o.Sentinel.Addrs, false
		s.sentinel = pipelinedSentinel{MasterSet: o.Sentinel.Master, Username: o.Sentinel.Username, Password: o.Sentinel.Password, TLSConfig: o.TLS}
		if len(o.Sentinel.Direct) > 0 {
			// The node's own address where Sentinel.Direct gives one.
			s.option.DialCtxFn = func(ctx context.Context, addr string, d *net.Dialer, cfg *tls.Config) (net.Conn, error) {
				return o.Sentinel.Dial(ctx, d, addr, cfg)
			}
		}
		s.mode = "sentinel "
	}
	return s
}

// options is the adapter's Options(), with the client's retries and its
// dial and ConnWriteTimeout, the client's defaults filled in (rueidis.go
// and valkey.go: dial 5 s; ConnWriteTimeout 10 times the TCP keep-alive of
// 1 s): "auto_pipelining=on ... retry=off dial_timeout=5s
// conn_write_timeout=10s".
func (s pipelinedSetup) options(o Options, defaultDial, defaultConnWrite time.Duration) string {
	opt := s.option
	return fmt.Sprintf("%sauto_pipelining=on always_pipelining=off pipeline_multiplex=%d (%d %s) ring_scale=%d max_flush_delay=%s %s",
		s.mode, opt.PipelineMultiplex, 1<<opt.PipelineMultiplex, s.conns, opt.RingScaleEachConn, o.FlushDelay,
		retrySettings(o.Retries, cmp.Or(opt.Dialer.Timeout, defaultDial), cmp.Or(opt.ConnWriteTimeout, defaultConnWrite)))
}

// with sets a up for the client it holds, connected with s, and returns
// it. defaultDial and defaultConnWrite are the client's defaults, for
// Options().
func (a *pipelinedAdapter[C, P, R, M, D]) with(o Options, s pipelinedSetup, defaultDial, defaultConnWrite time.Duration) *pipelinedAdapter[C, P, R, M, D] {
	a.cluster = len(o.Cluster) > 0
	a.opts = s.options(o, defaultDial, defaultConnWrite)
	a.libs = libraries{beforeLoad: o.BeforeLoad}
	return a
}

func (a *pipelinedAdapter[C, P, R, M, D]) Name() string     { return a.name }
func (a *pipelinedAdapter[C, P, R, M, D]) Options() string  { return a.opts }
func (a *pipelinedAdapter[C, P, R, M, D]) Fallbacks() int64 { return a.fallbacks.Load() }
func (a *pipelinedAdapter[C, P, R, M, D]) Close() error     { a.c.Close(); return nil }

func (a *pipelinedAdapter[C, P, R, M, D]) Get(ctx context.Context, key string) (int64, bool, error) {
	n, err := a.do(ctx, "GET", a.d.get(a.c, key)).AsInt64()
	if a.d.isNil(err) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, a.err(err)
	}
	return n, true, nil
}

func (a *pipelinedAdapter[C, P, R, M, D]) SetExAt(ctx context.Context, key string, n int64, unixSeconds int64) error {
	cmd := a.d.setExAt(a.c, key, strconv.FormatInt(n, 10), unixSeconds)
	return a.err(a.do(ctx, "SET EXAT", cmd).Error())
}

func (a *pipelinedAdapter[C, P, R, M, D]) Incr(ctx context.Context, key string) (int64, error) {
	n, err := a.do(ctx, "INCR", a.d.incr(a.c, key)).AsInt64()
	return n, a.err(err)
}

func (a *pipelinedAdapter[C, P, R, M, D]) Expire(ctx context.Context, key string, seconds int64) (bool, error) {
	ok, err := a.do(ctx, "EXPIRE", a.d.expire(a.c, key, seconds)).AsBool()
	return ok, a.err(err)
}

// Open sends a PING to each master: the client shares a few pipelined
// connections among all workers, dials the first when it is built and the
// others as its multiplexing needs them, so conns does not apply.
func (a *pipelinedAdapter[C, P, R, M, D]) Open(ctx context.Context, _ int) error {
	nodes, err := a.masters(ctx)
	if err != nil {
		return fmt.Errorf("open: %w", err)
	}
	for addr, node := range nodes {
		if err := node.Do(ctx, a.d.command(node, strategies.Cmd{Name: "PING"})).Error(); err != nil {
			if addr == "" {
				return fmt.Errorf("open: %w", a.err(err))
			}
			return fmt.Errorf("open %s: %w", addr, a.err(err))
		}
	}
	return nil
}

// do sends cmd, a round trip named name, unless the context's
// strategies.Tap stops it (a client that died after the previous reply):
// the equivalent of the go-redis tapHook. The shared connections stay
// open: they carry every worker's commands.
func (a *pipelinedAdapter[C, P, R, M, D]) do(ctx context.Context, name string, cmd P) R {
	if err := tapRueidis(ctx, name); err != nil {
		return a.d.errorResult(err)
	}
	return a.c.Do(ctx, cmd)
}

// IncrExpireNX sends MULTI, INCR, EXPIRE NX and EXEC as one DoMulti slice,
// which the client writes contiguously on the shared connection (on a
// cluster, the connection to the key's slot: it keeps a MULTI..EXEC span
// together).
func (a *pipelinedAdapter[C, P, R, M, D]) IncrExpireNX(ctx context.Context, key string, seconds int64) (int64, error) {
	if err := tapRueidis(ctx, "MULTI+INCR+EXPIRE NX+EXEC"); err != nil {
		return 0, err
	}
	resps := a.c.DoMulti(ctx,
		a.d.command(a.c, strategies.Cmd{Name: "MULTI"}),
		a.d.incr(a.c, key),
		a.d.expireNX(a.c, key, seconds),
		a.d.command(a.c, strategies.Cmd{Name: "EXEC"}),
	)
	return a.execFirst(resps)
}

// EvalInts does what the clients' Lua.Exec does (EVALSHA, then EVAL on
// NOSCRIPT), spelled out so that the fallbacks can be counted.
func (a *pipelinedAdapter[C, P, R, M, D]) EvalInts(ctx context.Context, s *strategies.Script, keys []string, args strategies.Args) ([]int64, error) {
	r := a.do(ctx, "EVALSHA", a.d.evalsha(a.c, s.SHA1, keys, args.Strings()))
	if msg, ok := a.d.serverError(r.Error()); ok && strings.HasPrefix(msg, "NOSCRIPT") {
		r = a.evalFallback(ctx, s, keys, args)
	}
	return a.ints(r)
}

// evalFallback sends EVAL after a NOSCRIPT, and counts it.
func (a *pipelinedAdapter[C, P, R, M, D]) evalFallback(ctx context.Context, s *strategies.Script, keys []string, args strategies.Args) R {
	a.fallbacks.Add(1)
	return a.do(ctx, "EVAL", a.d.eval(a.c, s.Src, keys, args.Strings()))
}

// FCallInts sends FCALL fn numkeys keys... args....
func (a *pipelinedAdapter[C, P, R, M, D]) FCallInts(ctx context.Context, fn string, keys []string, args strategies.Args) ([]int64, error) {
	return a.ints(a.do(ctx, "FCALL", a.d.fcall(a.c, fn, keys, args.Strings())))
}

// ints is the reply of a script or a function as EvalInts returns it: an
// array of integers, or a bare integer as strategies.IntegerReply.
func (a *pipelinedAdapter[C, P, R, M, D]) ints(r R) ([]int64, error) {
	if m, err := r.ToMessage(); err == nil && a.d.isInt64(m) {
		n, _ := a.d.asInt64(m)
		return nil, strategies.IntegerReply(n)
	}
	v, err := r.AsIntSlice()
	return v, a.err(err)
}

// FunctionLoad is goRedis.FunctionLoad's twin: FUNCTION LOAD on every
// master where the library is absent (a master that has become a replica
// since answers READONLY, which is not an error here), refusing a library
// of the same name with other code (strategies.ErrForeignLibrary).
func (a *pipelinedAdapter[C, P, R, M, D]) FunctionLoad(ctx context.Context, code string) error {
	nodes, err := a.functionNodes(ctx)
	if err != nil {
		return err
	}
	return a.libs.load(ctx, code, nodes)
}

// DeleteLibraries is goRedis.DeleteLibraries' twin.
func (a *pipelinedAdapter[C, P, R, M, D]) DeleteLibraries(ctx context.Context) ([]Library, error) {
	return a.libs.deleteLoaded(ctx, a.functionNodes)
}

// functionNodes returns the masters, by address.
func (a *pipelinedAdapter[C, P, R, M, D]) functionNodes(ctx context.Context) ([]functionNode, error) {
	masters, err := a.masters(ctx)
	if err != nil {
		return nil, err
	}
	nodes := make([]functionNode, 0, len(masters))
	for _, addr := range slices.Sorted(maps.Keys(masters)) {
		nodes = append(nodes, pipelinedNode[C, P, R, M, D]{a, masters[addr], addr})
	}
	return nodes, nil
}

// pipelinedNode is a master, for the library bookkeeping.
type pipelinedNode[C pipelinedClient[C, P, R], P any, R pipelinedResult[M], M any, D dialect[C, P, R, M]] struct {
	a       *pipelinedAdapter[C, P, R, M, D]
	c       C
	address string
}

func (n pipelinedNode[C, P, R, M, D]) addr() string { return n.address }

func (n pipelinedNode[C, P, R, M, D]) libraryCode(ctx context.Context, name string) (string, error) {
	d := n.a.d
	libs, err := n.c.Do(ctx, d.command(n.c, strategies.Cmd{Name: "FUNCTION", Head: []string{"LIST", "LIBRARYNAME", name, "WITHCODE"}})).ToArray()
	if err != nil {
		return "", n.a.err(err)
	}
	for _, l := range libs {
		m, err := d.asMap(l)
		if err != nil {
			return "", err
		}
		if got, _ := d.toString(m["library_name"]); got == name {
			code, _ := d.toString(m["library_code"])
			return code, nil
		}
	}
	return "", nil
}

func (n pipelinedNode[C, P, R, M, D]) load(ctx context.Context, code string) error {
	return n.a.err(n.c.Do(ctx, n.a.d.command(n.c, strategies.Cmd{Name: "FUNCTION", Head: []string{"LOAD", code}})).Error())
}

func (n pipelinedNode[C, P, R, M, D]) delete(ctx context.Context, name string) error {
	return n.a.err(n.c.Do(ctx, n.a.d.command(n.c, strategies.Cmd{Name: "FUNCTION", Head: []string{"DELETE", name}})).Error())
}

// err turns a server error reply into strategies.ReplyError and leaves
// other errors as they are.
//
// rueidis and valkey-go drop the "ERR " that starts the server's generic
// error replies (RedisMessage.Error trims it), so that "ERR Function not
// found" arrives as "Function not found". err puts it back, so that every
// adapter returns the server's reply as sent and reports the same Prefix,
// unless the message starts with one of the other error codes Redis sends
// (redisErrorCodes). A message that started "ERR " followed by one of
// those codes cannot be told apart; Redis sends none.
func (a *pipelinedAdapter[C, P, R, M, D]) err(err error) error {
	if err == nil {
		return nil
	}
	if msg, ok := a.d.serverError(err); ok {
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
