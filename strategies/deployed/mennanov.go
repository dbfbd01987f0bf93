package deployed

import (
	"context"
	"time"

	"github.com/rlbench/rlbench/strategies"
)

func init() {
	mustRegister(strategies.Info{
		Name: "mennanov",
		Summary: "model of mennanov/limiters' FixedWindow on FixedWindowRedis, fixedwindow.go (Limit, Increment) at commit " +
			"13f4846: a pipeline (Pipelined, not TxPipelined) of INCR and PEXPIRE rate - (now - window start), on the key " +
			"prefix/<window start in Unix nanoseconds>; its in-process overflow flag (no command once a window is over " +
			"capacity, per limiter) is left out. A lost PEXPIRE is repaired by the next call in the window; the last one's " +
			"leaks a passed window's key: memory, not lockout",
		Commands:    "INCR+PEXPIRE (one pipeline)",
		Atomic:      false,
		MinRedis:    "2.6.0",
		Keys:        "K/<window start, Unix nanoseconds>",
		Stamp:       strategies.StampUnixNS,
		ACLCommands: []string{"incr", "pexpire"},
		New:         func(c strategies.Config) strategies.Strategy { return &mennanov{c} },
	})
}

// mennanov sends what FixedWindowRedis.Increment sends: Pipelined { Incr;
// PExpire(ttl) } on redisKey(prefix, window.UnixNano()), where window is
// now truncated to the rate and ttl = rate - now.Sub(window).
type mennanov struct{ cfg strategies.Config }

func (*mennanov) Name() string { return "mennanov" }

func (s *mennanov) Decide(ctx context.Context, c strategies.Client, key string) (strategies.Decision, error) {
	rate := time.Duration(s.cfg.Window) * time.Second
	t := now()
	window := t.Truncate(rate)
	ttl := rate - t.Sub(window)
	k := key + "/" + itoa(window.UnixNano())
	ms := ttl.Milliseconds()
	if ttl > 0 && ms == 0 {
		ms = 1 // go-redis' formatMs rounds a positive duration under 1 ms up
	}
	r, err := send(ctx, c, "mennanov", cmd("INCR", k), cmd("PEXPIRE", k, itoa(ms)))
	if err != nil {
		return strategies.Decision{}, err
	}
	n, err := intReply("mennanov", "INCR", r)
	if err != nil {
		return strategies.Decision{}, err
	}
	return countDecision(n, s.cfg.Limit), nil
}
