-- gcra: Generic Cell Rate Algorithm (virtual scheduling). One request per emission interval
-- T = window/limit (rounded up to a whole microsecond, so never faster than configured), with
-- room for exactly `burst` back-to-back requests.
--
-- KEYS    <base> — a string integer: the theoretical arrival time (TAT, µs)
-- ARGV    emission_interval_us, burst (0 for limit 0: nothing is ever admitted)
-- State   TAT; TTL until TAT (after which the key is idle: a missing key is a full bucket)
-- Reply   allowed when max(TAT, now) + cost·T - now <= burst·T; remaining = whole intervals
--         left in that allowance; reset_after = TAT - now; retry_after = the time until the
--         inequality holds (-1 when cost > burst); packed: see check
local function gcra_check(key, o, cost)
  local interval, burst = tonumber(ARGV[o]), tonumber(ARGV[o + 1])
  local tolerance = burst * interval
  local tat = tonumber(redis.call('GET', key)) or now
  if tat < now then tat = now end
  local new_tat = tat + cost * interval
  -- packed: reset_after when allowed, -reset_after - 1 when denied; remaining and retry_after
  -- follow from it, the interval, the burst and the cost (gcraAlgorithm.unpack).
  -- (room - room % interval) / interval: floor(room / interval) (the prelude's ttl_ms says why).
  -- A charge (MODE '7') pushes TAT ahead past the allowance: debt, repaid as time passes.
  if cost <= burst and new_tat - now <= tolerance or MODE == '7' then
    local room = tolerance - (new_tat - now)
    return 1, (room - room % interval) / interval, new_tat - now, 0, 0, new_tat - now, new_tat
  end
  local retry, room = cost > burst and -1 or new_tat - now - tolerance, tolerance - (tat - now)
  -- In debt (TAT past now + tolerance) nothing is left.
  if room < 0 then room = 0 end
  return 0, (room - room % interval) / interval, tat - now, retry, 0, -(tat - now) - 1
end
local function gcra_commit(key, o, cost, reset, new_tat)
  -- %d: cheaper for Redis than turning a Lua number into a string itself.
  redis.call('SET', key, string.format('%d', new_tat), 'PX', ttl_ms(reset))
end
-- Refund: TAT moves back cost intervals, never before now (then the key is idle: DEL).
local function gcra_refund(key, o, cost)
  local interval = tonumber(ARGV[o])
  local tat = tonumber(redis.call('GET', key))
  if not tat or tat <= now then return end
  if cost >= math.ceil((tat - now) / interval) then
    redis.call('DEL', key)
  else
    tat = tat - cost * interval
    redis.call('SET', key, string.format('%d', tat), 'PX', ttl_ms(tat - now))
  end
end
-- Its binding (include/engine.lua): alone in a script, the locals CHECK …; among several, an ALG entry.
--- @if solo
local CHECK, COMMIT, CLEAR, REFUND, NARGS, ALG = gcra_check, gcra_commit, nil, gcra_refund, 2, nil
--- @else
ALG['gcra'] = { gcra_check, gcra_commit, nil, gcra_refund, 2 }
--- @end
