-- token-bucket: holds up to `burst` tokens, refills continuously at limit/window, starts full.
--
-- Tokens are kept in scaled units so that refill is integer: one token = `unit` units, and
-- the bucket gains `rate` units per microsecond (unit = window/g, rate = limit/g with
-- g = gcd(limit, window_us)), so `elapsed * rate` is exact where `elapsed * limit / window`
-- would not be.
--
-- KEYS    <base> — a string "<units>:<time µs>"
-- ARGV    unit, rate, burst (0 for limit 0, with rate 1: nothing is ever admitted)
-- State   units in the bucket after the last admitted request, and when that was; TTL until
--         the bucket is full again (a missing key is a full bucket)
-- Reply   allowed; remaining = whole tokens; reset_after = until full; retry_after = until
--         `cost` tokens are there (-1 when cost > burst)
local function token_bucket_check(key, o, cost)
  local unit, rate, burst = tonumber(ARGV[o]), tonumber(ARGV[o + 1]), tonumber(ARGV[o + 2])
  local capacity = burst * unit
  local units, since = capacity, now
  local state = redis.call('GET', key)
  if state then
    local u, t = string.match(state, '^(%d+):(%d+)$')
    units, since = tonumber(u), tonumber(t)
    if now > since then
      -- Refill without overflow: past the time to fill up, the bucket is simply full.
      if now - since >= math.ceil((capacity - units) / rate) then
        units = capacity
      else
        units = units + (now - since) * rate
      end
      since = now
    end
  end
  local need = cost * unit
  if cost <= burst and units >= need then
    local left = units - need
    return 1, math.floor(left / unit), math.ceil((capacity - left) / rate), 0, 0, nil, left, since
  end
  local retry = cost > burst and -1 or math.ceil((need - units) / rate)
  return 0, math.floor(units / unit), math.ceil((capacity - units) / rate), retry, 0
end
local function token_bucket_commit(key, o, cost, reset, e1, e2)
  redis.call('SET', key, string.format('%d:%d', e1, e2), 'PX', ttl_ms(reset))
end
-- Refund: the bucket, refilled to now, gets `cost` tokens back, never above burst (a full
-- bucket is a missing key: DEL).
local function token_bucket_refund(key, o, cost)
  local unit, rate, burst = tonumber(ARGV[o]), tonumber(ARGV[o + 1]), tonumber(ARGV[o + 2])
  local capacity = burst * unit
  local state = redis.call('GET', key)
  if not state then return end
  local u, t = string.match(state, '^(%d+):(%d+)$')
  local units, since = tonumber(u), tonumber(t)
  if now > since then
    if now - since >= math.ceil((capacity - units) / rate) then return end
    units, since = units + (now - since) * rate, now
  end
  if cost >= math.ceil((capacity - units) / unit) then
    redis.call('DEL', key)
    return
  end
  units = units + cost * unit
  redis.call('SET', key, string.format('%d:%d', units, since), 'PX', ttl_ms(math.ceil((capacity - units) / rate)))
end
register('token-bucket', token_bucket_check, token_bucket_commit, nil, token_bucket_refund, 3)
