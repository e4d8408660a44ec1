-- fixed-window: at most `limit` units per window; windows are aligned to floor(now / window).
--
-- KEYS    <base> — the count lives in <base>:<window index>, so a count can only ever be read
--         in the window it belongs to, whatever clock drives the script (same slot: the
--         suffix is outside the hash tag)
-- ARGV    limit, window_us
-- State   a string integer: units admitted in this window; TTL until the window ends
-- Reply   allowed; remaining = limit - used; reset_after = until the window ends (0 when
--         nothing is used); retry_after = until the window ends (-1 when cost > limit)
ALG['fixed-window'] = {
  nargs = 2,
  check = function(key, o, cost)
    local limit, window = tonumber(ARGV[o]), tonumber(ARGV[o + 1])
    local index = math.floor(now / window)
    local count_key = key .. ':' .. string.format('%d', index)
    local used = tonumber(redis.call('GET', count_key) or 0)
    local window_left = (index + 1) * window - now
    if used + cost <= limit then
      local after = used + cost
      return { 1, limit - after, after > 0 and window_left or 0, 0, 0, count_key, after, window_left }
    end
    return { 0, limit - used, used > 0 and window_left or 0, cost > limit and -1 or window_left, 0 }
  end,
  commit = function(key, o, cost, r)
    redis.call('SET', r[6], r[7], 'PX', ttl_ms(r[8]))
  end,
  clear = function(key, o)
    local index = math.floor(now / tonumber(ARGV[o + 1]))
    redis.call('DEL', key .. ':' .. string.format('%d', index))
  end,
}
