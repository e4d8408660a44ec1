-- Floodgate script prelude: included first in every generated script.
--
-- A batch script (include/batch.lua says how it runs) reads the KEYS and ARGV of the call being
-- decided through these locals, which include/batch.lua points at each call's own; redis.pcall
-- and tonumber are upvalues (cheaper than globals, read on every decision). Its algorithms read
-- their numbers from NUMS, parsed once per shape of calls, where a single script parses each on
-- every call (a tonumber() costs Redis about as much as a GET): the two spellings below.
--- @if batch
--- @respell batch algorithms: tonumber(ARGV[ => (NUMS[
--- @respell batch algorithms: redis.pcall( => redis_pcall(
--- @if batch !node
local BATCH_KEYS, BATCH_ARGV, SLOT_GROUPS = KEYS, ARGV, nil
--- @else
-- A per-node batch (the store's `batch: 'node'` on a cluster): its calls span several slots of
-- one master, and Redis refuses a command whose declared keys span slots, so KEYS holds one key
-- (the node's route) and ARGV carries the rest: the number of slot groups G and of keys N, each
-- group's number of calls (calls come sorted by slot), the N keys, then a batch script's ARGV.
-- include/batch.lua checks each group's keys are this node's (SLOT_GROUPS).
local BATCH_KEYS, BATCH_ARGV, SLOT_GROUPS
do
  local g, n = ARGV[1] + 0, ARGV[2] + 0
  SLOT_GROUPS = { unpack(ARGV, 3, 2 + g) }
  BATCH_KEYS, BATCH_ARGV = { unpack(ARGV, 3 + g, 2 + g + n) }, { unpack(ARGV, 3 + g + n) }
end
--- @end
local KEYS, ARGV, NUMS, OUT, OUTN, LONE
local tonumber, redis_pcall = tonumber, redis.pcall
--- @end
--
-- ARGV[1]  mode: 0 consume, 1 peek (decide, write nothing), 2 reset (delete the keys),
--          3 reserve (consume, but smooth policies admit when their next-free time is at most
--          ARGV[5] µs away and report that wait as delay: Guava tryAcquire(timeout)),
--          4 block (for ARGV[3] µs, 0: for ever), 5 unblock, 6 refund (give back ARGV[3] units),
--          7 charge (take ARGV[3] units from every policy even past its limit: debt),
--          8 set (forget every policy's state, then charge ARGV[3] units as mode 7 does)
--          9 lease take (up to ARGV[3] units at once: include/engine.lua)
-- ARGV[2]  now in integer microseconds, or '' to read Redis TIME (one clock for every app server)
-- ARGV[3]  cost: a non-negative integer (0 is a read); block: the block's length in µs
-- ARGV[4]  milliseconds added to every TTL (0 with Redis TIME; > 0 only with an injected clock,
--          whose timeline Redis's own expiry does not follow)
-- ARGV[5…] one group per policy: the algorithm's name, then that algorithm's own arguments
--          (from ARGV[6] in reserve mode, after the longest wait)
--
-- All arithmetic is on integers below 2^53, where Lua's doubles are exact; numbers are never
-- concatenated into strings (Lua formats them with %.14g and would drop digits), only
-- formatted with %d (redis.call would write them exactly too, at a cost: see ttl_ms).
--
-- Every tonumber() costs Redis about as much as a GET (measured with callgrind: see
-- docs/benchmarks.md), so the common values are compared as strings: MODE stays a string, and
-- cost '1' and TTL pad '0' are not parsed.
-- The call's values, set by read_call(): once per script call, and in a batch script
-- (include/batch.lua) once per shape of calls (calls of one shape share their ARGV). A single-call script
-- runs its body in place, in `do … end` (a function is a closure made on every call).
local MODE, now, COST, TTL_PAD, SLACK, FIRST_ARG
-- Set by the engine for each decision: true when the limiter has one policy and the call
-- consumes (cost > 0, not a peek), so nothing but that policy can deny and its check may write
-- as it decides (fixedWindow's INCRBY first).
local ALONE
-- Set by a batch script (include/batch.lua) when none of its calls' block keys exists: their
-- GETs are skipped until a decision writes a block (include/blocks.lua's write_block). nil in a
-- single script, which reads its block key.
local NO_BLOCKS
--- @if batch
local function read_call()
--- @else
do -- read_call()
--- @end
  MODE = ARGV[1]
  -- A batch puts its one TIME here as a number, which tonumber() returns as it is.
  now = tonumber(ARGV[2])
  if not now then
    local t = redis.call('TIME')
    -- TIME's two strings in arithmetic: Lua parses each once (strtod); tonumber() parses twice
    -- (lua_isnumber, then lua_tonumber) behind a call: ~1 300 instructions more each (callgrind).
    now = t[1] * 1000000 + t[2]
  end
  COST = 1
  if ARGV[3] ~= '1' then COST = tonumber(ARGV[3]) end
  TTL_PAD = 0
  if ARGV[4] ~= '0' then TTL_PAD = tonumber(ARGV[4]) end
  -- The longest wait a reservation may be admitted with (µs); the first policy argument.
  SLACK, FIRST_ARG = 0, 5
  if MODE == '3' then SLACK, FIRST_ARG = tonumber(ARGV[5]), 6 end
end
-- Waits beyond exact arithmetic are charged as 1000 days (Guava saturates at Long.MAX_VALUE).
local SATURATED_WAIT_US = 86400000000000

-- A TTL in whole milliseconds, never shorter than the state needs, as the string PX and PEXPIRE
-- take: Redis 7.0 turns a Lua number argument into a string with snprintf('%.17g'), ~2 250
-- instructions, where string.format('%d') costs a fraction of that (callgrind:
-- docs/benchmarks.md). Every redis.call argument on a decision's path is a string for that reason.
-- (us + (-us) % 1000) / 1000 is ceil(us / 1000), exact for integers (Lua's % is floored), without
-- math.ceil's call (~300 instructions a call, callgrind): this file and the algorithms write
-- floor(a / b) as (a - a % b) / b for the same reason.
local function ttl_ms(us)
  return string.format('%d', (us + (-us) % 1000) / 1000 + TTL_PAD)
end

-- A script of several algorithms finds each in ALG by its name (each algorithm file adds its
-- entry; include/blocks.lua declares the engine's CHECK … of a one-algorithm script as nil).
--- @if mixed
local ALG = {}
--- @end
