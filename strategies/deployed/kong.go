package deployed

import (
	"context"

	"github.com/rlbench/rlbench/strategies"
)

func init() {
	mustRegister(strategies.Info{
		Name: "kong",
		Summary: "model of Kong/kong's rate-limiting plugin, redis policy with sync_rate -1 (the default), " +
			"kong/plugins/rate-limiting/policies/init.lua (usage, get_local_key) at commit 003ca36: one EVAL (no EVALSHA) " +
			"of INCR, EXPIRE period when the count is 1, count - 1, on a key stamped with the period's start in Unix " +
			"milliseconds (ratelimit:<route>:<service>:<id>:<start ms>:<period>). The script is the model's own, with the " +
			"same commands. A key that lost its TTL stays so, but its window passes: memory, not lockout",
		Commands:    "EVAL: INCR; EXPIRE (when 1)",
		Atomic:      true,
		MinRedis:    "2.6.0",
		Keys:        "K:<window start, Unix milliseconds>:<period>",
		Stamp:       strategies.StampUnixMS,
		ACLCommands: []string{"eval", "incr", "expire"},
		New:         func(c strategies.Config) strategies.Strategy { return &kong{c} },
	})
}

// kongUsage has the commands of the script usage() sends: INCR KEYS[1];
// EXPIRE KEYS[1] ARGV[1] when the count is 1; it returns the count less 1.
const kongUsage = `-- rlbench's model of Kong's rate-limiting usage script
local count = redis.call('INCR', KEYS[1])
if count == 1 then
  redis.call('EXPIRE', KEYS[1], ARGV[1])
end
return count - 1
`

// kongPeriods are Kong's period names by their length in seconds
// (kong/plugins/rate-limiting/expiration.lua).
var kongPeriods = map[int64]string{1: "second", 60: "minute", 3600: "hour", 86400: "day"}

// kong sends what the redis policy's usage() sends with sync_rate -1:
// red:eval(script, 1, cache_key, EXPIRATION[period]); the plugin rejects
// when usage + 1 is over the limit.
type kong struct{ cfg strategies.Config }

func (*kong) Name() string { return "kong" }

func (s *kong) Decide(ctx context.Context, c strategies.Client, key string) (strategies.Decision, error) {
	period, ok := kongPeriods[s.cfg.Window]
	if !ok {
		period = "window" // no digits: the start stays the name's last number
	}
	startMS := now().Unix() / s.cfg.Window * s.cfg.Window * 1000
	k := key + ":" + itoa(startMS) + ":" + period
	r, err := eval(ctx, c, "kong", kongUsage, k, itoa(s.cfg.Window))
	if err != nil {
		return strategies.Decision{}, err
	}
	usage, err := intReply("kong", "EVAL", r)
	if err != nil {
		return strategies.Decision{}, err
	}
	return countDecision(usage+1, s.cfg.Limit), nil
}
