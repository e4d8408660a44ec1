-- lease-renew: Lease.renew() for long work: a lease that has not expired is extended to
-- now + lease_ttl. An expired lease is not revived (its slot may already be someone else's).
--
-- KEYS[1]  the lease set
-- ARGV     (prelude: mode, now, cost, TTL pad) lease_ttl_us, lease id
-- Reply    1 when renewed, 0 when the lease had expired or was released
local key = KEYS[1]
local expires = redis.call('ZSCORE', key, ARGV[6])
if not expires or tonumber(expires) <= now then return 0 end
local renewed = now + tonumber(ARGV[5])
redis.call('ZADD', key, 'XX', string.format('%d', renewed), ARGV[6])
local latest = math.max(tonumber(redis.call('ZRANGE', key, '-1', '-1', 'WITHSCORES')[2]), renewed)
redis.call('PEXPIRE', key, ttl_ms(latest - now))
return 1
