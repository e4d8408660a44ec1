-- lease-reset: ConcurrencyLimiter.reset(key) drops every lease held for the key.
--
-- KEYS[1]  the lease set
-- ARGV     (prelude: mode, now, cost, TTL pad)
-- Reply    1 when there was a lease set, else 0
return redis.call('DEL', KEYS[1])
