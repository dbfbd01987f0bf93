-- rlbench: atomic heals fixed-window
--
-- A fixed-window rate limiter in the shape rlbench runs with
-- --script NAME=examples/fixed_window.lua. The contract:
--   KEYS[1]  the counter key; it carries the cell's {N} hash tag, so a key
--            made from it by appending (KEYS[1] .. ':x') stays in its slot
--            and under the cell's prefix
--   ARGV[1]  the limit (--limit): requests allowed per key per window
--   ARGV[2]  the window (--window), in whole seconds
--   reply    {1, count} when the request is allowed, {0, count} when not;
--            the count (the counter after this request) may be left out
-- The header line above states what the script claims; rlbench verify
-- checks each claim (atomic: one script; heals: a counter that lost its TTL
-- gets one back; fixed-window: at most the limit per window, the window
-- never extended by traffic).
local limit = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local n = redis.call('INCR', KEYS[1])
-- TTL < 0, not n == 1: a counter that lost its TTL gets one back.
if redis.call('TTL', KEYS[1]) < 0 then
  redis.call('EXPIRE', KEYS[1], window)
end
if n <= limit then
  return {1, n}
end
return {0, n}
