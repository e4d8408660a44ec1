-- lease-acquire: ConcurrencyLimiter.acquire, nginx limit_conn / a semaphore with expiring
-- leases. A lease is admitted while fewer than `limit` unexpired leases are held; each lease
-- is a member of a sorted set scored by its expiry, so a holder that crashed without releasing
-- frees its slot when the lease expires — whatever clock drives the script, an expired member
-- is never counted.
--
-- KEYS[1]  the lease set: <prefix>:{<key>}:leases
-- ARGV     (prelude: mode, now, cost, TTL pad) limit, lease_ttl_us, lease id
-- State    one member per lease, scored by its expiry (µs); TTL until the last lease expires
-- Reply    { allowed, remaining = limit - leases held after this one, reset_after = until every
--          held lease has expired, retry_after = until enough leases expire for one more (0 when
--          allowed) }. A denied request writes nothing.
local key = KEYS[1]
local limit, lease_ttl, id = tonumber(ARGV[5]), tonumber(ARGV[6]), ARGV[7]
local live = string.format('(%d', now)
local held = redis.call('ZCOUNT', key, live, '+inf')
local latest = now
if held > 0 then latest = math.max(tonumber(redis.call('ZRANGE', key, '-1', '-1', 'WITHSCORES')[2]), now) end
if held < limit then
  local expires = now + lease_ttl
  redis.call('ZREMRANGEBYSCORE', key, '-inf', string.format('%d', now))
  redis.call('ZADD', key, string.format('%d', expires), id)
  latest = math.max(latest, expires)
  redis.call('PEXPIRE', key, ttl_ms(latest - now))
  return { 1, limit - held - 1, latest - now, 0 }
end
-- The (held - limit + 1)-th lease to expire frees the first slot (more than one when the limit
-- was lowered while leases were held).
local nth = redis.call('ZRANGEBYSCORE', key, live, '+inf', 'WITHSCORES', 'LIMIT', string.format('%d', held - limit), '1')
return { 0, 0, latest - now, tonumber(nth[2]) - now }
