#!lua name=rlbench_example
-- rlbench: atomic heals fixed-window
--
-- fixed_window.lua as a Redis Functions library (Redis >= 7.0), for
-- --function example_fixed_window=examples/fixed_window_function.lua:
-- rlbench loads the library on every master before the run (and refuses
-- to replace a library of the same name with other code), then calls
-- FCALL example_fixed_window 1 KEY LIMIT WINDOW per request, under the
-- same contract as a --script.
redis.register_function('example_fixed_window', function(keys, args)
  local limit = tonumber(args[1])
  local window = tonumber(args[2])
  local n = redis.call('INCR', keys[1])
  if redis.call('TTL', keys[1]) < 0 then
    redis.call('EXPIRE', keys[1], window)
  end
  if n <= limit then
    return {1, n}
  end
  return {0, n}
end)
