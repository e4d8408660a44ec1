-- fixed-window: at most `limit` units per window; windows are aligned to floor(now / window).
--
-- KEYS    <base>
-- ARGV    limit, window_us, packed (1 or 0: chosen once per policy, see State)
-- State   packed = 1 (whenever (limit + 1) · (windows until 2^53 µs) ≤ 2^53, i.e. about
--         limit < window in µs): one string integer at <base>, index · (limit + 1) + used,
--         where index = floor(now / window). The value dates its own count, so a count is only
--         ever read in the window it belongs to, whatever clock drives the script, and the
--         value stays an integer Redis stores in the key itself (72 bytes for a short key).
--         packed = 0 (larger limits, whose product would pass 2^53): the count alone at
--         <base>:<window index> (same slot: the suffix is outside the hash tag).
--         Either way the TTL runs until the window ends: set by the window's first write, kept
--         by INCRBY on the later ones (a SET with PX costs Redis about twice an INCRBY).
-- Reply   allowed; remaining = limit - used; reset_after = until the window ends (0 when
--         nothing is used); retry_after = until the window ends (-1 when cost > limit).
--         packed: (window_left - 1) · (limit + 1) + count (count after this request when
--         allowed, before it when denied), negated minus 1 when denied; only in the packed
--         layout and while window · (limit + 1) < 2^53 (fixedWindowAlgorithm.unpack)
local function fixed_window_check(key, o, cost)
  local limit, window = tonumber(ARGV[o]), tonumber(ARGV[o + 1])
  local index = math.floor(now / window)
  local count_key, used, base, packed = key, 0, 0, nil
  if ARGV[o + 2] == '1' then
    -- Exact: the policy guarantees (index + 1) · (limit + 1) ≤ 2^53.
    base = index * (limit + 1)
    local stored = tonumber(redis.call('GET', key))
    if stored and stored >= base and stored - base <= limit then used = stored - base end
    if window * (limit + 1) < 9007199254740992 then packed = limit + 1 end
  else
    count_key = key .. ':' .. string.format('%d', index)
    used = tonumber(redis.call('GET', count_key) or 0)
  end
  local window_left = (index + 1) * window - now
  if used + cost <= limit then
    local after = used + cost
    return 1, limit - after, after > 0 and window_left or 0, 0, 0,
      packed and (window_left - 1) * packed + after, count_key, base + after, window_left, used
  end
  return 0, limit - used, used > 0 and window_left or 0, cost > limit and -1 or window_left, 0,
    packed and -((window_left - 1) * packed + used) - 1
end
local function fixed_window_commit(key, o, cost, reset, count_key, value, window_left, used)
  -- A count of this window already holds its TTL (every write to a window is > 0).
  if used > 0 then
    redis.call('INCRBY', count_key, cost)
  else
    redis.call('SET', count_key, string.format('%d', value), 'PX', ttl_ms(window_left))
  end
end
local function fixed_window_clear(key, o)
  if ARGV[o + 2] == '1' then
    redis.call('DEL', key)
  else
    redis.call('DEL', key .. ':' .. string.format('%d', math.floor(now / tonumber(ARGV[o + 1]))))
  end
end
-- Refund: the current window's count only (DECRBY keeps the window's TTL).
local function fixed_window_refund(key, o, cost)
  local limit, window = tonumber(ARGV[o]), tonumber(ARGV[o + 1])
  local index = math.floor(now / window)
  local count_key, used = key, 0
  if ARGV[o + 2] == '1' then
    local base = index * (limit + 1)
    local stored = tonumber(redis.call('GET', key))
    if stored and stored >= base and stored - base <= limit then used = stored - base end
  else
    count_key = key .. ':' .. string.format('%d', index)
    used = tonumber(redis.call('GET', count_key) or 0)
  end
  if used > 0 then redis.call('DECRBY', count_key, math.min(cost, used)) end
end
register('fixed-window', fixed_window_check, fixed_window_commit, fixed_window_clear, fixed_window_refund, 3)
