-- Shared step of fixedWindow's layouts 0 and 1 (lua/fixed-window.lua): a lone consume (ALONE,
-- the limiter's only policy) counts first and looks after. One INCRBY of the call's cost (its
-- ARGV as written, `incr`: a string argument costs Redis nothing to convert) on count_key,
-- which holds base + the count while it is this window's; then a SET … PX when the count was
-- not this window's (layout 1), a PEXPIRE on a window's first count (layout 0), or, on a
-- denial, the count back to what it was: one command per admitted decision, no GET. Gives
-- check's values (allowed, remaining, reset_after, retry_after, delay, packed), nothing for
-- commit (it has written). Written out where it is called (`return count_first(…)`): in the
-- single script's check and in the batch script's lone decider (fixed_window_lone), the same
-- lines, no closure.
--- @inline
local function count_first(count_key, cost, incr, limit, base, window_left, wp, spread, marker, index)
  -- wp: the packed reply's part for the time left, (window_left - 1) · (limit + 1), or nil
  -- (layout 0: no packed reply). spread: the window (µs). In layout 1 (marker false) a negative
  -- value is a key in debt (lua/fixed-window.lua's Debt); in layout 0, marker is the base key,
  -- which carries a debt past window `index`, and a count past the limit is what is owed from
  -- this window on. The count after this request is this window's when the count
  -- before it lies in [base, base + limit]; otherwise (a missing key, another window's count, a
  -- value that is not one) the window starts with this request.
  local counted = redis.pcall('INCRBY', count_key, incr)
  -- An error comes back as a table, which tonumber() answers nil for (type() would make Redis
  -- intern the string 'number' on every decision: ~180 instructions, callgrind).
  if not tonumber(counted) then
    -- A string that is not a count is overwritten (as a GET would count it as nothing); a key
    -- of another type fails the call, as a GET of it would.
    if string.find(counted.err, 'WRONGTYPE', 1, true) then error(counted) end
    counted = nil
  end
  local after = counted and counted - base
  if marker and after == cost then
    -- Layout 0, a window's first count: a debt the base key carries may reach this window.
    local i0, o0 = string.match(redis.call('GET', marker) or '', '^(%d+):(%d+)$')
    local owed = 0
    if i0 and tonumber(i0) <= index then owed = tonumber(o0) - (index - tonumber(i0)) * limit end
    if owed > 0 and owed + cost <= limit then
      -- Its last window, with room: the count starts at what is owed, which is paid off.
      redis.call('SET', count_key, string.format('%d', owed + cost), 'PX', ttl_ms(window_left))
      redis.call('DEL', marker)
      return 1, limit - owed - cost, window_left, 0, 0, nil
    elseif owed > 0 then
      redis.call('DEL', count_key)
      if owed <= limit then
        return 0, limit - owed, window_left, cost > limit and -1 or window_left, 0, nil
      end
      local ahead = (owed - 1 - (owed - 1) % limit) / limit
      local reset_at = window_left + ahead * spread
      local retry_at = reset_at
      if cost > limit then retry_at = -1 elseif owed - ahead * limit + cost <= limit then retry_at = reset_at - spread end
      return 0, 0, reset_at, retry_at, 0, nil
    end
  end
  -- Admitted (the common case first): the count before was this window's and had room.
  if after and after >= cost and after <= limit then
    -- A window's first count (a key INCRBY made) gets the TTL until the window ends.
    if after == cost then redis.call('PEXPIRE', count_key, ttl_ms(window_left)) end
    return 1, limit - after, window_left, 0, 0, wp and wp + after
  end
  local used, reset, retry = 0, nil, nil
  if marker and after and after - cost > limit and limit > 0 then
    -- Layout 0 in debt: the count is what is owed from this window on (as layout 1 below).
    local owed = after - cost
    local ahead = (owed - 1 - (owed - 1) % limit) / limit
    reset = window_left + ahead * spread
    retry = reset
    if cost > limit then retry = -1 elseif owed - ahead * limit + cost <= limit then retry = reset - spread end
    used = limit
  elseif not marker and counted and counted < cost and limit > 0 then
    -- The value before was negative: a debt (r in window `last`, the windows before it full).
    local r = (cost - 1 - counted) % (limit + 1)
    local last = (cost - 1 - counted - r) / (limit + 1)
    local ahead = last - base / (limit + 1)
    if ahead < 0 or ahead == 0 and r + cost <= limit then
      -- A debt that is over, or whose last window has come with room: counted from here.
      if ahead < 0 then r = 0 end
      if cost <= limit then
        local value = base + r + cost
        redis.call('SET', count_key, string.format('%d', value), 'PX', ttl_ms(window_left))
        return 1, limit - r - cost, window_left, 0, 0, wp and wp + r + cost
      end
    else
      -- Denied: nothing is left before window `last`; a cost fits in the first with room.
      reset = window_left + ahead * spread
      retry = reset
      if cost > limit then retry = -1 elseif ahead > 0 and r + cost <= limit then retry = reset - spread end
      used = limit
      if ahead == 0 then used = r end
    end
  elseif not after or after < cost or after - cost > limit then
    -- Not this window's count: the window starts with this request, if it can ever be admitted.
    if cost <= limit then
      redis.call('SET', count_key, string.format('%d', base + cost), 'PX', ttl_ms(window_left))
      return 1, limit - cost, window_left, 0, 0, wp and wp + cost
    end
  else
    used = after - cost
  end
  -- Denied: the count goes back to what it was (a key INCRBY made goes away).
  if counted == cost then
    redis.call('DEL', count_key)
  elseif counted then
    redis.call('DECRBY', count_key, incr)
  end
  if reset then return 0, limit - used, reset, retry, 0, nil end
  return 0, limit - used, used > 0 and window_left or 0, cost > limit and -1 or window_left, 0,
    wp and -(wp + used) - 1
end
