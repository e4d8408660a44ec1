-- Floodgate live limits: per-key overrides of a limiter's policy parameters (RateLimiter option
-- `liveLimits`), read by the same script call as the decision. Only a script's live variant has
-- this part (the assembler's `live` variant): between the block steps
-- and the engine, which it wraps in run_engine(), so limiters without live limits run exactly
-- the scripts they ran before and pay nothing for it.
--
-- KEYS[#KEYS]  the key's block key, <prefix>:{<key>}:<limiter id>, which holds its live state
--              too (include/blocks.lua: its block, its own overrides and when their key may go,
--              its mark of the override for every key): one key per call, which the engine
--              reads anyway (docs/algorithms.md "What live limits cost").
-- ARGV[#ARGV]  '' for every call but a change; taken off ARGV here. A change (MODE 'a') gives
--              '<ttl µs, 0: none>|<PX ms or ''>|<carry>|<entries>': its entries replace the stored
--              ones of their policies, and the ttl applies to all; no entries clears every
--              override of the key (it goes back to the limiter's own parameters)
-- Own          '<expires at µs, 0: never>|<carry>|<entries>', entries separated by ';',
--              each '<i> <o> <base capacity> <capacity> <limit> <window µs> <burst or -> <arg>…':
--              policy i (KEYS[i]), whose group starts at ARGV[FIRST_ARG + o] (its algorithm's
--              name), takes these ARGV after its name instead of the limiter's (limit, window and
--              burst are for the store to read the override back). The policy's state is kept in the override's
--              parameters (a change rewrites it: carry_policy), so an override is never read
--              without them.
-- TTL          none while the key has overrides without a ttl (or a block for ever); else as long
--              as its longest-lived part needs: the overrides their ttl plus the time their
--              states can live (the change's PX, kept as their deadline), the mark the PX of the
--              override for every key (renewed each call), the block its own. Kept longer than a
--              part needs changes nothing: a lapse is carried at the key's next call, and a mark
--              of states that are gone carries full states, which stay full.
-- Carry        what a change makes of the used units (docs/algorithms.md#live-limits), with R the
--              remaining whole units under the old parameters (capacity C) and C' the new
--              capacity: 'as-is' keeps min(R, C'), 'proportional' keeps the fraction used
--              (C' - ceil((C - R) · C' / C)), 'additive' keeps the units used
--              (clamp(R + C' - C, 0, C')), 'reset' starts full; a key at full capacity (R = C:
--              idle) stays full whatever the carry. The state is then cleared and charged C'
--              minus that, as a fresh key admits it, at now.
-- Mark         '<version>|<carry>|<entries>': the global entries the key's states are kept in
--              (policies with an override of their own left out). A call without a spec that
--              finds a mark carries the key back to the limiter's own parameters (a process that
--              has not read a change yet).
-- ARGV[#ARGV]  (taken off first) '' when the limiter has no override for every key, else the
--              one the process holds: '<version>|<expires at µs, 0: never>|<carry>|<mark PX ms>|
--              <entries>', entries as stored. A key's policies without an override of their own
--              are carried lazily, on its next call, from the entries of its mark (or the
--              limiter's own parameters) to the global ones (or, once lapsed, the limiter's own);
--              each call renews the mark's PX, so it outlives every state it describes. An
--              override of the key's own beats the global one; one that lapses or is cleared
--              falls back to the global one.
-- Reply        the engine's reply as it is when no override applied, else { reply, stored } so
--              the store reads it with the override's parameters (stores/redis-live.ts), or
--              { reply, stored or '', global version } when global entries applied. A change
--              replies 1.

--- @if batch
-- A batch's calls mostly carry the same entries: each text is parsed once (the tables are only
-- read), and each key's stored overrides (OWN: expires at, as a number, carry, entries).
-- TOUCHED: the ranges of ARGV a live call changed (first, last, …).
local PARSED, OWN, TOUCHED = {}, {}, {}
--- @end
-- Stored (or asked) entries as tables of strings: { i, o, base capacity, capacity, limit, window, burst, arg… }.
local function parse_entries(list)
  --- @if batch
  local known = PARSED[list]
  if known then return known end
  --- @end
  local entries = {}
  for entry in string.gmatch(list, '[^;]+') do
    local e = {}
    for field in string.gmatch(entry, '%S+') do e[#e + 1] = field end
    entries[#entries + 1] = e
  end
  --- @if batch
  PARSED[list] = entries
  --- @end
  return entries
end

-- Policy i's group (name at ARGV[o]) gets `args` (strings, from index `from`) after its name
-- (and, in a batch, NUMS their numbers: its algorithms read those).
local function put_args(o, args, from)
  --- @if batch
  -- A batch runs its live calls on the shape's own ARGV and NUMS: what changes is noted in
  -- TOUCHED (include/batch.lua puts it back after the call). An entry's numbers are worked out
  -- once (its table is kept: PARSED).
  local nums = args.nums
  if not nums then
    nums = {}
    for j = 1, #args do nums[j] = tonumber(args[j]) end
    args.nums = nums
  end
  TOUCHED[#TOUCHED + 1], TOUCHED[#TOUCHED + 2] = o + 1, o + #args - from + 1
  --- @end
  for j = from, #args do
    ARGV[o + j - from + 1] = args[j]
    --- @if batch
    NUMS[o + j - from + 1] = nums[j]
    --- @end
  end
end

-- The ARGV after the name of the group at ARGV[o], as the entries hold them.
local function group_args(o)
  local _, _, _, _, nargs = algorithm(o)
  local args = {}
  for j = 1, nargs do args[j] = ARGV[o + j] end
  return args
end

-- Rewrites policy i's state, read with the parameters now in ARGV (capacity `from`), for `args`
-- (capacity `to`) as `carry` says (see Carry above). Whole units: a fraction refilled is dropped.
local function carry_policy(i, o, from, to, carry, args)
  local check, commit, clear = algorithm(o)
  local mode, cost, cost_arg = MODE, COST, ARGV[3]
  MODE, ALONE = '1', false
  local _, remaining = check(KEYS[i], o + 1, 0)
  -- A key at its full capacity (idle, or never used) stays full under any carry.
  local left = to
  if remaining >= from then
    left = to
  elseif carry == 'as-is' then
    left = math.min(remaining, to)
  elseif carry == 'proportional' and from > 0 then
    local used = from - remaining
    left = to - (used * to + (-(used * to)) % from) / from
  elseif carry == 'additive' then
    left = math.max(0, math.min(to, remaining + to - from))
  end
  -- Cleared with the old parameters (fixedWindow's layout names the key it counts in).
  if clear then clear(KEYS[i], o + 1) else redis.call('DEL', KEYS[i]) end
  put_args(o, args, 1)
  local used = to - left
  if used > 0 then
    MODE, COST, ARGV[3] = '0', used, string.format('%d', used)
    --- @if batch
    NUMS[3] = used
    --- @end
    local allowed, _, reset, _, _, _, new1, new2, new3, new4 = check(KEYS[i], o + 1, used)
    if allowed == 1 and new1 ~= nil then commit(KEYS[i], o + 1, used, reset, new1, new2, new3, new4) end
  end
  MODE, COST, ARGV[3] = mode, cost, cost_arg
  --- @if batch
  NUMS[3] = tonumber(cost_arg)
  --- @end
end

-- Policy i's capacity as the ARGV hold it before the key's own overrides: the global entry's
-- (`held`: HELD below, nil when none applies), else `base` (the limiter's).
local function held_capacity(held, i, base) return held and held[i] or (base + 0) end

-- The args of an entry (from its eighth field).
local function entry_args(e)
  local args = {}
  for j = 8, #e do args[j - 7] = e[j] end
  return args
end

-- A batch script (include/batch.lua) decides a call whose key has live state, or that carries an
-- override for every key, through decide_live(): the rest of this file, on the call's own KEYS
-- and ARGV (copies: what follows changes them), the engine's decide() in place of run_engine().
-- The helpers above are made once per batch.
--- @if batch
local function decide_live()
local BEFORE = OUTN
--- @end
local GLOBAL_SPEC = ARGV[#ARGV]
ARGV[#ARGV] = nil
local LIMITS_SPEC = ARGV[#ARGV]
ARGV[#ARGV] = nil
-- The key's live key is its block key (include/blocks.lua), which the engine reads too.
local LIVE_KEY = KEYS[#KEYS]
MARK_PX = nil

-- The key's overrides and mark, one read: a key's mark is seen even by a process that holds no
-- override for every key yet, which then carries the key back rather than misread its states.
-- A batch read them for all its live calls at once (include/batch.lua), and keeps them as its
-- calls write them (LIVE_NOW).
local limits, mark, deadline
do
  local _
  _, deadline, limits, mark = live_parts(live_value(LIVE_KEY))
end

-- The key's overrides and mark are written as `deadline`, `limits` and `mark` then are, its block
-- as it is: write_live(LIVE_KEY, KEEP, deadline, limits, mark).

-- The override for every key ('*'), as this process holds it (GLOBAL_SPEC): the key's policies
-- without an override of their own are carried lazily to its entries, from those the key's mark
-- says its states are kept in (or the limiter's own parameters).
local GLOBAL, GLOBAL_VERSION, GLOBAL_APPLIED, HELD = nil, nil, false, nil
local mark_global
if GLOBAL_SPEC ~= '' or mark then
  -- No spec but a mark: the key was carried by a process holding a change this one has not
  -- read yet; it goes back to the limiter's own parameters, with the mark's carry.
  local version, expires, gcarry, px, glist = '', '0', string.match(mark or '', '^%d+|([^|]*)|'), '0', ''
  if GLOBAL_SPEC ~= '' then
    version, expires, gcarry, px, glist = string.match(GLOBAL_SPEC, '^(%d+)|(%d+)|([^|]*)|(%d+)|(.*)$')
  end
  -- Lapsed: every key goes back to the limiter's own parameters (carried as it was set).
  if expires + 0 > 0 and expires + 0 <= now then glist = '' end
  GLOBAL, GLOBAL_VERSION = {}, version
  local count = 0
  for _, e in ipairs(parse_entries(glist)) do GLOBAL[e[1] + 0], count = e, count + 1 end
  -- The mark a key whose own overrides are `skip` should hold, and how many entries it has.
  local function wanted(skip)
    if next(skip) == nil then return version .. '|' .. gcarry .. '|' .. glist, count end
    local kept = {}
    for i = 1, #KEYS - 1 do
      if GLOBAL[i] and not skip[i] then kept[#kept + 1] = table.concat(GLOBAL[i], ' ') end
    end
    return version .. '|' .. gcarry .. '|' .. table.concat(kept, ';'), #kept
  end
  local own = {}
  if limits then
    for _, e in ipairs(parse_entries(string.match(limits, '^%d+|[^|]*|(.*)$'))) do own[e[1] + 0] = true end
  end
  if mark ~= wanted(own) then
    local mversion, mlist = '', ''
    if mark then mversion, mlist = string.match(mark, '^(%d+)|[^|]*|(.*)$') end
    local marked = {}
    for _, e in ipairs(parse_entries(mlist)) do marked[e[1] + 0] = e end
    for i = 1, #KEYS - 1 do
      local from, to = marked[i], GLOBAL[i]
      if not own[i] and (from or to) then
        local o = FIRST_ARG + (from or to)[2]
        local base = group_args(o)
        local target = to and entry_args(to) or base
        if from then put_args(o, from, 8) end
        -- 'reset' empties a key once per version; the others carry only a change of parameters.
        local same = gcarry ~= 'reset' or mversion == version
        for j = 1, #target do
          if same and target[j] ~= ARGV[o + j] then same = false end
        end
        if same then
          put_args(o, target, 1)
        else
          carry_policy(i, o, from and from[4] + 0 or to[3] + 0, to and to[4] + 0 or from[3] + 0, gcarry, target)
        end
      end
    end
  end
  -- Every global entry goes into ARGV, so a key's own override that goes (lapse, clearLimit)
  -- falls back to it.
  HELD = {}
  for i, e in pairs(GLOBAL) do
    put_args(FIRST_ARG + e[2], e, 8)
    HELD[i] = e[4] + 0
  end
  -- Writes the key's mark for its own overrides `skip` (renewing its PX).
  MARK_PX = px
  mark_global = function(skip)
    local wanted_mark, n = wanted(skip)
    if n == 0 then mark = nil else mark = wanted_mark end
    write_live(LIVE_KEY, KEEP, deadline, limits, mark)
    GLOBAL_APPLIED = n > 0
  end
end
local entries
if limits then
  --- @if batch
  local own = OWN[limits]
  if not own then
    own = { string.match(limits, '^(%d+)|([^|]*)|(.*)$') }
    own[1] = own[1] + 0
    OWN[limits] = own
  end
  local expires, carry, list = own[1], own[2], own[3]
  --- @else
  local expires, carry, list = string.match(limits, '^(%d+)|([^|]*)|(.*)$')
  --- @end
  entries = parse_entries(list)
  if expires + 0 > 0 and expires + 0 <= now then
    -- Lapsed: each overridden policy's state goes back to the limiter's parameters (the carry it
    -- was set with), and the key runs on those from now on.
    for _, e in ipairs(entries) do
      local o = FIRST_ARG + e[2]
      local base = group_args(o)
      put_args(o, e, 8)
      carry_policy(e[1] + 0, o, e[4] + 0, held_capacity(HELD, e[1] + 0, e[3]), carry, base)
    end
    limits, deadline, entries = nil, nil, {}
    -- Written with the mark, just below, when the key has one.
    if not mark_global then write_live(LIVE_KEY, KEEP, deadline, limits, mark) end
  end
end

if mark_global then
  local skip = {}
  for _, e in ipairs(entries or {}) do skip[e[1] + 0] = true end
  mark_global(skip)
end

if MODE == 'a' then
  -- A change: every policy named by the stored or the asked overrides goes from the parameters
  -- its state is kept in to the asked ones (or the limiter's own), as the carry says.
  local ttl, px, carry, list = string.match(LIMITS_SPEC, '^(%d+)|(%d*)|([^|]*)|(.*)$')
  local old, new = {}, {}
  for _, e in ipairs(entries or {}) do old[e[1] + 0] = e end
  -- The asked entries replace the stored ones of their policies; no entry at all clears them all.
  if list ~= '' then
    for i, e in pairs(old) do new[i] = e end
    for _, e in ipairs(parse_entries(list)) do new[e[1] + 0] = e end
  end
  for i = 1, #KEYS - 1 do
    local from, to = old[i], new[i]
    if (from or to) and from ~= to then
      local o = FIRST_ARG + (from or to)[2]
      local base = group_args(o)
      local target = to and entry_args(to) or base
      if from then put_args(o, from, 8) end
      local same = carry ~= 'reset'
      for j = 1, #target do
        if same and target[j] ~= ARGV[o + j] then same = false end
      end
      if not same then
        carry_policy(i, o, from and from[4] + 0 or held_capacity(HELD, i, to[3]), to and to[4] + 0 or held_capacity(HELD, i, from[3]), carry, target)
      end
    end
  end
  local kept = {}
  for i = 1, #KEYS - 1 do
    if new[i] then kept[#kept + 1] = table.concat(new[i], ' ') end
  end
  list = table.concat(kept, ';')
  if list == '' then
    limits, deadline = nil, nil
  else
    local expires = ttl + 0 > 0 and now + ttl or 0
    limits = string.format('%d', expires) .. '|' .. carry .. '|' .. list
    -- The key may go once the ttl lapsed and the states kept in the overrides are gone (PX).
    deadline = px ~= '' and string.format('%d', (now - now % 1000) / 1000 + px) or nil
  end
  if mark_global then mark_global(new) else write_live(LIVE_KEY, KEEP, deadline, limits, mark) end
  return 1
elseif limits then
  for _, e in ipairs(entries) do put_args(FIRST_ARG + e[2], e, 8) end
end

-- The engine runs as a function here, so its reply can be answered with the override.
--- @engine
--- @if batch
local reply = decide()
-- Answered with its overrides: a decision the engine wrote into the batch's reply (OUT, from
-- BEFORE + 1) is taken back out into a table of its own, the first element of this call's.
if reply == OUT and (GLOBAL_APPLIED or limits) then
  local own = {}
  for j = BEFORE + 1, OUTN do own[j - BEFORE], OUT[j] = OUT[j], nil end
  OUTN, reply = BEFORE, own
end
--- @else
local reply = run_engine()
--- @end
if GLOBAL_APPLIED then return { reply, limits or '', GLOBAL_VERSION } end
if limits then return { reply, limits } end
return reply
--- @if batch
end
--- @end
