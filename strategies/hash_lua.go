package strategies

import (
	"context"
	"strconv"
)

func init() {
	register(Info{
		Name:        "hash-lua",
		Summary:     "the second seed's script on a hash field: HINCRBY, HEXPIRE when n == 1, returns {n, HTTL}; a field already immortal stays so",
		Commands:    "EVALSHA (EVAL on NOSCRIPT): HINCRBY; HEXPIRE FIELDS 1 (when n == 1); HTTL",
		EVALSHA:     true,
		Atomic:      true,
		Heals:       false,
		FixedWindow: true,
		MinRedis:    "7.4.0", // HEXPIRE
		Layout:      LayoutHashField,
		New: func(c Config) Strategy {
			s := hashLua{cfg: c, fields: newFieldSet(c.Fields)}
			window := strconv.FormatInt(c.Window, 10)
			for _, f := range s.fields {
				s.args = append(s.args, NewArgs(f, window))
			}
			return &s
		},
	})
}

// HashFieldScript is SeedScript for a field of a hash: it validates the
// window before its first write, sets the field's expiry only when HINCRBY
// created it, and returns the count with the field's remaining TTL.
var HashFieldScript = NewScript(`-- KEYS[1]: the hash; ARGV[1]: the field; ARGV[2]: window length in seconds
local seconds = tonumber(ARGV[2])
if not seconds or seconds < 1 or seconds ~= math.floor(seconds) then
  return redis.error_reply('Window must be a positive integer')
end
local n = redis.call('HINCRBY', KEYS[1], ARGV[1], 1)
if n == 1 then
  redis.call('HEXPIRE', KEYS[1], seconds, 'FIELDS', 1, ARGV[1])
end
return {n, redis.call('HTTL', KEYS[1], 'FIELDS', 1, ARGV[1])[1]}
`)

// hashLua runs HashFieldScript. A field that is already immortal stays so:
// n is never 1 again.
type hashLua struct {
	cfg    Config
	fields fieldSet
	args   []Args // ARGV per field, built once: the field and the window
}

func (*hashLua) Name() string { return "hash-lua" }

func (s *hashLua) Decide(ctx context.Context, c Client, key string) (Decision, error) {
	r, err := evalScript(ctx, c, "hash-lua", HashFieldScript, []string{key}, s.args[s.fields.pick()], 1)
	if err != nil {
		return Decision{}, err
	}
	return countDecision(r, s.cfg.Limit), nil
}
