-- Floodgate engine steps: policies' algorithms and the key's block state (lockouts and blocks
-- by hand). Included after the algorithms and before include/engine.lua, so a batch script
-- defines these once per batch, not once per decision (block_steps() makes its steps each time
-- it is called: only where a block is read or written). The block state is a string
-- '<until µs>:<by>:<level>:<forget at µs>' (include/engine.lua's header).

--- @if mixed
local CHECK, COMMIT, CLEAR, REFUND, NARGS
--- @end

-- The algorithm of the policy whose group starts at ARGV[o].
local function algorithm(o)
  if CHECK then return CHECK, COMMIT, CLEAR, REFUND, NARGS end
  local a = ALG[ARGV[o]]
  return a[1], a[2], a[3], a[4], a[5]
end

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
    local u, b, l, f = string.match(block, '^(%d+):(%d+):(%d+):(%d+)$')
    u, f = tonumber(u), tonumber(f)
    local level = 0
    if now < f then level = tonumber(l) end
    return u, tonumber(b), level, f
  end

  local function write_block(block_key, until_us, by, level, forget_at)
    -- A batch's later calls read their block keys again (this may be one of them).
    NO_BLOCKS = false
    local value = string.format('%d:%d:%d:%d', until_us, by, level, forget_at)
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
