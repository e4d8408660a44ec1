-- global-change: setLimit('*') / clearLimit('*') on Redis (packages/core/src/stores/redis-global.ts).
-- A compare-and-set of a limiter's record for every key: the new record is written only if the
-- record is still the one the change was computed from. Otherwise nothing is written and the
-- record found is answered, so the caller computes its change again from it: two processes that
-- change the record at once both land, one after the other, and no change is lost.
--
-- KEYS[1]  the limiter's record, <prefix>:lm<digest>:global
-- ARGV[1]  the record the change was computed from ('' for none)
-- ARGV[2]  the new record
-- ARGV[3]  its PX in ms ('' for none: it is kept until a later change)
-- Reply    {1} when written, else {0, the record found ('' for none)}
local record = KEYS[1]
local expected, new, px = ARGV[1], ARGV[2], ARGV[3]
local found = redis.call('GET', record) or ''
if found ~= expected then return {0, found} end
if px == '' then
  redis.call('SET', record, new)
else
  redis.call('SET', record, new, 'PX', px)
end
return {1}
