-- Floodgate batch: the last part of every generated batch script, which decides several calls
-- in one EVALSHA, in order, exactly as the single script would decide them one after another
-- (redisStore's batching; docs/benchmarks.md). A batch script is
--   `local KEYS, ARGV` + prelude + the algorithms + the block steps
--   + `local function make_engine()` the engine's state and steps, `return function()` the
--     engine's per-call part `end end` + this
-- (each piece under `--- @if batch` in its file), so the algorithms and the engine read the KEYS
-- and ARGV of the call being decided, which this loop points at each call in turn. Everything
-- that depends only on a call's ARGV is worked out once per shape, not once per call: NUMS, each
-- ARGV as a number (the prelude respells the algorithms' tonumber(ARGV[i]) as NUMS[i] in a batch
-- script), the prelude's read_call(), run again only when the shape changes (or a
-- refund, which goes on as a read, changed MODE), and a lone consume's decider (below).
--
-- BATCH_ARGV[1]  S, the number of distinct call shapes in the batch
-- then S shapes  nkeys, nargs, and the nargs ARGV of a single call (its ARGV[2] '' = Redis TIME:
--                read once for the whole batch)
-- then one entry per call: the number of its shape ('1' … S); none when S is 1 (every call
--                is of that shape, and #BATCH_KEYS / nkeys calls are made: an ARGV element costs
--                Redis ~1 000 instructions to make, docs/benchmarks.md)
-- BATCH_KEYS     every call's nkeys keys, in call order (one cluster slot; a per-node batch's,
--                several slots of one node, come from ARGV: include/prelude.lua's node part)
-- Reply          the calls' replies, in order, each one element: what the single script replies
--                for it, or its error message as a string (a call that fails never fails its
--                neighbours; its writes before the error stay, as they would after a single
--                script's error). Except a decision of several policies that the engine answers
--                at its end (not a block): its reply table's elements come inline, the first a
--                number (admitted + 4 · packed_mask) from which the reader knows how many follow
--                (stores/redis-batch.ts). The engine writes them into OUT itself (a table per
--                decision, and Redis nesting it, cost more than the rest of the reply:
--                docs/benchmarks.md "Three policies"), from OUTN + 1, and answers OUT. A call
--                a per-node batch did not run (its slot moved) answers 'FLOODGATE-REDIRECT <why>',
--                and Node sends it again alone.
-- Numbers from the strings that hold one: `s + 0` converts once where tonumber(s) converts twice
-- (~850 instructions a string in Redis's Lua, strtod twice: callgrind). Tables are made at their
-- size in one step (one that grows is reallocated at 1, 2, 4, 8 … entries).
--- @if live
-- A live limiter's batch (RateLimiter option `liveLimits`): the calls whose keys have no live
-- state are decided exactly as a batch without live limits decides them, the others through
-- include/live.lua's decide_live() (below). Each call's live state (its block, overrides and mark
-- of the override for every key) is in its block key (include/blocks.lua); each shape's last two
-- ARGV are the live script's (a change, never batched: '', and the override for every key the
-- process holds), taken off the shape here.
local ANY_GLOBAL = false
--- @end
local shapes, p, batch_now, one = {}, 2, nil, nil
local S = BATCH_ARGV[1] + 0
for s = 1, S do
  local nkeys, nargs = BATCH_ARGV[p] + 0, BATCH_ARGV[p + 1] + 0
  local args = { unpack(BATCH_ARGV, p + 2, p + 1 + nargs) }
  if args[2] == '' then
    if not batch_now then
      local t = redis.call('TIME')
      batch_now = t[1] * 1000000 + t[2]
    end
    args[2] = batch_now
  end
  --- @if live
  local global, size = args[nargs], nargs
  args[nargs], args[nargs - 1], nargs = nil, nil, nargs - 2
  if global ~= '' then ANY_GLOBAL = true end
  --- @end
  local nums = { unpack(args) }
  for i = 1, nargs do
    local a = args[i]
    if a == '' then nums[i] = nil else nums[i] = tonumber(a) end
  end
  -- [3]: the call's KEYS table, made by the first call of this shape that goes through the engine
  -- and reused by the others (all have nkeys keys).
  local shape = { nkeys, args, false, nums }
  --- @if live
  -- [5], [6]: the override for every key the calls carry, and the number of the shape's ARGV.
  shape[5], shape[6], nargs = global, nargs, size
  --- @end
  if S == 1 then one = shape else shapes[string.format('%d', s)] = shape end
  p = p + 2 + nargs
end

-- The calls: the entries after the shapes, or with one shape as many as its keys make.
local count = #BATCH_ARGV - p + 1
if one then count = #BATCH_KEYS / one[1] end

-- Each call's block key is its last key. One EXISTS of them all (~400 instructions a key) tells
-- whether any call of the batch is blocked, which most batches are not; then no decision GETs
-- its block key (~2 900 instructions each, callgrind: docs/benchmarks.md) until one writes a
-- block (NO_BLOCKS, the prelude). A block key that exists, of whatever type, is read as before.
local block_keys, k = { unpack(BATCH_KEYS, 1, count) }, 0
if one then
  -- One shape: every nkeys-th key (~300 instructions a decision less than the loop below).
  local nkeys = one[1]
  for e = 1, count do block_keys[e] = BATCH_KEYS[nkeys * e] end
else
  for e = 1, count do
    k = k + shapes[BATCH_ARGV[p + e - 1]][1]
    block_keys[e] = BATCH_KEYS[k]
  end
end
-- A per-node batch (SLOT_GROUPS, set by the prelude's node part; redisStore `batch: 'node'`) spans
-- slots: a command may touch keys of one slot only, and a slot may have moved, or be migrating,
-- since Node routed the batch. Each slot group's keys go through one EXISTS first (redis.pcall,
-- before any of its calls runs): Redis answers it as it would the single script's declared keys,
-- an error when the slot is not this node's or some key is missing from a migrating slot. Those
-- calls are not run: their reply is REDIRECT and the error, and Node re-sends each alone through
-- the cluster client, which follows MOVED/ASK/TRYAGAIN. A script is atomic, so a group that
-- passed stays this node's until the script ends.
local REDIRECT, redirected, redirecting = 'FLOODGATE-REDIRECT ', {}, false
if SLOT_GROUPS then
  NO_BLOCKS = true
  local first, kk = 1, 0
  for g = 1, #SLOT_GROUPS do
    local last, k0 = first + SLOT_GROUPS[g] - 1, kk + 1
    for c = first, last do
      kk = kk + (one or shapes[BATCH_ARGV[p + c - 1]])[1]
    end
    local found = redis.pcall('EXISTS', unpack(BATCH_KEYS, k0, kk))
    if type(found) == 'table' then
      for c = first, last do redirected[c] = REDIRECT .. tostring(found.err) end
      redirecting = true
    elseif found > 0 and NO_BLOCKS and redis.call('EXISTS', unpack(block_keys, first, last)) > 0 then
      NO_BLOCKS = false
    end
    first = last + 1
  end
else
  NO_BLOCKS = redis.call('EXISTS', unpack(block_keys)) == 0
end
--- @if live
-- The calls decided through decide_live() (their `redirected` entry is true): every call when a
-- shape carries an override for every key (a call may carry a key's states to it, and a later
-- call on the same key must see that), else the calls whose block key exists, which the EXISTS
-- above told (most batches have none). Then one MGET says which (LIVE_NOW, include/blocks.lua:
-- false for none; kept current as calls write them), and the engine reads no block key. A
-- per-node batch asks per slot group (a command's keys must share a slot), for the groups it
-- runs. Nothing in a batch without an override for every key gives a key overrides or a mark;
-- a block written is seen by the key's later calls (write_block: NO_BLOCKS, LIVE_NOW).
local function live_calls(first, last, some)
  local keys = block_keys
  if first > 1 or last < count then keys = { unpack(block_keys, first, last) } end
  if ANY_GLOBAL or some or (some == nil and redis.call('EXISTS', unpack(keys)) > 0) then
    local found = redis.call('MGET', unpack(keys))
    for c = first, last do
      local j = c - first + 1
      local value = found[j]
      if ANY_GLOBAL or value then
        redirected[c], redirecting = true, true
        LIVE_NOW[keys[j]] = value
      end
    end
  end
end
if SLOT_GROUPS then
  local first = 1
  for g = 1, #SLOT_GROUPS do
    local last = first + SLOT_GROUPS[g] - 1
    if not redirected[first] then live_calls(first, last) end
    first = last + 1
  end
elseif count > 0 then
  live_calls(1, count, not NO_BLOCKS)
end
NO_BLOCKS = true

-- A live call: its shape's ARGV get its two ARGV back, for decide_live() to take off. It changes the shape's ARGV and NUMS in
-- place (a copy per call cost Redis more), noting where in TOUCHED; `restore` puts those ranges
-- back from the shape's pristine copies ([7], [8], made by its first live call).
local function run_live(shape)
  local nargs, args = shape[6], shape[2]
  if not shape[7] then shape[7], shape[8] = { unpack(args, 1, nargs) }, { unpack(shape[4], 1, nargs) } end
  args[nargs + 1], args[nargs + 2] = '', shape[5]
  return decide_live()
end
local function restore(shape)
  local args, nums, args0, nums0, nargs = shape[2], shape[4], shape[7], shape[8], shape[6]
  for t = 1, #TOUCHED, 2 do
    for j = TOUCHED[t], TOUCHED[t + 1] do args[j], nums[j] = args0[j], nums0[j] end
    TOUCHED[t], TOUCHED[t + 1] = nil, nil
  end
  -- A call that failed before decide_live() took its ARGV off.
  args[nargs + 1], args[nargs + 2] = nil, nil
  ARGV[3] = args0[3]
  NUMS[3] = nums0[3]
end
--- @end

-- A lone consume: a shape of one policy, consuming (mode 0, cost > 0), with no lockout. While no
-- block key of the batch exists (NO_BLOCKS) such a decision is what the engine's one-policy path
-- makes of it (include/engine.lua: no block to read, ALONE, check then commit, nothing to lock
-- out), so it runs that path directly on its key: no KEYS table, no mode dispatch, nothing the
-- shape settles decided again per call (docs/benchmarks.md "Lone consumes"). An algorithm may
-- set a decider maker (LONE, under `--- @if solo batch !combined`: fixedWindow's), run once per shape,
-- with what the shape and the clock settle worked out; otherwise the decider is its check then
-- its commit. Either gives check's values (allowed, remaining, reset, retry, delay, packed). The
-- combined layout's shapes have several policies and never take it. A lone consume writes no
-- block, so NO_BLOCKS holds for the rest of a run of them.
local LONE_CHECK, LONE_COMMIT, LONE_O
local function decide_lone(key)
  local allowed, remaining, reset, retry, delay, packed, new1, new2, new3, new4 = LONE_CHECK(key, LONE_O, COST)
  if allowed == 1 and new1 ~= nil then LONE_COMMIT(key, LONE_O, COST, reset, new1, new2, new3, new4) end
  return allowed, remaining, reset, retry, delay, packed
end
-- The decider for the calls of the current shape, or nil when they are not lone consumes.
local function lone_shape(nkeys)
  if nkeys ~= 2 or MODE ~= '0' or COST <= 0 or ARGV[#ARGV] ~= '' then return nil end
  -- A mixed script's algorithm by name (an unknown one is left to the engine's own error).
  if not CHECK and not ALG[ARGV[FIRST_ARG]] then return nil end
  local check, commit, _, _, nargs = algorithm(FIRST_ARG)
  -- One policy: its group and its lockout are the last ARGV.
  if FIRST_ARG + nargs + 1 ~= #ARGV then return nil end
  -- As the engine sets it for a one-policy consume (check may read it).
  ALONE = true
  -- LONE: the algorithm's decider maker in a one-algorithm batch script, else nil.
  local decider = LONE and LONE(FIRST_ARG + 1, COST)
  if decider then return decider end
  LONE_CHECK, LONE_COMMIT, LONE_O = check, commit, FIRST_ARG + 1
  return decide_lone
end

-- replies (and block_keys) start as copies of keys, made at their size in one step (a table
-- that grows is reallocated at 1, 2, 4 … entries); every element is replaced.
local replies, current, lone = { unpack(BATCH_KEYS, 1, count) }, nil, nil
OUT, OUTN = replies, 0
k = 0

-- A run of lone calls, from call `first` (its keys after BATCH_KEYS[kk]) to RUN_LAST, decided by
-- RUN_LONE in one pcall rather than one each (a pcall costs ~700 instructions a decision,
-- callgrind): OUTN counts the calls decided, so when one fails the loop below knows which, gives
-- it its error as its reply and runs the rest again from the call after it. Its neighbours'
-- answers are exactly those of a pcall per call.
local RUN_LONE, RUN_LAST
local function decide_run(first, kk)
  local decider, keys, out, n = RUN_LONE, BATCH_KEYS, replies, OUTN
  for _ = first, RUN_LAST do
    kk = kk + 2
    local allowed, remaining, reset, retry, delay, packed = decider(keys[kk - 1])
    if not packed then packed = { allowed, allowed, remaining, reset, retry, delay } end
    n = n + 1
    out[n] = packed
    OUTN = n
  end
end

local e = 1
while e <= count do
  local shape = one or shapes[BATCH_ARGV[p + e - 1]]
  local skip = redirected[e]
  --- @if live
  local live = skip == true
  if live then skip = nil end
  --- @end
  if not skip and (shape ~= current or MODE ~= shape[2][1]) then
    ARGV, NUMS = shape[2], shape[4]
    read_call()
    current, lone = shape, lone_shape(shape[1])
  end
  if skip then
    -- Not run here (a per-node batch's slot check, above).
    k, e, OUTN = k + shape[1], e + 1, OUTN + 1
    replies[OUTN] = skip
  --- @if live
  elseif lone and NO_BLOCKS and not live then
  --- @else
  elseif lone and NO_BLOCKS then
  --- @end
    -- This call and the ones after it of the same shape, one after another.
    local last = count
    if not one then
      last = e
      local id = BATCH_ARGV[p + e - 1]
      while last < count and BATCH_ARGV[p + last] == id do last = last + 1 end
    end
    if redirecting then
      for c = e + 1, last do
        if redirected[c] then
          last = c - 1
          break
        end
      end
    end
    RUN_LONE, RUN_LAST = lone, last
    while e <= last do
      local before = OUTN
      local ok, err = pcall(decide_run, e, k)
      local done = OUTN - before
      if ok then
        k, e = k + 2 * done, last + 1
      else
        -- Call e + done failed (its writes before the error stay, as a single script's would).
        k, e = k + 2 * (done + 1), e + done + 1
        OUTN = OUTN + 1
        replies[OUTN] = type(err) == 'table' and (err.err or err.msg) or tostring(err)
      end
    end
  else
    local keys = shape[3]
    if not keys then
      keys = {}
      shape[3] = keys
    end
    for i = 1, shape[1] do keys[i] = BATCH_KEYS[k + i] end
    k = k + shape[1]
    KEYS = keys
    local before = OUTN
    -- The engine is made by the first call of the batch that needs it (include/blocks.lua).
    if not decide then decide = make_engine() end
    --- @if live
    local ok, reply
    if live then
      ok, reply = pcall(run_live, shape)
      restore(shape)
    else
      ok, reply = pcall(decide)
    end
    --- @else
    local ok, reply = pcall(decide)
    --- @end
    if not ok then
      -- A failure after the engine wrote its reply (the combined layout writes the state last):
      -- the call answers its error alone.
      for j = before + 1, OUTN do replies[j] = nil end
      OUTN = before
      reply = type(reply) == 'table' and (reply.err or reply.msg) or tostring(reply)
    elseif reply == nil then
      reply = false
    end
    if reply ~= replies then
      OUTN = OUTN + 1
      replies[OUTN] = reply
    end
    e = e + 1
  end
end
return replies
