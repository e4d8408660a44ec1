-- Floodgate engine steps: policies' algorithms and the key's block state (lockouts and blocks
-- by hand). Included after the algorithms and before include/engine.lua, so a batch script
-- defines these once per batch, not once per decision (block_steps() makes its steps each time
-- it is called: only where a block is read or written). The block state is a string
-- '<until µs>:<by>:<level>:<forget at µs>' (include/engine.lua's header).

--- @if mixed
local CHECK, COMMIT, CLEAR, REFUND, NARGS
--- @end

-- A stored block's fields: until, by, level, forget at.
local BLOCK_FIELDS = '^(%d+):(%d+):(%d+):(%d+)$'

-- The algorithm of the policy whose group starts at ARGV[o].
local function algorithm(o)
  if CHECK then return CHECK, COMMIT, CLEAR, REFUND, NARGS end
  local a = ALG[ARGV[o]]
  return a[1], a[2], a[3], a[4], a[5]
end

--- @if live
-- A live limiter (include/live.lua) keeps its key's block state in its live key, KEYS[n+1]: one
-- string '<block>\n<own deadline ms>\n<own>\n<mark>', each part '' when the key has none (no key
-- when all are): the block state, the key's overrides and when their key may go (Redis ms,
-- '' with no ttl), and its mark of the override for every key. One key: each key a call declares
-- costs Redis every call, and a batch asks whether its calls' block keys exist anyway.
-- LIVE_NOW: each live key's value as this script call read or wrote it (false: none); a batch's
-- keys that are not in it are missing while NO_BLOCKS holds (include/batch.lua). MARK_PX: the PX
-- of the mark of the call deciding (include/live.lua sets it). PARTS: each value's parts, split
-- once (a batch's keys mostly hold the same overrides).
local LIVE_NOW, MARK_PX, PARTS = {}, nil, {}

-- A live key's value, read once per script call.
local function live_value(key)
  local value = LIVE_NOW[key]
  if value == nil then
    if NO_BLOCKS then return false end
    value = redis.call('GET', key)
    LIVE_NOW[key] = value
  end
  return value
end

-- A live value's parts: block, own deadline, own overrides, mark (false for none).
local function live_parts(value)
  if not value then return false, false, false, false end
  local p = PARTS[value]
  if not p then
    p = { string.match(value, '^([^\n]*)\n([^\n]*)\n([^\n]*)\n(.*)$') }
    for j = 1, 4 do
      if p[j] == '' then p[j] = false end
    end
    PARTS[value] = p
  end
  return p[1], p[2], p[3], p[4]
end

-- Passed to write_live for a part (the block; or the deadline, for it and the overrides and
-- mark): that part as stored.
local KEEP = true

-- Writes a live key from its parts, with the TTL they need: none when one needs it (a block for
-- ever, overrides without a ttl), else the longest of the block's (until its level is forgotten),
-- the overrides' (their deadline) and the mark's (MARK_PX). The same value is only renewed.
local function write_live(key, block, deadline, own, mark)
  local old, value = live_value(key), false
  local b, d, o, m = live_parts(old)
  if block == KEEP then block = b end
  if deadline == KEEP then deadline, own, mark = d, o, m end
  local p = old and PARTS[old]
  if p and p[1] == (block or false) and p[2] == (deadline or false) and p[3] == (own or false)
    and p[4] == (mark or false) then
    value = old
  elseif block or own or mark then
    value = (block or '') .. '\n' .. (deadline or '') .. '\n' .. (own or '') .. '\n' .. (mark or '')
  end
  LIVE_NOW[key] = value
  if not value then
    if old then redis.call('DEL', key) end
    return
  end
  local forever, px = false, 0
  if block then
    local u, _, _, f = string.match(block, BLOCK_FIELDS)
    if u == '0' then forever = true else px = ttl_ms(math.max(u + 0, f + 0) - now) + 0 end
  end
  if own then
    if deadline then px = math.max(px, deadline - (now - now % 1000) / 1000) else forever = true end
  end
  if mark then px = math.max(px, MARK_PX + 0) end
  if px < 1 then px = 1 end
  if value ~= old then
    if forever then redis.call('SET', key, value) else redis.call('SET', key, value, 'PX', string.format('%d', px)) end
  elseif not forever then
    redis.call('PEXPIRE', key, string.format('%d', px))
  end
end
--- @end

-- A batch script makes what follows only when a call of the batch goes through the engine
-- (make_engine, closed at the end of include/engine.lua): a closure, and a local that one
-- captures (an upvalue object), is made on every EVALSHA, and a batch of lone consumes
-- (include/batch.lua) needs none.
--- @if batch !combined
local decide
local function make_engine()
--- @end

-- The steps on the block state: parse_block, write_block, lockout_us, lock_out, made only
-- where the engine needs them (a stored block to read, a block to write, a lockout). A `local
-- function` is a closure made on every EVALSHA, ~1 000 instructions each (callgrind:
-- docs/benchmarks.md), and a decision that finds no block and locks nobody out needs none.
local function block_steps()
  -- A policy's state is gone: DEL, or the algorithm's own clear.
  local function clear_policy(i, o)
    local _, _, clear = algorithm(o)
    if clear then clear(KEYS[i], o + 1) else redis.call('DEL', KEYS[i]) end
  end

  -- A stored block (GET of the block key, read by the engine itself: most keys have none, and a
  -- call costs ~340 instructions): until, by, level (0 once forgotten), forget_at.
  local function parse_block(block)
    local u, b, l, f = string.match(block, BLOCK_FIELDS)
    u, f = tonumber(u), tonumber(f)
    local level = 0
    if now < f then level = tonumber(l) end
    return u, tonumber(b), level, f
  end

  local function write_block(block_key, until_us, by, level, forget_at)
    local value = string.format('%d:%d:%d:%d', until_us, by, level, forget_at)
    --- @if live
    -- Read while the batch still knows which keys are missing (NO_BLOCKS).
    write_live(block_key, value, KEEP)
    --- @end
    -- A batch's later calls read their block keys again (this may be one of them).
    NO_BLOCKS = false
    --- @if live
    do return end
    --- @end
    if until_us == 0 then
      redis.call('SET', block_key, value)
    else
      redis.call('SET', block_key, value, 'PX', ttl_ms(math.max(until_us, forget_at) - now))
    end
  end

  -- Policy i of n denied a cost it could admit (retry_after >= 0), after `level` lockouts in a
  -- row: the length of its lockout in µs and its forgetAfter, or nil when it has none. The k-th
  -- lockout in a row lasts initial · multiplier^(k-1), floored at each step, capped at max.
  local function lockout_us(n, i, level)
    local spec = ARGV[#ARGV - n + i]
    if spec == '' then return nil end
    local initial, multiplier, max, forget = string.match(spec, '^(%d+):([%d.]+):(%d+):(%d+)$')
    local d, m, cap = tonumber(initial), tonumber(multiplier), tonumber(max)
    for _ = 1, level or 0 do
      if d >= cap then break end
      d = math.min(math.floor(d * m), cap)
    end
    return d, tonumber(forget)
  end

  -- Blocks the key for policy i's lockout and clears that policy's state (it starts fresh when
  -- the block ends).
  local function lock_out(block_key, i, policy_o, d, forget, level)
    local until_us = now + d
    write_block(block_key, until_us, i, (level or 0) + 1, until_us + forget)
    clear_policy(i, policy_o - 1)
    return { 2, i, d }
  end

  return parse_block, write_block, lockout_us, lock_out
end

-- The multi-policy engine's values, 13 per policy (include/engine.lua names them: ALLOWED,
-- REMAINING, RESET, RETRY, DELAY, PACKED, NEW1 … NEW4 for commit, then the policy's ARG offset,
-- CHECK_FN and COMMIT_FN): made by the first multi-policy decision of a script call (a batch's
-- decisions share it). The first ten are written by each decision before they are read; the
-- last three once per ARGV table, the one in PLANNED (a batch's calls of one shape share theirs).
local VALUES, PLANNED
-- The paths for two to four policies (include/several.lua): each policy i's check Ci, commit Mi
-- and ARGV offset Oi, planned once per ARGV table (the one in UNROLLED).
local C1, C2, C3, C4, M1, M2, M3, M4, O1, O2, O3, O4, UNROLLED
