-- gcra: Generic Cell Rate Algorithm (virtual scheduling). One request per emission interval
-- T = window/limit (rounded up to a whole microsecond, so never faster than configured), with
-- room for exactly `burst` back-to-back requests.
--
-- KEYS    <base> — a string integer: the theoretical arrival time (TAT, µs)
-- ARGV    emission_interval_us, burst
-- State   TAT; TTL until TAT (after which the key is idle: a missing key is a full bucket)
-- Reply   allowed when max(TAT, now) + cost·T - now <= burst·T; remaining = whole intervals
--         left in that allowance; reset_after = TAT - now; retry_after = the time until the
--         inequality holds (-1 when cost > burst)
ALG['gcra'] = {
  nargs = 2,
  check = function(key, o, cost)
    local interval, burst = tonumber(ARGV[o]), tonumber(ARGV[o + 1])
    local tolerance = burst * interval
    local tat = math.max(tonumber(redis.call('GET', key) or 0), now)
    local new_tat = tat + cost * interval
    if cost <= burst and new_tat - now <= tolerance then
      return { 1, math.floor((tolerance - (new_tat - now)) / interval), new_tat - now, 0, 0, new_tat }
    end
    local retry = cost > burst and -1 or new_tat - now - tolerance
    return { 0, math.floor((tolerance - (tat - now)) / interval), tat - now, retry, 0 }
  end,
  commit = function(key, o, cost, r)
    -- %d: cheaper for Redis than turning a Lua number into a string itself.
    redis.call('SET', key, string.format('%d', r[6]), 'PX', ttl_ms(r[3]))
  end,
  -- One integer: reset_after when allowed, -reset_after - 1 when denied; remaining and
  -- retry_after follow from it, the interval, the burst and the cost (gcraAlgorithm.unpack).
  pack = function(r)
    if r[1] == 1 then return r[3] end
    return -r[3] - 1
  end,
}
