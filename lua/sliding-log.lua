-- sliding-log: exact; at most `limit` units admitted in any interval (now - window, now].
--
-- KEYS    <base> — a sorted set, one member per admitted unit, scored by its time (µs)
-- ARGV    limit, window_us
-- State   members "<time>:<n>" (unique per unit); TTL until the newest unit leaves the window
-- Reply   allowed; remaining = limit - units in the window; reset_after = until the newest
--         unit leaves; retry_after = until enough of the oldest units leave (-1 when
--         cost > limit)
--- @own-key (a sorted set: no entry of the combined key, include/combined.lua, can hold it)
local function sliding_log_check(key, o, cost)
  local limit, window = tonumber(ARGV[o]), tonumber(ARGV[o + 1])
  local floor = string.format('(%d', now - window)
  local used = redis.call('ZCOUNT', key, floor, '+inf')
  -- The newest unit decides when the key is empty again (a clock that stepped back can
  -- leave it after now; the unit about to be added is at now).
  local newest = now
  if used > 0 then newest = tonumber(redis.call('ZRANGE', key, '-1', '-1', 'WITHSCORES')[2]) end
  if used + cost <= limit then
    local after = used + cost
    local last = cost > 0 and math.max(newest, now) or newest
    return 1, limit - after, after > 0 and last + window - now or 0, 0, 0, nil, used
  end
  local reset = used > 0 and newest + window - now or 0
  if cost > limit then return 0, limit - used, reset, -1, 0 end
  -- The (used + cost - limit)-th oldest unit in the window must leave first.
  local oldest = redis.call('ZRANGEBYSCORE', key, floor, '+inf', 'WITHSCORES', 'LIMIT',
    string.format('%d', used + cost - limit - 1), '1')
  return 0, limit - used, reset, tonumber(oldest[2]) + window - now, 0
end
local function sliding_log_commit(key, o, cost, reset, used)
  local window = tonumber(ARGV[o + 1])
  redis.call('ZREMRANGEBYSCORE', key, '-inf', string.format('%d', now - window))
  -- Indices padded to the width of limit: among units of one time the newest sorts last, so
  -- a refund removes the newest by rank and the next index is never one still stored.
  local member = '%d:%0' .. string.len(ARGV[o]) .. 'd'
  local members, score = {}, string.format('%d', now)
  for i = 1, cost do
    members[#members + 1] = score
    members[#members + 1] = string.format(member, now, used + i)
    if #members >= 1000 or i == cost then
      redis.call('ZADD', key, unpack(members))
      members = {}
    end
  end
  redis.call('PEXPIRE', key, ttl_ms(reset))
end
-- Refund: the `cost` newest units in the window leave it.
local function sliding_log_refund(key, o, cost)
  local window = tonumber(ARGV[o + 1])
  local used = redis.call('ZCOUNT', key, string.format('(%d', now - window), '+inf')
  if used == 0 then return end
  if cost >= used then
    redis.call('DEL', key)
    return
  end
  redis.call('ZREMRANGEBYRANK', key, string.format('%d', -cost), '-1')
  local newest = tonumber(redis.call('ZRANGE', key, '-1', '-1', 'WITHSCORES')[2])
  redis.call('PEXPIRE', key, ttl_ms(newest + window - now))
end
-- Its binding (include/engine.lua): alone in a script, the locals CHECK …; among several, an ALG entry.
--- @if solo
local CHECK, COMMIT, CLEAR, REFUND, NARGS, ALG = sliding_log_check, sliding_log_commit, nil, sliding_log_refund, 2, nil
--- @else
ALG['sliding-log'] = { sliding_log_check, sliding_log_commit, nil, sliding_log_refund, 2 }
--- @end
