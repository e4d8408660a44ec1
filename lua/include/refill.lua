-- Shared step: a bucket that fills with time (tokenBucket's refill, Guava's resync in
-- smoothBursty and smoothWarmingUp). `level` units were there at `since`; past `since` the
-- bucket gains `rate` units per µs up to `capacity`. Gives the level at max(since, now) and
-- that time. Past the time to fill up the bucket is simply full, so (now - since) · rate never
-- overflows. Written out where it is called (`level, since = refill(level, since, …)`, the
-- caller's own names): no closure or call per EVALSHA.
--- @inline
local function refill(level, since, capacity, rate, now)
  if now > since then
    if now - since >= math.ceil((capacity - level) / rate) then
      level = capacity
    else
      level = level + (now - since) * rate
    end
    since = now
  end
  return level, since
end
