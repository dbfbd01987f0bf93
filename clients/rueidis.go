package clients

import (
	"fmt"
	"strings"

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

// rueidisAdapter adapts a rueidis.Client (pipelinedAdapter).
type rueidisAdapter = pipelinedAdapter[rueidis.Client, rueidis.Completed, rueidis.RedisResult, rueidis.RedisMessage, rueidisDialect]

func newRueidis(o Options) (*rueidisAdapter, error) {
	s := pipelinedSetupOf(o)
	opt := rueidis.ClientOption{RetryDelay: retryDelayFn[rueidis.Completed](o.Retries)}
	setFields(&opt, s.option)
	setFields(&opt.Sentinel, s.sentinel)
	c, err := rueidis.NewClient(opt)
	if err != nil {
		return nil, fmt.Errorf("rueidis: connect %s: %w", strings.Join(opt.InitAddress, ","), err)
	}
	return (&rueidisAdapter{name: "rueidis", c: c}).with(o, s, rueidis.DefaultDialTimeout, 10*rueidis.DefaultTCPKeepAlive), nil
}

// rueidisDialect is rueidis' side of the dialect: its command builders,
// its functions and its messages' methods (valkeyDialect is valkey-go's).
type rueidisDialect struct{}

func (rueidisDialect) get(c rueidis.Client, k string) rueidis.Completed {
	return c.B().Get().Key(k).Build()
}

func (rueidisDialect) setExAt(c rueidis.Client, k, v string, at int64) rueidis.Completed {
	return c.B().Set().Key(k).Value(v).ExatTimestamp(at).Build()
}

func (rueidisDialect) incr(c rueidis.Client, k string) rueidis.Completed {
	return c.B().Incr().Key(k).Build()
}

func (rueidisDialect) expire(c rueidis.Client, k string, s int64) rueidis.Completed {
	return c.B().Expire().Key(k).Seconds(s).Build()
}

func (rueidisDialect) expireNX(c rueidis.Client, k string, s int64) rueidis.Completed {
	return c.B().Expire().Key(k).Seconds(s).Nx().Build()
}

func (rueidisDialect) evalsha(c rueidis.Client, sha1 string, keys, args []string) rueidis.Completed {
	return c.B().Evalsha().Sha1(sha1).Numkeys(int64(len(keys))).Key(keys...).Arg(args...).Build()
}

func (rueidisDialect) eval(c rueidis.Client, src string, keys, args []string) rueidis.Completed {
	return c.B().Eval().Script(src).Numkeys(int64(len(keys))).Key(keys...).Arg(args...).Build()
}

func (rueidisDialect) fcall(c rueidis.Client, fn string, keys, args []string) rueidis.Completed {
	return c.B().Fcall().Function(fn).Numkeys(int64(len(keys))).Key(keys...).Arg(args...).Build()
}

func (rueidisDialect) hincrby(c rueidis.Client, k, f string, n int64) rueidis.Completed {
	return c.B().Hincrby().Key(k).Field(f).Increment(n).Build()
}

func (rueidisDialect) hexpire(c rueidis.Client, k, f string, s int64) rueidis.Completed {
	return c.B().Hexpire().Key(k).Seconds(s).Fields().Numfields(1).Field(f).Build()
}

func (rueidisDialect) hexpireNX(c rueidis.Client, k, f string, s int64) rueidis.Completed {
	return c.B().Hexpire().Key(k).Seconds(s).Nx().Fields().Numfields(1).Field(f).Build()
}

func (rueidisDialect) httl(c rueidis.Client, k, f string) rueidis.Completed {
	return c.B().Httl().Key(k).Fields().Numfields(1).Field(f).Build()
}

func (rueidisDialect) command(c rueidis.Client, cmd strategies.Cmd) rueidis.Completed {
	return c.B().Arbitrary(cmd.Name).Args(cmd.Head...).Keys(cmd.Keys...).Args(cmd.Args...).Build()
}

func (rueidisDialect) nonServerError(r rueidis.RedisResult) error { return r.NonRedisError() }
func (rueidisDialect) errorResult(err error) rueidis.RedisResult  { return rueidis.NewErrorResult(err) }
func (rueidisDialect) isNil(err error) bool                       { return rueidis.IsRedisNil(err) }

func (rueidisDialect) serverError(err error) (string, bool) {
	if re, ok := rueidis.IsRedisErr(err); ok && !re.IsNil() {
		return re.Error(), true
	}
	return "", false
}

func (rueidisDialect) msgError(m rueidis.RedisMessage) error         { return m.Error() }
func (rueidisDialect) isNilMsg(m rueidis.RedisMessage) bool          { return m.IsNil() }
func (rueidisDialect) isInt64(m rueidis.RedisMessage) bool           { return m.IsInt64() }
func (rueidisDialect) asInt64(m rueidis.RedisMessage) (int64, error) { return m.AsInt64() }
func (rueidisDialect) isBool(m rueidis.RedisMessage) bool            { return m.IsBool() }
func (rueidisDialect) asBool(m rueidis.RedisMessage) (bool, error)   { return m.AsBool() }
func (rueidisDialect) isArray(m rueidis.RedisMessage) bool           { return m.IsArray() }
func (rueidisDialect) toArray(m rueidis.RedisMessage) ([]rueidis.RedisMessage, error) {
	return m.ToArray()
}
func (rueidisDialect) toString(m rueidis.RedisMessage) (string, error)   { return m.ToString() }
func (rueidisDialect) asFloat64(m rueidis.RedisMessage) (float64, error) { return m.AsFloat64() }
func (rueidisDialect) asMap(m rueidis.RedisMessage) (map[string]rueidis.RedisMessage, error) {
	return m.AsMap()
}
