-- leaky-bucket: nginx limit_req. Excess drains at limit/window; a request is rejected when the
-- excess it leaves would exceed `burst` (rejected requests are not recorded); an admitted
-- request whose excess is above `delay` is asked to wait until the excess has drained to it.
--
-- nginx keeps excess in milli-requests and computes excess = excess - rate * ms / 1000 + 1000,
-- floored at 0, with millisecond truncation. Here one request = `unit` units and the bucket
-- drains `rate` units per microsecond (unit = window/g, rate = limit/g, g = gcd(limit,
-- window_us)), so the same formula, excess - rate * elapsed + unit, is exact.
-- A request of cost c is c requests arriving together, all or none: the first is nginx's
-- request, each other adds one unit of excess, so capacity is burst + 1 requests.
--
-- KEYS    <base> — a string "<excess>:<time µs>" (nginx's node: excess and last)
-- ARGV    unit, rate, burst, delay (delay = burst when omitted: nginx `nodelay`); limit 0 is
--         burst -1 (capacity 0: nothing is ever admitted) with rate 1
-- State   excess after the last admitted request, and when; TTL until it has drained and the
--         next request would find excess 0 again (a missing key is an idle bucket)
-- Reply   allowed; remaining = requests that still fit; reset_after = until idle;
--         retry_after = until the excess lets `cost` in (-1 when cost > burst + 1);
--         delay = until the excess has drained to `delay` requests (0 when it is below)
--- @include "pair"
local function leaky_bucket_check(key, o, cost)
  local unit, rate = tonumber(ARGV[o]), tonumber(ARGV[o + 1])
  local burst, delay = tonumber(ARGV[o + 2]), tonumber(ARGV[o + 3])
  local capacity = (burst + 1) * unit
  -- level: what the next request's excess would be before flooring, i.e. the excess left plus
  -- the last admitted request itself, drained to `since`; 0 is an idle bucket.
  local level, since = 0, now
  local excess, last = get_pair(key)
  if excess then
    -- A clock that stepped back drains nothing (nginx: ms < 0 counts as 0).
    since = math.max(last, now)
    local elapsed = since - last
    -- Past the drain time the bucket is idle (and elapsed * rate cannot overflow).
    if elapsed < math.ceil((excess + unit) / rate) then level = excess + unit - elapsed * rate end
  end
  local ahead = since - now
  if cost <= burst + 1 and level + cost * unit <= capacity then
    local after = level + cost * unit
    local left, wait = 0, 0
    if cost > 0 then
      left = after - unit
      if left > delay * unit then wait = ahead + math.ceil((left - delay * unit) / rate) end
    end
    local reset = ahead + math.ceil(after / rate)
    -- set_pair (the commit) stores the excess left and since, until the bucket has drained.
    return 1, math.floor((capacity - after) / unit), reset, 0, wait, nil, left, since, reset
  end
  local reset = ahead + math.ceil(level / rate)
  if cost > burst + 1 then return 0, math.floor((capacity - level) / unit), reset, -1, 0 end
  return 0, math.floor((capacity - level) / unit), reset, ahead + math.ceil((level + cost * unit - capacity) / rate), 0
end
-- Refund: the level (excess plus the last request) drops by `cost` requests, never below 0
-- (an idle bucket is a missing key: DEL). The excess stored is level - unit, which is negative
-- when less than one request is left to drain.
local function leaky_bucket_refund(key, o, cost)
  local unit, rate = tonumber(ARGV[o]), tonumber(ARGV[o + 1])
  local excess, last = get_pair(key)
  if not excess then return end
  local since = math.max(last, now)
  local elapsed = since - last
  if elapsed >= math.ceil((excess + unit) / rate) then return end
  local level = excess + unit - elapsed * rate
  if cost >= math.ceil(level / unit) then
    redis.call('DEL', key)
    return
  end
  level = level - cost * unit
  set_pair(key, o, cost, nil, level - unit, since, since - now + math.ceil(level / rate))
end
-- Its binding (include/engine.lua): alone in a script, the locals CHECK …; among several, an ALG entry.
--- @if solo
local CHECK, COMMIT, CLEAR, REFUND, NARGS, ALG = leaky_bucket_check, set_pair, nil, leaky_bucket_refund, 4, nil
--- @else
ALG['leaky-bucket'] = { leaky_bucket_check, set_pair, nil, leaky_bucket_refund, 4 }
--- @end
