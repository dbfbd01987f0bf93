package clients

import (
	"fmt"
	"strings"

	"github.com/valkey-io/valkey-go"

	"github.com/rlbench/rlbench/strategies"
)

// valkeyAdapter adapts a valkey.Client, Valkey's own client, which descends
// from rueidis: the same options, pipelining and command builders, so that
// one adapter serves both (pipelinedAdapter).
type valkeyAdapter = pipelinedAdapter[valkey.Client, valkey.Completed, valkey.ValkeyResult, valkey.ValkeyMessage, valkeyDialect]

func newValkey(o Options) (*valkeyAdapter, error) {
	s := pipelinedSetupOf(o)
	opt := valkey.ClientOption{RetryDelay: retryDelayFn[valkey.Completed](o.Retries)}
	setFields(&opt, s.option)
	setFields(&opt.Sentinel, s.sentinel)
	c, err := valkey.NewClient(opt)
	if err != nil {
		return nil, fmt.Errorf("valkey-go: connect %s: %w", strings.Join(opt.InitAddress, ","), err)
	}
	return (&valkeyAdapter{name: "valkey-go", c: c}).with(o, s, valkey.DefaultDialTimeout, 10*valkey.DefaultTCPKeepAlive), nil
}

// valkeyDialect is valkey-go's side of the dialect (rueidisDialect's twin).
type valkeyDialect struct{}

func (valkeyDialect) get(c valkey.Client, k string) valkey.Completed {
	return c.B().Get().Key(k).Build()
}

func (valkeyDialect) setExAt(c valkey.Client, k, v string, at int64) valkey.Completed {
	return c.B().Set().Key(k).Value(v).ExatTimestamp(at).Build()
}

func (valkeyDialect) incr(c valkey.Client, k string) valkey.Completed {
	return c.B().Incr().Key(k).Build()
}

func (valkeyDialect) expire(c valkey.Client, k string, s int64) valkey.Completed {
	return c.B().Expire().Key(k).Seconds(s).Build()
}

func (valkeyDialect) expireNX(c valkey.Client, k string, s int64) valkey.Completed {
	return c.B().Expire().Key(k).Seconds(s).Nx().Build()
}

func (valkeyDialect) evalsha(c valkey.Client, sha1 string, keys, args []string) valkey.Completed {
	return c.B().Evalsha().Sha1(sha1).Numkeys(int64(len(keys))).Key(keys...).Arg(args...).Build()
}

func (valkeyDialect) eval(c valkey.Client, src string, keys, args []string) valkey.Completed {
	return c.B().Eval().Script(src).Numkeys(int64(len(keys))).Key(keys...).Arg(args...).Build()
}

func (valkeyDialect) fcall(c valkey.Client, fn string, keys, args []string) valkey.Completed {
	return c.B().Fcall().Function(fn).Numkeys(int64(len(keys))).Key(keys...).Arg(args...).Build()
}

func (valkeyDialect) hincrby(c valkey.Client, k, f string, n int64) valkey.Completed {
	return c.B().Hincrby().Key(k).Field(f).Increment(n).Build()
}

func (valkeyDialect) hexpire(c valkey.Client, k, f string, s int64) valkey.Completed {
	return c.B().Hexpire().Key(k).Seconds(s).Fields().Numfields(1).Field(f).Build()
}

func (valkeyDialect) hexpireNX(c valkey.Client, k, f string, s int64) valkey.Completed {
	return c.B().Hexpire().Key(k).Seconds(s).Nx().Fields().Numfields(1).Field(f).Build()
}

func (valkeyDialect) httl(c valkey.Client, k, f string) valkey.Completed {
	return c.B().Httl().Key(k).Fields().Numfields(1).Field(f).Build()
}

func (valkeyDialect) command(c valkey.Client, cmd strategies.Cmd) valkey.Completed {
	return c.B().Arbitrary(cmd.Name).Args(cmd.Head...).Keys(cmd.Keys...).Args(cmd.Args...).Build()
}

func (valkeyDialect) nonServerError(r valkey.ValkeyResult) error { return r.NonValkeyError() }
func (valkeyDialect) errorResult(err error) valkey.ValkeyResult  { return valkey.NewErrorResult(err) }
func (valkeyDialect) isNil(err error) bool                       { return valkey.IsValkeyNil(err) }

func (valkeyDialect) serverError(err error) (string, bool) {
	if re, ok := valkey.IsValkeyErr(err); ok && !re.IsNil() {
		return re.Error(), true
	}
	return "", false
}

func (valkeyDialect) msgError(m valkey.ValkeyMessage) error         { return m.Error() }
func (valkeyDialect) isNilMsg(m valkey.ValkeyMessage) bool          { return m.IsNil() }
func (valkeyDialect) isInt64(m valkey.ValkeyMessage) bool           { return m.IsInt64() }
func (valkeyDialect) asInt64(m valkey.ValkeyMessage) (int64, error) { return m.AsInt64() }
func (valkeyDialect) isBool(m valkey.ValkeyMessage) bool            { return m.IsBool() }
func (valkeyDialect) asBool(m valkey.ValkeyMessage) (bool, error)   { return m.AsBool() }
func (valkeyDialect) isArray(m valkey.ValkeyMessage) bool           { return m.IsArray() }
func (valkeyDialect) toArray(m valkey.ValkeyMessage) ([]valkey.ValkeyMessage, error) {
	return m.ToArray()
}
func (valkeyDialect) toString(m valkey.ValkeyMessage) (string, error)   { return m.ToString() }
func (valkeyDialect) asFloat64(m valkey.ValkeyMessage) (float64, error) { return m.AsFloat64() }
func (valkeyDialect) asMap(m valkey.ValkeyMessage) (map[string]valkey.ValkeyMessage, error) {
	return m.AsMap()
}
