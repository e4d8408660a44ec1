-- clock-probe: the Redis store's clock check (packages/core/src/stores/redis-time.ts) reads the
-- time as the store's scripts see it, before its first decision and then every minute: a server
-- that answers TIME inside scripts with 0 (Dragonfly), or a failover to a node whose clock is
-- behind, is refused instead of deciding at a wrong moment.
--
-- KEYS[1]  any key of the store: it only routes the call (a cluster node); it is never read
-- ARGV     none
-- Reply    {seconds, microseconds} as TIME answers them inside a script
local t = redis.call('TIME')
return {t[1], t[2]}
