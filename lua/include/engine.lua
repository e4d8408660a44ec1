-- Floodgate engine: the last part of every generated script.
--
-- KEYS[i]  the base key of policy i: <prefix>:{<key>}:<policy id>; all KEYS share one hash tag
-- Reply    reset: 1. Otherwise { admitted, then per policy: allowed, remaining, reset_after_us,
--          retry_after_us, delay_us } as integers. When the decision is admitted the fields
--          describe each key after this request; when it is denied nothing was written and
--          every policy describes its key as it stands (a policy that would have admitted on
--          its own keeps allowed = 1).
--          With one policy whose check gives a packed value, the reply is that one integer
--          instead: it holds the whole decision (the TypeScript twin's `unpack` reads it), and a
--          table reply costs Redis more than a GET (measured: docs/benchmarks.md).
--
-- Every algorithm file defines, as local functions, and ends with
-- register(name, check, commit, clear, nargs), a line scripts/generate-lua.mjs replaces: a
-- script of one algorithm gets locals CHECK, COMMIT, CLEAR, NARGS; a mixed script a table ALG
-- of name -> { check, commit, clear, nargs } (and CHECK nil). Nothing else is built per call.
--   check(key, o, cost) reads (never writes) and returns, as values (no table):
--     allowed (0|1), remaining, reset_after, retry_after, delay, packed, e1, e2, e3, e4
--     where packed is the one-integer reply or nil, and e1… are for commit.
--     ARGV[o …] are the algorithm's arguments.
--   commit(key, o, cost, reset_after, e1, e2, e3, e4) writes the new state with a TTL.
--   clear(key, o) deletes the state (nil: DEL key).
--   nargs: how many ARGV the algorithm takes after its name.
local n = #KEYS
local o = FIRST_ARG

if MODE == '2' then
  for i = 1, n do
    local clear, nargs = CLEAR, NARGS
    if not CHECK then
      local a = ALG[ARGV[o]]
      clear, nargs = a[3], a[4]
    end
    if clear then clear(KEYS[i], o + 1) else redis.call('DEL', KEYS[i]) end
    o = o + 1 + nargs
  end
  return 1
end

-- One policy (the common case): no bookkeeping tables, and a packed reply where there is one.
if n == 1 then
  local check, commit = CHECK, COMMIT
  if not check then
    local a = ALG[ARGV[o]]
    check, commit = a[1], a[2]
  end
  local allowed, remaining, reset, retry, delay, packed, e1, e2, e3, e4 = check(KEYS[1], o + 1, COST)
  if allowed == 1 and MODE ~= '1' and COST > 0 then commit(KEYS[1], o + 1, COST, reset, e1, e2, e3, e4) end
  if packed then return packed end
  return { allowed, allowed, remaining, reset, retry, delay }
end

local checks, offsets, commits = {}, {}, {}
local admitted = 1
local checkers = {}
for i = 1, n do
  local check, commit, nargs = CHECK, COMMIT, NARGS
  if not check then
    local a = ALG[ARGV[o]]
    check, commit, nargs = a[1], a[2], a[4]
  end
  local r = { check(KEYS[i], o + 1, COST) }
  if r[1] == 0 then admitted = 0 end
  checks[i], offsets[i], commits[i], checkers[i] = r, o + 1, commit, check
  o = o + 1 + nargs
end

local reply = { admitted }
for i = 1, n do
  local r = checks[i]
  if admitted == 1 then
    if MODE ~= '1' and COST > 0 then commits[i](KEYS[i], offsets[i], COST, r[3], r[7], r[8], r[9], r[10]) end
  elseif r[1] == 1 and COST > 0 then
    -- Another policy denied, so nothing was taken: describe this key as it stands.
    r = { checkers[i](KEYS[i], offsets[i], 0) }
  end
  local b = #reply
  reply[b + 1], reply[b + 2], reply[b + 3], reply[b + 4], reply[b + 5] = r[1], r[2], r[3], r[4], r[5]
end
return reply
