-- Floodgate combined layout (DESIGN §5, one key per caller): a limiter of several policies whose
-- states are all strings keeps them in one key, read with one GET and written with one SET … PX
-- per decision instead of one of each per policy. A combined script is made from the same
-- sources: this part comes right after the prelude, and the respellings below (the assembler
-- applies them to whole Lua tokens, never inside strings or comments) have the algorithms' and
-- steps' `redis.call(` land on policy i's entry here, and the engine hand policy i the number i
-- as its key (include/combined-decide.lua and combined-end.lua wrap the engine). The entries are
-- written once the decision is made (write_state): a decision that fails in the script writes
-- nothing, where a key per policy kept the writes made before the error.
--- @respell combined engine: redis.call('DEL', KEYS[$i]) => CALL('DEL', $i)
--- @respell combined engine: KEYS[$i] => $i
--- @respell combined algorithms: redis.call( => CALL(
--- @respell combined algorithms: CALL('SET', $key, string.format('%d', $value), 'PX', => SETN($key, $value,
--- @respell combined algorithms: CALL('INCRBY', $key, ARGV[3]) => COUNT($key, cost)
--- @respell combined algorithms: tonumber(CALL('GET', $key)) => GETN($key)
--- @respell combined algorithms: ttl_ms( => ttl_number(
--
-- KEYS[1]  the caller's state: per policy in order, its entry packed with Redis's struct
--          library as '<dds' (little-endian): expiry (ms), a number, a zero-terminated string.
--          The entry holds what the policy's own key would hold: an integer state (a fixedWindow
--          count, a gcra TAT) as the number with an empty string, any other as the string (the
--          number 0), and when that key would expire: the script's clock in whole ms plus the
--          TTL its algorithm set, as Redis dates a key's expiry (0: the policy has no state).
--          Numbers, not text: a tonumber() of a long string or a string.format() costs Redis
--          about as much as a GET (docs/benchmarks.md), and this way a decision reads and writes
--          every policy's state with one struct call each way. PX: until the latest expiry, so
--          the key lives as long as its longest-lived state needs and no longer (to the ms); with
--          no state left it is deleted.
-- KEYS[2]  the block state, as in include/engine.lua.
--
-- An entry past its expiry reads as missing, as the key would (Redis keeps a key through the
-- millisecond of its expiry), and is dropped at the next write. An algorithm's SET of a `%d`
-- integer becomes `SETN(key, x, ms)` (respelled above): the integer is kept as a number, and GET
-- answers it as one, which the algorithms read with tonumber() as they read a key's string
-- (`tonumber(GET)` becomes GETN). SET takes a string.

-- ENTRIES: the entries as struct.unpack gives them, three values per policy (expiry, number,
-- string), read on the first step of a decision that needs them; NOW_MS: the clock in whole ms then; WRITTEN: a
-- CALL changed one; POLICIES, FORMAT: the limiter's number of policies and its struct format
-- (set by the engine, for the ARGV table in COUNTED).
local ENTRIES, NOW_MS, READ, WRITTEN, POLICIES, FORMAT, COUNTED

-- The prelude's ttl_ms as a number: an entry's expiry is a number (the respellings above have
-- the algorithms call this one, and count with the cost as a number where they pass ARGV[3]).
local function ttl_number(us)
  return (us + (-us) % 1000) / 1000 + TTL_PAD
end

-- Reads the key's entries, once per decision (on its first step that needs them).
local function read_state()
  READ, NOW_MS = true, (now - now % 1000) / 1000
  local stored = redis.call('GET', KEYS[1])
  if stored then
    ENTRIES = { struct.unpack(FORMAT, stored) }
  else
    ENTRIES = {}
    for j = 1, POLICIES * 3, 3 do ENTRIES[j], ENTRIES[j + 1], ENTRIES[j + 2] = 0, 0, '' end
  end
end

-- The commands the algorithms give the decision's hot path, each a function of its own (the
-- respellings above; CALL below takes the rest): GETN for `tonumber(GET)`, policy i's
-- state as a number or nil; SETN for `SET <integer> PX`; COUNT for INCRBY and DECRBY by the
-- cost. A step of CALL's command chain and a tonumber() each cost Redis about what a Lua table
-- store does (callgrind: docs/benchmarks.md "Three policies").
local function GETN(i)
  if not READ then read_state() end
  local b = i * 3 - 2
  local e = ENTRIES[b]
  -- Expiry 0: no state (the clock's first millisecond would otherwise read it as present).
  if e < NOW_MS or e == 0 then return nil end
  local text = ENTRIES[b + 2]
  if text == '' then return ENTRIES[b + 1] end
  return tonumber(text)
end

local function SETN(i, value, ms)
  if not READ then read_state() end
  WRITTEN = true
  local b = i * 3 - 2
  ENTRIES[b], ENTRIES[b + 1], ENTRIES[b + 2] = NOW_MS + ms, value, ''
end

-- A count this decision read, changed by `by` (its expiry stays, as a key's TTL would).
local function COUNT(i, by)
  if not READ then read_state() end
  WRITTEN = true
  local b = i * 3 - 2
  local text = ENTRIES[b + 2]
  if text ~= '' then by = by + tonumber(text) else by = by + ENTRIES[b + 1] end
  ENTRIES[b + 1], ENTRIES[b + 2] = by, ''
  return by
end

local function CALL(command, i, value, _, ms)
  if not READ then read_state() end
  local b = i * 3 - 2
  if command == 'GET' then
    if ENTRIES[b] < NOW_MS or ENTRIES[b] == 0 then return false end
    if ENTRIES[b + 2] == '' then return ENTRIES[b + 1] end
    return ENTRIES[b + 2]
  end
  if command == 'INCRBY' then return COUNT(i, tonumber(value)) end
  if command == 'DECRBY' then return COUNT(i, -tonumber(value)) end
  WRITTEN = true
  if command == 'SET' then
    ENTRIES[b], ENTRIES[b + 1], ENTRIES[b + 2] = NOW_MS + ms, 0, value
  elseif command == 'DEL' then
    ENTRIES[b], ENTRIES[b + 1], ENTRIES[b + 2] = 0, 0, ''
  else
    error('combined layout: no ' .. command)
  end
end

-- Writes the entries back when a CALL changed one: one SET … PX, or DEL with none left.
local function write_state()
  if not WRITTEN then return end
  local latest = 0
  for b = 1, POLICIES * 3, 3 do
    local e = ENTRIES[b]
    if e < NOW_MS then
      ENTRIES[b], ENTRIES[b + 1], ENTRIES[b + 2] = 0, 0, ''
    elseif e > latest then
      latest = e
    end
  end
  if latest > 0 then
    local packed = struct.pack(FORMAT, unpack(ENTRIES, 1, POLICIES * 3))
    if latest == NOW_MS then latest = NOW_MS + 1 end
    redis.call('SET', KEYS[1], packed, 'PX', string.format('%d', latest - NOW_MS))
  else
    redis.call('DEL', KEYS[1])
  end
end
