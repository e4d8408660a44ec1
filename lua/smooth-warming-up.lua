-- smooth-warming-up: Guava's SmoothWarmingUp RateLimiter. Like smooth-bursty (a request is
-- admitted when the next-free time has come and pays afterwards), but stored permits are
-- expensive: spending them costs the area under Guava's warm-up function — the stable interval
-- below thresholdPermits, rising linearly to coldFactor × stable at maxPermits. Idle time
-- stores permits at maxPermits / warmup per µs, so an idle key cools down; a new key is cold
-- (full of stored permits), which is also what a key idle long enough returns to.
--
-- Stored permits are kept as the stable-rate time they stand for, in 1/span µs units with
-- span = 2(d + c), coldFactor = c/d: then Guava's thresholdPermits = warmup(d + c) units,
-- maxPermits = warmup(5d + c) units and idle time stores 5d + c units per µs, all exact. A
-- request of cost k needs ceil(k·window·span/limit) units (rounded up: never faster than the
-- stable rate). Taking `steep` units from `above` units over the threshold costs, beyond the
-- stable time, (c - d)·steep·(2·above - steep) / (16·warmup·d²·(d + c)) µs (the trapezoid);
-- the whole wait is rounded up once, computed exactly with mul_div.
--
-- KEYS    <base> — a string "<next free µs>:<stored units>"
-- ARGV    limit, window_us, warmup_us, c, d, max_cost (-1: limit 0, nothing is ever admitted:
--         every cost > 0 is denied with retry_after -1)
-- State   next-free time and stored units after the last admitted request; TTL until the key
--         is cold again (then it is the same as a missing key)
-- Reply   allowed when the next-free time has come (in reserve mode, within SLACK µs) or cost
--         is 0; remaining = 1 while the next-free time has come, else 0 (stored permits are
--         never free); reset_after = until cold again; retry_after = until next-free (never
--         -1 but with limit 0); delay = the reservation's wait (reserve mode)
--- @include "closed"
--- @include "pair"
--- @include "refill"

-- q, r with a·b = q·m + r and 0 <= r < m, exactly, for integers a, b < 2^53, m < 2^51 and
-- q < 2^53. A product below 2^52 is exact and so is its division (typical configurations end
-- here); otherwise a and b are reduced modulo m (fmod is exact) and the product of the
-- remainders is built bit by bit, every partial sum staying below 2m.
local function mul_div(a, b, m)
  local product = a * b
  if product < 4503599627370496 then
    local q = math.floor(product / m)
    return q, product - q * m
  end
  local ra, rb = math.fmod(a, m), math.fmod(b, m)
  local q = (a - ra) / m * b + ra * ((b - rb) / m)
  local p, r, bit = 0, 0, 1
  while bit * 2 <= rb do bit = bit * 2 end
  while bit >= 1 do
    p, r = p * 2, r * 2
    if r >= m then p, r = p + 1, r - m end
    if rb >= bit then
      rb, r = rb - bit, r + ra
      if r >= m then p, r = p + 1, r - m end
    end
    bit = bit / 2
  end
  return q + p, r
end

local function smooth_warming_up_check(key, o, cost)
  local limit, window, warmup = tonumber(ARGV[o]), tonumber(ARGV[o + 1]), tonumber(ARGV[o + 2])
  local c, d = tonumber(ARGV[o + 3]), tonumber(ARGV[o + 4])
  local span, per_us = 2 * (d + c), 5 * d + c
  local threshold, max_stored = warmup * (d + c), warmup * per_us
  local next_free, stored = get_pair(key)
  if not next_free then next_free, stored = now, max_stored end
  -- Guava resync: time past next-free stores permits, up to max_stored.
  stored, next_free = refill(stored, next_free, max_stored, per_us, now)
  local ahead = next_free - now
  if cost > 0 and ahead > SLACK then
    return 0, 0, ahead + math.ceil((max_stored - stored) / per_us), ahead, 0
  end
  -- Guava reserveEarliestAvailable with storedPermitsToWaitTime: stable time for every unit,
  -- plus the trapezoid over the threshold; wait = ceil((need·h + extra) / (span·h)).
  local wait, left = SATURATED_WAIT_US, 0
  local max_cost = tonumber(ARGV[o + 5])
  if cost <= max_cost then
    local need = math.ceil(cost * window * span / limit)
    local spend = math.min(need, stored)
    local above = math.max(stored - threshold, 0)
    local steep = math.min(above, spend)
    local h = 8 * warmup * d * d
    local q = math.floor(need / span)
    local extra, rest = 0, 0
    if steep > 0 and c > d then extra, rest = mul_div((c - d) * steep, 2 * above - steep, span * h) end
    local frac = (need - q * span) * h + rest
    q = q + extra
    if frac > span * h then q = q + 2 elseif frac > 0 then q = q + 1 end
    wait, left = math.min(q, SATURATED_WAIT_US), stored - spend
  elseif max_cost == -1 then
    return closed(cost)
  end
  local after = next_free + wait
  local remaining = 0
  if after <= now then remaining = 1 end
  local reset = after - now + math.ceil((max_stored - left) / per_us)
  local delay = 0
  if cost > 0 then delay = ahead end
  -- set_pair (the commit) stores next-free:stored until the key is cold again.
  return 1, remaining, reset, 0, delay, nil, after, left, reset
end
-- Refund: next-free moves back by the cost's stable-rate time, never before now; stored
-- permits (cold ones) are left as they are.
local function smooth_warming_up_refund(key, o, cost)
  local limit, window, warmup = tonumber(ARGV[o]), tonumber(ARGV[o + 1]), tonumber(ARGV[o + 2])
  local c, d = tonumber(ARGV[o + 3]), tonumber(ARGV[o + 4])
  local next_free, stored = get_pair(key)
  if not next_free or next_free <= now then return end
  local back = next_free - now
  if cost <= tonumber(ARGV[o + 5]) then back = math.min(back, math.floor(cost * window / limit)) end
  if back == 0 then return end
  next_free = next_free - back
  local per_us = 5 * d + c
  set_pair(key, o, cost, nil, next_free, stored, next_free - now + math.ceil((warmup * per_us - stored) / per_us))
end
-- Its binding (include/engine.lua): alone in a script, the locals CHECK …; among several, an ALG entry.
--- @if solo
local CHECK, COMMIT, CLEAR, REFUND, NARGS, ALG = smooth_warming_up_check, set_pair, nil, smooth_warming_up_refund, 6, nil
--- @else
ALG['smooth-warming-up'] = { smooth_warming_up_check, set_pair, nil, smooth_warming_up_refund, 6 }
--- @end
