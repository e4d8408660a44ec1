-- sliding-window: the bucketed sliding window of Sentinel's LeapArray. Time is cut into
-- sub-windows of `size` = window/buckets µs aligned to floor(now / size); a request of cost c is
-- admitted when the sub-windows current-buckets+1 … current (the current one included) hold at
-- most limit - c units. Any interval of length window - size admits at most `limit`; one of
-- length `window` at most `limit` plus what the oldest, partly slid-out sub-window held.
--
-- KEYS    <base> — a string "<index>:<c1>,<c2>,…": the newest sub-window written and its count,
--         then the counts of the sub-windows before it, newest first, trailing zeros dropped
--         (one GET and one SET per decision; the index dates every count, so a key read late
--         decides exactly like a missing one)
-- ARGV    limit, size (µs), buckets
-- Debt    a charge (MODE '7') may count past the limit: denied until enough of it slides out
-- State   TTL until the newest count leaves the window
-- Reply   allowed; remaining = limit - units in the window; reset_after = until the newest
--         count leaves; retry_after = until enough of the oldest counts leave (-1 when
--         cost > limit)
local function sliding_window_check(key, o, cost)
  local limit, size, buckets = tonumber(ARGV[o]), tonumber(ARGV[o + 1]), tonumber(ARGV[o + 2])
  local current = (now - now % size) / size
  -- counts[i] is sub-window current - i + 1 (nil is 0); only i <= buckets is in the window.
  local counts, used = {}, 0
  local state = redis.call('GET', key)
  if state then
    local index, list = string.match(state, '^(%d+):([%d,]*)$')
    index = tonumber(index)
    -- A clock that stepped back leaves the stored sub-window ahead: count from there.
    if index > current then current = index end
    local i = current - index
    for count in string.gmatch(list, '%d+') do
      i = i + 1
      if i > buckets then break end
      counts[i] = tonumber(count)
      used = used + counts[i]
    end
  end
  -- The count in position i leaves the window when sub-window current - i + 1 + buckets starts.
  local function leaves(i) return (current - i + 1 + buckets) * size - now end
  -- A charge (MODE '7') counts past the limit: debt, repaid as its sub-windows slide out.
  if used + cost <= limit or MODE == '7' then
    local after = used + cost
    local newest = 0
    if cost > 0 then
      newest = 1
    else
      for i = 1, buckets do
        if (counts[i] or 0) > 0 then newest = i break end
      end
    end
    return 1, limit - after, newest > 0 and leaves(newest) or 0, 0, 0, nil, current, counts
  end
  local newest = 0
  for i = 1, buckets do
    if (counts[i] or 0) > 0 then newest = i break end
  end
  local reset = newest > 0 and leaves(newest) or 0
  -- In debt (used > limit) nothing is left.
  local remaining = used < limit and limit - used or 0
  if cost > limit then return 0, remaining, reset, -1, 0 end
  -- Oldest first, free counts until used + cost - freed <= limit.
  local need, freed, retry = used + cost - limit, 0, 0
  for i = buckets, 1, -1 do
    freed = freed + (counts[i] or 0)
    if freed >= need then retry = leaves(i) break end
  end
  return 0, remaining, reset, retry, 0
end
local function sliding_window_commit(key, o, cost, reset, current, counts)
  local buckets = tonumber(ARGV[o + 2])
  counts[1] = (counts[1] or 0) + cost
  local last = 1
  for i = 2, buckets do
    if (counts[i] or 0) > 0 then last = i end
  end
  local parts = {}
  for i = 1, last do parts[i] = string.format('%d', counts[i] or 0) end
  local state = string.format('%d:', current) .. table.concat(parts, ',')
  redis.call('SET', key, state, 'PX', ttl_ms(reset))
end
-- Refund: the current sub-window's count only (the stored newest one, when it is current).
local function sliding_window_refund(key, o, cost)
  local size, buckets = tonumber(ARGV[o + 1]), tonumber(ARGV[o + 2])
  local state = redis.call('GET', key)
  if not state then return end
  local index, list = string.match(state, '^(%d+):([%d,]*)$')
  index = tonumber(index)
  if index < (now - now % size) / size then return end
  local counts, last = {}, 0
  for count in string.gmatch(list, '%d+') do counts[#counts + 1] = tonumber(count) end
  if (counts[1] or 0) == 0 then return end
  counts[1] = counts[1] - math.min(cost, counts[1])
  for i = 1, #counts do
    if counts[i] > 0 and last == 0 then last = i end
  end
  if last == 0 then
    redis.call('DEL', key)
    return
  end
  local parts, keep = {}, 0
  for i = 1, #counts do
    if counts[i] > 0 then keep = i end
  end
  for i = 1, keep do parts[i] = string.format('%d', counts[i]) end
  redis.call('SET', key, string.format('%d:', index) .. table.concat(parts, ','), 'PX',
    ttl_ms((index - last + 1 + buckets) * size - now))
end
-- Its binding (include/engine.lua): alone in a script, the locals CHECK …; among several, an ALG entry.
--- @if solo
local CHECK, COMMIT, CLEAR, REFUND, NARGS, ALG = sliding_window_check, sliding_window_commit, nil, sliding_window_refund, 3, nil
--- @else
ALG['sliding-window'] = { sliding_window_check, sliding_window_commit, nil, sliding_window_refund, 3 }
--- @end
