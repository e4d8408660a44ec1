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
-- Debt    a charge (MODE '7') may leave units below 0: denied until refilled past the cost
-- Reply   allowed; remaining = whole tokens (0 in debt); reset_after = until full; retry_after = until
--         `cost` tokens are there (-1 when cost > burst)
--- @include "pair"
--- @include "refill"
local function token_bucket_check(key, o, cost)
  local unit, rate, burst = tonumber(ARGV[o]), tonumber(ARGV[o + 1]), tonumber(ARGV[o + 2])
  local capacity = burst * unit
  local units, since = get_pair(key)
  if units then
    units, since = refill(units, since, capacity, rate, now)
  else
    units, since = capacity, now
  end
  local need = cost * unit
  -- A charge (MODE '7') takes the tokens even when they are not there: debt, tokens below 0.
  if cost <= burst and units >= need or MODE == '7' then
    local left = units - need
    local reset = math.ceil((capacity - left) / rate)
    -- set_pair (the commit) stores left:since until the bucket is full again.
    return 1, math.floor(left / unit), reset, 0, 0, nil, left, since, reset
  end
  local retry = cost > burst and -1 or math.ceil((need - units) / rate)
  -- In debt (units < 0) no whole token is left, and retry waits for the debt to be repaid too.
  return 0, units > 0 and math.floor(units / unit) or 0, math.ceil((capacity - units) / rate), retry, 0
end
-- Refund: the bucket, refilled to now, gets `cost` tokens back, never above burst (a full
-- bucket is a missing key: DEL).
local function token_bucket_refund(key, o, cost)
  local unit, rate, burst = tonumber(ARGV[o]), tonumber(ARGV[o + 1]), tonumber(ARGV[o + 2])
  local capacity = burst * unit
  local units, since = get_pair(key)
  if not units then return end
  -- Stored units are always below capacity: a full bucket is a missing key.
  units, since = refill(units, since, capacity, rate, now)
  if units >= capacity then return end
  if cost >= math.ceil((capacity - units) / unit) then
    redis.call('DEL', key)
    return
  end
  units = units + cost * unit
  set_pair(key, o, cost, nil, units, since, math.ceil((capacity - units) / rate))
end
-- Its binding (include/engine.lua): alone in a script, the locals CHECK …; among several, an ALG entry.
--- @if solo
local CHECK, COMMIT, CLEAR, REFUND, NARGS, ALG = token_bucket_check, set_pair, nil, token_bucket_refund, 3, nil
--- @else
ALG['token-bucket'] = { token_bucket_check, set_pair, nil, token_bucket_refund, 3 }
--- @end
