-- fixed-window: at most `limit` units per window; windows are aligned to floor(now / window)
-- (anchor 'clock'), or start at a key's first admitted request (anchor 'first-request').
--
-- KEYS    <base>
-- ARGV    limit, window_us, layout (chosen once per policy, see State): 1 or 0 for 'clock',
--         2 for 'first-request', 3 and 4 for 'first-request' with extendWindow 'on-denial'
--         and 'on-hit'
-- State   layout 1 (whenever (limit + 1) · (windows until 2^53 µs) ≤ 2^53, i.e. about
--         limit < window in µs): one string integer at <base>, index · (limit + 1) + used,
--         where index = floor(now / window). The value dates its own count, so a count is only
--         ever read in the window it belongs to, whatever clock drives the script, and the
--         value stays an integer Redis stores in the key itself (72 bytes for a short key).
--         layout 0 (larger limits, whose product would pass 2^53): the count alone at
--         <base>:<window index> (same slot: the suffix is outside the hash tag).
--         Either way the TTL runs until the window ends: set by the window's first write, kept
--         by INCRBY on the later ones (a SET with PX costs Redis about twice an INCRBY). When
--         the policy is the limiter's only one and the call consumes (ALONE), check counts
--         first: INCRBY, then a SET … PX when the count was not this window's (layout 1) or a
--         PEXPIRE on a window's first count (layout 0), and DECRBY back on a denial: one
--         command per admitted decision. Otherwise (a peek, or other policies that may deny)
--         it reads with GET and commit writes.
--         layout 2: '<window end µs>:<used>' at <base>, rewritten whole by each write with the
--         TTL until the window's end (an end and a count do not fit one exact integer). The
--         window is current while now < end; without one, an admitted cost > 0 starts
--         [now, now + window). Layouts 3 and 4 as 2, but a hit (cost > 0, at most limit)
--         moves the end to now + window: 3 when denied, 4 always; check writes a consuming
--         denial's new end itself (the count unchanged).
-- Debt    layout 1: a charge (MODE '7') past the limit carries the overrun into the following
--         windows, each taking up to `limit` of it: the key holds -1 - (last · (limit + 1) + r)
--         (r in 1 … limit), read as windows index … last - 1 full and r in window `last`; TTL
--         until `last` ends. Negative, so that it never reads as a count of another window (a
--         clock that steps back still reads a later window's count as nothing), and only a value
--         that is not this window's count is tested for it (one comparison). Owing more than the
--         current window: nothing is left, a cost c is admitted from the first window with room
--         for it, a read (cost 0) is admitted, and a refund lowers what is owed, the last
--         window's units first. Once the clock reaches window `last` the value reads as r used.
--         Past the last window any clock reaches (floor((2^53 - 1) / window)) the debt stops
--         there. The arithmetic is written out where it is needed (a function would be a
--         closure made on every script call).
--         Layouts 2-4: the count may pass the limit: '<end>:<owed>' with owed > limit is the
--         window ending at `end` full and owed - limit carried into the windows that follow it
--         back to back, each of length `window` taking up to `limit` (the next one starts where
--         the last ended, not at a request). Once `end` has passed, k = floor((now - end) /
--         window) + 1 windows later the window in force ends at end + k · window and owes
--         owed - k · limit (nothing left: no window, the next admitted request starts one).
--         Owing more than the window in force: as layout 1 (nothing left, a cost is admitted
--         from the first window with room for it, or at the end of the last when it has none; a
--         read is admitted; a refund lowers what is owed, the last window's units first; a
--         further charge adds to it). extendWindow starts the window in force over from now as
--         it does without debt, so the windows owed move out with it. TTL until the last owing
--         window ends.
--         Layout 0: a count past the limit at <base>:<index> is what is owed from window index
--         on (the window full), and the base key, otherwise unused, carries it: '<index>:<owed>'
--         with the TTL until the last owing window ends, read as owed - (i - index) · limit
--         from window i on. Only a window with no count of its own reads it (a window's first
--         count, counting first: one GET per key and window), so the common path pays nothing.
--         A count that takes the debt's last window in (the first admitted there, or a refund)
--         drops the base key; a charge or a refund that leaves more than a window rewrites it.
--         Owing more than the current window: as layout 1. A charge with limit 0 admits and
--         counts nothing, in any layout.
-- Reply   allowed; remaining = limit - used; reset_after = until the window ends (0 when
--         nothing is used); retry_after = until the window ends (-1 when cost > limit).
--         packed: (window_left - 1) · (limit + 1) + count (count after this request when
--         allowed, before it when denied), negated minus 1 when denied; in layouts 1 and 2
--         while window · (limit + 1) < 2^53 (fixedWindowAlgorithm.unpack)

--- @include "count-first"

local function fixed_window_check(key, o, cost)
  local limit, window = tonumber(ARGV[o]), tonumber(ARGV[o + 1])
  local layout = ARGV[o + 2]
  local index = (now - now % window) / window
  local count_key, used, base, packed = key, 0, 0, nil
  if layout == '1' then
    -- Exact: the policy guarantees (index + 1) · (limit + 1) ≤ 2^53.
    base = index * (limit + 1)
    if not ALONE then
      local stored = tonumber(redis.call('GET', key))
      -- owed: units owed from this window on, when the key is in debt or a charge puts it there.
      local owed, r, last
      if stored and stored >= base and stored - base <= limit then
        used = stored - base
      elseif stored and stored < 0 and limit > 0 then
        -- A debt (see Debt): r in window `last`, the windows before it full; an older one is over.
        r = (-1 - stored) % (limit + 1)
        last = (-1 - stored - r) / (limit + 1)
        if last >= index then owed = (last - index) * limit + r end
      end
      if MODE == '7' and cost > 0 and limit > 0 and (owed or used + cost > limit) then
        -- A charge: what does not fit this window carries into the following ones.
        owed = (owed or used) + cost
        local q = 0
        if owed > limit then q = (owed - 1 - (owed - 1) % limit) / limit end
        last, r = index + q, owed - q * limit
        local top = (9007199254740991 - 9007199254740991 % window) / window
        if last > top then last, r = top, limit end
        local value, ttl = last * (limit + 1) + r, (last + 1) * window - now
        if q > 0 then value = -1 - value end
        local remaining = 0
        if q == 0 then remaining = limit - r end
        return 1, remaining, ttl, 0, 0, nil, count_key, value, ttl, 0
      elseif owed then
        local reset, remaining = (last + 1) * window - now, 0
        if last == index then remaining = limit - r end
        if cost == 0 then return 1, remaining, reset, 0, 0, nil end
        if last == index and r + cost <= limit then
          -- The debt's last window has come, with room: an ordinary count from now on.
          local value = base + r + cost
          return 1, limit - r - cost, reset, 0, 0, nil, count_key, value, reset, 0
        end
        local retry = reset
        if cost > limit then retry = -1 elseif last > index and r + cost <= limit then retry = last * window - now end
        return 0, remaining, reset, retry, 0, nil
      end
    end
    if window * (limit + 1) < 9007199254740992 then packed = limit + 1 end
  elseif layout == '0' then
    count_key = key .. ':' .. string.format('%d', index)
    if not ALONE then
      -- This window's count, or past the limit what is owed from it on; without one, a debt
      -- carried from an earlier window by the base key (see Debt).
      local stored, marked = tonumber(redis.call('GET', count_key)), false
      if stored then
        used = stored
      elseif limit > 0 then
        local carried = redis.call('GET', key)
        local i0, o0 = string.match(carried or '', '^(%d+):(%d+)$')
        if i0 and tonumber(i0) <= index then
          local owed = tonumber(o0) - (index - tonumber(i0)) * limit
          if owed > 0 then used, marked = owed, true end
        end
      end
      local window_left = (index + 1) * window - now
      if MODE == '7' and cost > 0 and limit > 0 and used + cost > limit then
        -- A charge past the limit: the count holds what is owed, the base key carries it on.
        local owed = used + cost
        local ttl = window_left + (owed - 1 - (owed - 1) % limit) / limit * window
        return 1, 0, ttl, 0, 0, nil, count_key, owed, window_left, -2
      elseif used > limit then
        -- In debt: nothing is left before the last owing window (as layout 1).
        local ahead = (used - 1 - (used - 1) % limit) / limit
        local reset = window_left + ahead * window
        if cost == 0 then return 1, 0, reset, 0, 0, nil end
        local retry = reset
        if cost > limit then retry = -1 elseif used - ahead * limit + cost <= limit then retry = reset - window end
        return 0, 0, reset, retry, 0, nil
      elseif marked and cost > 0 and used + cost <= limit then
        -- The debt's last window, with room: its count starts at what is owed (-3: commit
        -- drops the base key, now paid into this window).
        return 1, limit - used - cost, window_left, 0, 0, nil, count_key, used + cost, window_left, -3
      end
    end
  else
    -- Layouts 2-4 (no function of its own: a script's functions are closures made on every call).
    -- The window's end and count; without a current window, an admitted cost starts one now.
    -- A count past the limit is a debt carried into the windows that follow back to back, each
    -- taking up to `limit` (see Debt): the current one of them ends at window_end, used is
    -- what is owed from it on.
    local window_end, stored = now + window, redis.call('GET', key)
    if stored then
      local e, u = string.match(stored, '^(%d+):(%d+)$')
      e, u = tonumber(e), tonumber(u)
      if e and e > now then
        window_end, used = e, u
      elseif e and u > limit and limit > 0 then
        -- Windows passed since e, each repaying `limit`.
        local k = (now - e - (now - e) % window) / window + 1
        if u - k * limit > 0 then window_end, used = e + k * window, u - k * limit end
      end
    end
    -- The windows still owed after the current one, and the last one's count.
    local ahead, r = 0, used
    if used > limit and limit > 0 then
      ahead = (used - 1 - (used - 1) % limit) / limit
      r = used - ahead * limit
    end
    -- extendWindow: a hit of a cost the policy could admit starts the window over from now
    -- (3: when denied, 4: any); a consuming denial writes that itself, charging nothing.
    if cost > 0 and cost <= limit and (layout == '4' or (layout == '3' and used + cost > limit)) then
      window_end = now + window
      if used + cost > limit and MODE ~= '1' then
        redis.call('SET', key, string.format('%d:%d', window_end, used), 'PX',
          ttl_ms(window + ahead * window))
      end
    end
    local window_left = window_end - now
    if window * (limit + 1) < 9007199254740992 then packed = limit + 1 end
    if MODE == '7' and cost > 0 and limit > 0 and used + cost > limit then
      -- A charge past the limit: what does not fit carries into the following windows (Debt).
      local owed = used + cost
      local q = (owed - 1 - (owed - 1) % limit) / limit
      local ttl = window_left + q * window
      return 1, 0, ttl, 0, 0, nil, key, string.format('%d:%d', window_end, owed), ttl, -1
    elseif ahead > 0 then
      -- In debt: nothing is left before the last owing window; a cost fits in it when it has
      -- room, else in the window started after it.
      local reset = window_left + ahead * window
      if cost == 0 then return 1, 0, reset, 0, 0, nil end
      local retry = reset
      if cost > limit then retry = -1 elseif r + cost <= limit then retry = reset - window end
      return 0, 0, reset, retry, 0, nil
    elseif used + cost <= limit then
      local after = used + cost
      -- used = -1 tells commit to write the pair.
      return 1, limit - after, after > 0 and window_left or 0, 0, 0,
        packed and (window_left - 1) * packed + after, key,
        string.format('%d:%d', window_end, after), window_left, -1
    elseif MODE == '7' then
      -- limit 0: a charge admits, the count stays 0.
      return 1, 0, window_left, 0, 0, nil, key, string.format('%d:%d', window_end, limit),
        window_left, -1
    end
    return 0, limit - used, used > 0 and window_left or 0, cost > limit and -1 or window_left, 0,
      packed and -((window_left - 1) * packed + used) - 1
  end
  local window_left = (index + 1) * window - now
  if ALONE then
    -- The limiter's only policy, consuming: count first, then look (include/count-first.lua).
    -- cost is the call's: ARGV[3] as written.
    -- marker: in layout 0, the base key, which carries a debt past its window (see Debt).
    local incr, wp, spread, marker = ARGV[3], packed and (window_left - 1) * packed, window, layout == '0' and key
    return count_first(count_key, cost, incr, limit, base, window_left, wp, spread, marker, index)
  elseif used + cost <= limit then
    local after = used + cost
    return 1, limit - after, after > 0 and window_left or 0, 0, 0,
      packed and (window_left - 1) * packed + after, count_key, base + after, window_left, used
  elseif MODE == '7' then
    -- A charge past the limit fills the window (limit 0; layout 0, by set alone: see Debt).
    return 1, 0, window_left, 0, 0, nil, count_key, base + limit, window_left, 0
  end
  return 0, limit - used, used > 0 and window_left or 0, cost > limit and -1 or window_left, 0,
    packed and -((window_left - 1) * packed + used) - 1
end
local function fixed_window_commit(key, o, cost, reset, count_key, value, window_left, used)
  -- Written already by check (ALONE).
  if not count_key then return end
  -- A count of this window already holds its TTL (every write to a window is > 0). The engine
  -- commits the call's cost: ARGV[3].
  if used > 0 then
    redis.call('INCRBY', count_key, ARGV[3])
  elseif used == 0 then
    redis.call('SET', count_key, string.format('%d', value), 'PX', ttl_ms(window_left))
  elseif used < -1 then
    -- Layout 0 (see Debt): -2, value owed from this window on, carried on by the base key
    -- until the last owing window ends; -3, a count that paid the carried debt off.
    redis.call('SET', count_key, string.format('%d', value), 'PX', ttl_ms(window_left))
    if used == -3 then
      redis.call('DEL', key)
    else
      local limit, window = tonumber(ARGV[o]), tonumber(ARGV[o + 1])
      local ahead = (value - 1 - (value - 1) % limit) / limit
      redis.call('SET', key, string.format('%d:%d', (now - now % window) / window, value), 'PX',
        ttl_ms(window_left + ahead * window))
    end
  else
    redis.call('SET', count_key, value, 'PX', ttl_ms(window_left))
  end
end
local function fixed_window_clear(key, o)
  if ARGV[o + 2] == '0' then
    -- The window index exactly as check computes it, so the key deleted is the one it counts in.
    local window = tonumber(ARGV[o + 1])
    redis.call('DEL', key .. ':' .. string.format('%d', (now - now % window) / window), key)
  else
    redis.call('DEL', key)
  end
end
-- Refund: the current window's count only (DECRBY keeps the window's TTL; layout 2 keeps the
-- window's end, so a refund never moves a window).
local function fixed_window_refund(key, o, cost)
  local limit, window = tonumber(ARGV[o]), tonumber(ARGV[o + 1])
  local layout = ARGV[o + 2]
  if layout ~= '0' and layout ~= '1' then
    local stored = redis.call('GET', key)
    if not stored then return end
    local e, u = string.match(stored, '^(%d+):(%d+)$')
    local window_end, used = tonumber(e), tonumber(u)
    if not window_end then return end
    if window_end <= now and used > limit and limit > 0 then
      -- A debt (see Debt): the window of the chain in force now, and what is owed from it on.
      local k = (now - window_end - (now - window_end) % window) / window + 1
      window_end, used = window_end + k * window, used - k * limit
    end
    if window_end > now and used > 0 then
      -- What is owed goes down, the last window's units first.
      local owed = used - math.min(cost, used)
      local q = 0
      if owed > limit then q = (owed - 1 - (owed - 1) % limit) / limit end
      local value = string.format('%d:%d', window_end, owed)
      redis.call('SET', key, value, 'PX', ttl_ms(window_end - now + q * window))
    end
    return
  end
  local index = (now - now % window) / window
  local count_key, used = key, 0
  if layout == '1' then
    local base = index * (limit + 1)
    local stored = tonumber(redis.call('GET', key))
    if stored and stored >= base and stored - base <= limit then
      used = stored - base
    elseif stored and stored < 0 and limit > 0 then
      -- A debt: what is owed goes down, the last window's units first (see Debt).
      local r = (-1 - stored) % (limit + 1)
      local last = (-1 - stored - r) / (limit + 1)
      if last < index then return end
      local owed = (last - index) * limit + r - math.min(cost, (last - index) * limit + r)
      local q = 0
      if owed > limit then q = (owed - 1 - (owed - 1) % limit) / limit end
      local value, ttl = (index + q) * (limit + 1) + owed - q * limit, (index + q + 1) * window - now
      if q > 0 then value = -1 - value end
      redis.call('SET', key, string.format('%d', value), 'PX', ttl_ms(ttl))
      return
    end
  else
    count_key = key .. ':' .. string.format('%d', index)
    local stored = tonumber(redis.call('GET', count_key))
    local owed = stored
    if not stored and limit > 0 then
      -- A debt carried from an earlier window by the base key (see Debt).
      local i0, o0 = string.match(redis.call('GET', key) or '', '^(%d+):(%d+)$')
      if i0 and tonumber(i0) <= index then owed = tonumber(o0) - (index - tonumber(i0)) * limit end
      if owed and owed <= 0 then owed = nil end
    end
    if owed and (owed > limit or not stored) then
      -- What is owed goes down, the last window's units first (see Debt).
      local left = owed - math.min(cost, owed)
      local window_left = (index + 1) * window - now
      if stored or left > 0 then
        redis.call('SET', count_key, string.format('%d', left), 'PX', ttl_ms(window_left))
      end
      if left > limit then
        local ahead = (left - 1 - (left - 1) % limit) / limit
        redis.call('SET', key, string.format('%d:%d', index, left), 'PX',
          ttl_ms(window_left + ahead * window))
      else
        redis.call('DEL', key)
      end
      return
    end
    used = stored or 0
  end
  if used > 0 then redis.call('DECRBY', count_key, string.format('%d', math.min(cost, used))) end
end
--- @if solo batch !combined
-- A batch's lone consumes of this policy (include/batch.lua: one policy, cost > 0, no lockout,
-- no block in the batch): a decider of one key, made once per shape of calls, with what the
-- shape and the batch's clock settle (limit, window, index, base, time left, packed width)
-- worked out here instead of on every decision; nil for layouts 2-4 (the engine's check does it).
-- It decides as check does when ALONE: the same count_first.
local function fixed_window_lone(o, cost)
  local limit, window = tonumber(ARGV[o]), tonumber(ARGV[o + 1])
  local layout, incr = ARGV[o + 2], ARGV[3]
  if layout ~= '0' and layout ~= '1' then return nil end
  local index = (now - now % window) / window
  local window_left, base, wp, spread = (index + 1) * window - now, 0, nil, nil
  if layout == '0' then
    -- The base key carries a debt past its window (lua/fixed-window.lua's Debt).
    local suffix = ':' .. string.format('%d', index)
    spread = window
    return function(key)
      local count_key = key .. suffix
      return count_first(count_key, cost, incr, limit, base, window_left, wp, spread, key, index)
    end
  end
  base, spread = index * (limit + 1), window
  if window * (limit + 1) < 9007199254740992 then wp = (window_left - 1) * (limit + 1) end
  local marker = false
  return function(count_key)
    return count_first(count_key, cost, incr, limit, base, window_left, wp, spread, marker, index)
  end
end
--- @end
-- Its binding (include/engine.lua): alone in a script, the locals CHECK …; among several, an ALG entry.
--- @if solo
local CHECK, COMMIT, CLEAR, REFUND, NARGS, ALG = fixed_window_check, fixed_window_commit, fixed_window_clear, fixed_window_refund, 3, nil
--- @if batch !combined
LONE = fixed_window_lone
--- @end
--- @else
ALG['fixed-window'] = { fixed_window_check, fixed_window_commit, fixed_window_clear, fixed_window_refund, 3 }
--- @end
