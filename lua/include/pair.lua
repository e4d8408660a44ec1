-- Shared step: a state of two integers '<a>:<b>' in one string key (tokenBucket, leakyBucket,
-- smoothBursty, smoothWarmingUp): one GET to read it, one SET … PX to write it. `a` may be
-- negative (leakyBucket's excess).

-- The two integers stored at key, or nil when the key is missing. Written out where it is
-- called (`local x, y = get_pair(key)`): no closure or call per EVALSHA.
--- @inline
local function get_pair(key)
  local a, b
  local state = redis.call('GET', key)
  if state then
    a, b = string.match(state, '^(-?%d+):(%d+)$')
    a, b = tonumber(a), tonumber(b)
  end
  return a, b
end

-- Stores a and b at key, kept for ttl_us (whole milliseconds, rounded up, plus the TTL pad).
-- It is also these algorithms' commit, whose check hands it a, b and ttl_us (the engine calls
-- commit(key, o, cost, reset_after, a, b, ttl_us)); a refund calls it with o, cost and reset
-- unused.
local function set_pair(key, o, cost, reset, a, b, ttl_us)
  redis.call('SET', key, string.format('%d:%d', a, b), 'PX', ttl_ms(ttl_us))
end
