-- lease-release: Lease.release(). Idempotent: removing a lease that is gone (released before,
-- or expired and cleaned up) changes nothing.
--
-- KEYS[1]  the lease set
-- ARGV     (prelude: mode, now, cost, TTL pad) lease id
-- Reply    1 when this call freed a slot the lease still held (it had not expired), else 0
local expires = redis.call('ZSCORE', KEYS[1], ARGV[5])
if not expires then return 0 end
redis.call('ZREM', KEYS[1], ARGV[5])
if tonumber(expires) > now then return 1 end
return 0
