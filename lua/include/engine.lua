-- Floodgate engine: the last part of every generated script.
--
-- KEYS[i]  the base key of policy i: <prefix>:{<key>}:<policy id>; all KEYS share one hash tag
-- Reply    reset: 1. Otherwise { admitted, then per policy: allowed, remaining, reset_after_us,
--          retry_after_us, delay_us } as integers. When the decision is admitted the fields
--          describe each key after this request; when it is denied nothing was written and
--          every policy describes its key as it stands (a policy that would have admitted on
--          its own keeps allowed = 1).
--
--          With one policy whose algorithm has `pack`, the reply may instead be one integer that
--          holds the whole decision (the TypeScript twin's `unpack` reads it): a table reply
--          costs Redis more than the rest of a GET (measured: docs/benchmarks.md).
--
-- Every algorithm registers ALG[name] = { nargs, check, commit, clear?, pack? } where
--   check(key, o, cost) reads (never writes) and returns a table
--     { allowed (0|1), remaining, reset_after, retry_after, delay, ... }; extra fields are for
--     commit. ARGV[o …] are the algorithm's arguments.
--   commit(key, o, cost, r) writes the new state with a TTL.
--   clear(key, o) deletes the state (default: DEL key).
--   pack(r, o, cost) returns the one-policy decision r as one integer, or nil when it does not
--     fit (then the table reply is used).
local n = #KEYS
local o = FIRST_ARG

if MODE == '2' then
  for i = 1, n do
    local alg = ALG[ARGV[o]]
    if alg.clear then alg.clear(KEYS[i], o + 1) else redis.call('DEL', KEYS[i]) end
    o = o + 1 + alg.nargs
  end
  return 1
end

-- One policy (the common case): the same answer without the bookkeeping tables below, which
-- cost about a quarter of a 1-policy script's Redis CPU (measured: docs/benchmarks.md).
if n == 1 then
  local alg = ALG[ARGV[o]]
  local r = alg.check(KEYS[1], o + 1, COST)
  if r[1] == 1 and MODE ~= '1' and COST > 0 then alg.commit(KEYS[1], o + 1, COST, r) end
  if alg.pack then
    local packed = alg.pack(r, o + 1, COST)
    if packed then return packed end
  end
  return { r[1], r[1], r[2], r[3], r[4], r[5] }
end

local checks, offsets, algs = {}, {}, {}
local admitted = 1
for i = 1, n do
  local alg = ALG[ARGV[o]]
  local r = alg.check(KEYS[i], o + 1, COST)
  if r[1] == 0 then admitted = 0 end
  checks[i], offsets[i], algs[i] = r, o + 1, alg
  o = o + 1 + alg.nargs
end

local reply = { admitted }
for i = 1, n do
  local r = checks[i]
  if admitted == 1 then
    if MODE ~= '1' and COST > 0 then algs[i].commit(KEYS[i], offsets[i], COST, r) end
  elseif r[1] == 1 and COST > 0 then
    -- Another policy denied, so nothing was taken: describe this key as it stands.
    r = algs[i].check(KEYS[i], offsets[i], 0)
  end
  local b = #reply
  reply[b + 1], reply[b + 2], reply[b + 3], reply[b + 4], reply[b + 5] = r[1], r[2], r[3], r[4], r[5]
end
return reply
