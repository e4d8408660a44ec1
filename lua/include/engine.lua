-- Floodgate engine: the last part of every generated script.
--
-- KEYS[i]    the base key of policy i: <prefix>:{<key>}:<policy id>, for i = 1 … n
-- KEYS[n+1]  the key's block state: <prefix>:{<key>}:<limiter id>; all KEYS share one hash tag
--            (a live limiter's holds the key's live state too: include/blocks.lua)
-- ARGV       see the prelude; after the policies' groups, the last n ARGV are each policy's
--            lockout: '' (none) or '<initial µs>:<multiplier>:<max µs>:<forgetAfter µs>'
-- Block      a string '<until µs>:<by>:<level>:<forget at µs>': blocked until `until` (0: for
--            ever, the one state kept without a TTL), by policy `by` (0: by hand), after
--            `level` lockouts in a row; `level` is kept until `forget at`. TTL until
--            max(until, forget at).
-- Reply      reset, block, unblock: 1. Blocked: { 2, by, left µs (-1: for ever) }; nothing is
--            read or charged. Otherwise { admitted, then per policy: allowed, remaining,
--            reset_after_us, retry_after_us, delay_us } as integers. When the decision is
--            admitted the fields describe each key after this request; when it is denied
--            nothing was written and every policy describes its key as it stands (a policy
--            that would have admitted on its own keeps allowed = 1).
--            With one policy whose check gives a packed value, the reply is that one integer
--            instead: it holds the whole decision (the TypeScript twin's `unpack` reads it), and
--            a table reply costs Redis more than a GET (measured: docs/benchmarks.md). With
--            several policies, each whose check gives one sends it instead of its five fields,
--            and the first element says which: admitted + 4 · packed_mask (the engine's end).
--            Refund answers like a peek of cost 0 after the refund.
--
-- Every algorithm file defines, as local functions, and ends with its binding: in a script of
-- that algorithm alone (`--- @if solo`) the locals CHECK, COMMIT, CLEAR, REFUND, NARGS; in a
-- script of several, its entry ALG['<name>'] = { check, commit, clear, refund, nargs } (and
-- CHECK nil, include/blocks.lua). Nothing else is built per call.
--   check(key, o, cost) reads (never writes, unless ALONE: see the prelude) and returns, as
--   values (no table):
--     allowed (0|1), remaining, reset_after, retry_after, delay, packed, then, when allowed,
--     up to four values for commit (new1 … new4 here): the new state it writes, named in
--     commit's signature; the engine only passes them on. packed is the one-integer reply or nil.
--     ARGV[o …] are the algorithm's arguments.
--   commit(key, o, cost, reset_after, …) writes the new state with a TTL (algorithms whose
--     state is two integers use include/pair.lua's set_pair). A lone policy's check that wrote
--     already (ALONE) gives no new1, and its commit is not called.
--   clear(key, o) deletes the state (nil: DEL key).
--   refund(key, o, cost) gives back up to `cost` units; never creates a key.
--   nargs: how many ARGV the algorithm takes after its name.
--   lone(o, cost) (optional; set as LONE under `--- @if solo batch !combined`, a one-algorithm
--     batch script): a decider of one key for a shape of lone consumes, or nil (include/batch.lua).
-- The steps on blocks (include/blocks.lua) are defined before this part; those that read or
-- write a block come from block_steps(), called only on the paths that need them. Several
-- policies go on in include/several.lua: in a single-call script its body runs after this part,
-- in place of the call at the end; a batch script defines it before, and wraps this part in the
-- per-call function make_engine() returns.
--- @if batch !combined
return function()
--- @end
-- A combined script counts its policies from ARGV (include/combined-decide.lua) instead.
--- @if !combined
local n = #KEYS - 1
local block_key = KEYS[n + 1]
--- @end
local o = FIRST_ARG

if MODE == '2' or MODE == '6' then
  -- Reset deletes every policy's state and the block; refund gives back to every policy.
  for i = 1, n do
    local _, _, clear, refund, nargs = algorithm(o)
    if MODE == '2' then
      if clear then clear(KEYS[i], o + 1) else redis.call('DEL', KEYS[i]) end
    elseif COST > 0 then
      refund(KEYS[i], o + 1, COST)
    end
    o = o + 1 + nargs
  end
  if MODE == '2' then
    --- @if live
    -- The key's overrides and mark stay (include/blocks.lua's live key).
    write_live(block_key, nil, KEEP)
    --- @else
    redis.call('DEL', block_key)
    --- @end
    return 1
  end
  -- The refund answers as a read of the key as it now stands.
  MODE, COST, o = '1', 0, FIRST_ARG
elseif MODE == '4' then
  -- Block by hand for COST µs (0: for ever); a lockout level in course is kept.
  local parse_block, write_block = block_steps()
  --- @if live
  local block, level, forget_at = live_parts(live_value(block_key)), 0, 0
  --- @else
  local block, level, forget_at = redis.call('GET', block_key), 0, 0
  --- @end
  if block then
    local _
    _, _, level, forget_at = parse_block(block)
  end
  local until_us = 0
  if COST > 0 then until_us = now + COST end
  write_block(block_key, until_us, 0, level, forget_at)
  return 1
elseif MODE == '5' then
  --- @if live
  write_live(block_key, nil, KEEP)
  --- @else
  redis.call('DEL', block_key)
  --- @end
  return 1
end

-- Set (limiter.set): every policy's state is forgotten, then charged COST units as below, so
-- each holds what a fresh key holds after that charge (docs/algorithms.md#set). Blocks stay.
if MODE == '8' then
  for i = 1, n do
    local _, _, clear, _, nargs = algorithm(o)
    if clear then clear(KEYS[i], o + 1) else redis.call('DEL', KEYS[i]) end
    o = o + 1 + nargs
  end
  MODE, o = '7', FIRST_ARG
end

-- Charge (penalize, and settle's overrun): every policy takes COST units whatever it holds, so
-- the key may go into debt (each algorithm's check admits when MODE is '7', smooth ones with no
-- bound on the wait; docs/algorithms.md#debt). No block or lockout stops it: the work it pays
-- for is done. The call then answers as a peek of cost 1 of the key as it stands.
if MODE == '7' then
  ALONE, SLACK = false, 9007199254740991
  for i = 1, n do
    local check, commit, _, _, nargs = algorithm(o)
    if COST > 0 then
      local allowed, _, reset, _, _, _, new1, new2, new3, new4 = check(KEYS[i], o + 1, COST)
      if allowed == 1 and new1 ~= nil then commit(KEYS[i], o + 1, COST, reset, new1, new2, new3, new4) end
    end
    o = o + 1 + nargs
  end
  MODE, COST, SLACK, o = '1', 1, 0, FIRST_ARG
end

-- A block answers before any policy is read: nothing is charged while blocked. In a batch whose
-- block keys were all missing (NO_BLOCKS, the prelude), the key is known to be missing.
local blocked_until, blocked_by, level
--- @if live
-- A live key's block (include/blocks.lua): a batch's call whose key had no live state reads none.
local block = false
if not NO_BLOCKS or LIVE_NOW[block_key] then block = live_parts(live_value(block_key)) end
--- @else
local block = not NO_BLOCKS and redis.call('GET', block_key)
--- @end
if block then
  local parse_block = block_steps()
  blocked_until, blocked_by, level = parse_block(block)
  if blocked_until == 0 then return { 2, blocked_by, -1 } end
  if blocked_until > now then return { 2, blocked_by, blocked_until - now } end
end

-- Lease take (a quota lease, docs/algorithms.md#quota-leases): ARGV[3] is b, the most units
-- wanted; the grant g is the least room any policy has now (its remaining, 0 in debt), at most b,
-- charged to every policy as a consume of g would be. Reply { 3, g, then per policy its five
-- fields }: after the charge when g > 0; when g is 0 nothing is written and the fields are a
-- consume of cost 1 denied (a policy that would admit it describes its key as it stands). No
-- lockout: a limiter with lockouts cannot lease (rate-limiter options).
if MODE == '9' then
  local want, grant, p = ARGV[3], COST, o
  MODE, ALONE = '0', false
  for i = 1, n do
    local check, _, _, _, nargs = algorithm(p)
    local allowed, remaining = check(KEYS[i], p + 1, 0)
    if allowed == 0 then remaining = 0 end
    if remaining < grant then grant = remaining end
    p = p + 1 + nargs
  end
  -- fixedWindow's commit counts ARGV[3]: the grant, for this call only (a batch's calls of one
  -- shape share their ARGV; MODE, changed above, makes the next one read it again).
  COST = grant > 0 and grant or 1
  ARGV[3] = string.format('%d', COST)
  local reply, c = { 3, grant }, 2
  p = o
  for i = 1, n do
    local check, commit, _, _, nargs = algorithm(p)
    local allowed, remaining, reset, retry, delay, _, new1, new2, new3, new4 = check(KEYS[i], p + 1, COST)
    if grant > 0 then
      if new1 ~= nil then commit(KEYS[i], p + 1, COST, reset, new1, new2, new3, new4) end
    elseif allowed == 1 then
      allowed, remaining, reset, retry, delay = check(KEYS[i], p + 1, 0)
    end
    reply[c + 1], reply[c + 2], reply[c + 3], reply[c + 4], reply[c + 5] = allowed, remaining, reset, retry, delay
    c, p = c + 5, p + 1 + nargs
  end
  ARGV[3] = want
  return reply
end

ALONE = n == 1 and MODE ~= '1' and COST > 0
-- One policy (the common case): no bookkeeping tables, and a packed reply where there is one.
if n == 1 then
  -- A one-algorithm script has its functions at hand (no call to look them up).
  local check, commit = CHECK, COMMIT
  if not check then check, commit = algorithm(o) end
  -- new1 … new4: what check hands commit, the policy's new state (each commit names them).
  local allowed, remaining, reset, retry, delay, packed, new1, new2, new3, new4 = check(KEYS[1], o + 1, COST)
  if allowed == 1 then
    -- ALONE is MODE ~= '1' and COST > 0 here; no new1: check wrote already (fixedWindow).
    if ALONE and new1 ~= nil then commit(KEYS[1], o + 1, COST, reset, new1, new2, new3, new4) end
  elseif MODE ~= '1' and retry >= 0 then
    local _, _, lockout_us, lock_out = block_steps()
    local d, forget = lockout_us(n, 1, level)
    if d then return lock_out(block_key, 1, o + 1, d, forget, level) end
  end
  if packed then return packed end
  return { allowed, allowed, remaining, reset, retry, delay }
end

--- @if batch
return decide_several(n, o, block_key, level)
--- @end
--- @if batch !combined
-- The end of the batch's decide() and of make_engine() (opened in include/blocks.lua).
end
end
--- @end
