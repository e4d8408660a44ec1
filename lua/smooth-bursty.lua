-- smooth-bursty: Guava's SmoothBursty RateLimiter. A request is admitted when the next-free
-- time has come and then pays for its cost: first from stored permits (free), the rest at the
-- stable rate, which pushes the next-free time forward (reserve now, pay later). Idle time
-- stores permits, up to `maxBurst` worth. A new key is a freshly created Guava limiter: no
-- stored permits, free now.
--
-- Permits are kept in scaled units so that every step is an exact integer: one permit = `unit`
-- units and idle time stores `rate` units per microsecond (unit = window/g, rate = limit/g,
-- g = gcd(limit, window_us)); a fresh permit costs unit/rate µs, the wait is rounded up.
--
-- KEYS    <base> — a string "<next free µs>:<stored units>"
-- ARGV    unit, rate, max_stored (maxBurst·rate units), retention_us, max_cost (-1: limit 0,
--         nothing is ever admitted: every cost > 0 is denied with retry_after -1)
-- State   next-free time and stored units after the last admitted request; TTL until the
--         stored permits are full again plus `retention` (a missing key has none stored, so a
--         full key is kept that long before it is forgotten; a key read later decides like a
--         missing one, whatever clock drives the script)
-- Reply   allowed when the next-free time has come (in reserve mode, within SLACK µs) or cost
--         is 0; remaining = whole stored permits + 1 while the next-free time has come, else 0;
--         reset_after = until next-free has come and the stored permits are full;
--         retry_after = until next-free (never -1 but with limit 0); delay = the reservation's
--         wait (reserve)
--- @include "closed"
--- @include "pair"
--- @include "refill"
local function smooth_bursty_check(key, o, cost)
  local unit, rate = tonumber(ARGV[o]), tonumber(ARGV[o + 1])
  local max_stored, retention = tonumber(ARGV[o + 2]), tonumber(ARGV[o + 3])
  local next_free, stored = now, 0
  local f, s = get_pair(key)
  if f and now < f + math.ceil((max_stored - s) / rate) + retention then next_free, stored = f, s end
  -- Guava resync: time past next-free stores permits, up to max_stored.
  stored, next_free = refill(stored, next_free, max_stored, rate, now)
  local ahead = next_free - now
  if cost > 0 and ahead > SLACK then
    return 0, 0, ahead + math.ceil((max_stored - stored) / rate), ahead, 0
  end
  -- Guava reserveEarliestAvailable: stored permits are free, fresh ones cost unit/rate µs.
  local wait, left = SATURATED_WAIT_US, 0
  local max_cost = tonumber(ARGV[o + 4])
  if cost <= max_cost then
    local need = cost * unit
    local spend = math.min(need, stored)
    wait, left = math.min(math.ceil((need - spend) / rate), SATURATED_WAIT_US), stored - spend
  elseif max_cost == -1 then
    return closed(cost)
  end
  local after = next_free + wait
  local remaining = 0
  if after <= now then remaining = math.floor(left / unit) + 1 end
  local reset = after - now + math.ceil((max_stored - left) / rate)
  local delay = 0
  if cost > 0 then delay = ahead end
  -- set_pair (the commit) stores next-free:stored until the permits are full, plus the retention.
  return 1, remaining, reset, 0, delay, nil, after, left, reset + retention
end
-- Refund: next-free moves back by the cost's fresh-permit time, never before now; stored
-- permits are left as they are.
local function smooth_bursty_refund(key, o, cost)
  local unit, rate = tonumber(ARGV[o]), tonumber(ARGV[o + 1])
  local max_stored, retention = tonumber(ARGV[o + 2]), tonumber(ARGV[o + 3])
  local next_free, stored = get_pair(key)
  if not next_free or next_free <= now then return end
  local back = next_free - now
  if cost <= tonumber(ARGV[o + 4]) then back = math.min(back, math.floor(cost * unit / rate)) end
  if back == 0 then return end
  next_free = next_free - back
  set_pair(key, o, cost, nil, next_free, stored, next_free - now + math.ceil((max_stored - stored) / rate) + retention)
end
-- Its binding (include/engine.lua): alone in a script, the locals CHECK …; among several, an ALG entry.
--- @if solo
local CHECK, COMMIT, CLEAR, REFUND, NARGS, ALG = smooth_bursty_check, set_pair, nil, smooth_bursty_refund, 5, nil
--- @else
ALG['smooth-bursty'] = { smooth_bursty_check, set_pair, nil, smooth_bursty_refund, 5 }
--- @end
