-- Floodgate engine, several policies: decide_several(), which include/engine.lua calls for a
-- limiter of two or more. A single-call script runs its body in place, after include/engine.lua
-- (a closure and the upvalue objects of its locals would cost every call ~9 000 instructions);
-- a batch script defines it once, before the per-call part, and its decisions reply into the
-- batch's own table, OUT from OUTN + 1 on (a table per decision, and Redis turning each into a
-- nested reply, cost a 3-policy decision ~5 700 of its ~83 000 instructions: docs/benchmarks.md).
--
-- Several policies, a function of its own: the per-call part below is a batch script's per-call
-- function, and Lua clears a function's whole frame on every call, so the locals of these paths
-- (ten per policy where they are written out) would cost every one-policy decision too (~270
-- instructions a decision for two and three policies: callgrind, docs/benchmarks.md).
--- @if batch
local function decide_several(n, o, block_key, level)
--- @end
  -- Several policies: each check's values go into V (VALUES, include/blocks.lua; a local is
  -- cheaper to index than an upvalue), no table per policy, made at its size for up to four policies (a Lua table that grows is reallocated at 1, 2, 4,
  -- 8 … entries; a run of nils is one instruction to make): docs/benchmarks.md.
  local V = VALUES or { nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil,
    nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil,
    nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil,
    nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil }
  VALUES = V
  local admitted
  -- Policy i's values in V start after b = STRIDE · (i - 1): the ten its check gave (ALLOWED …
  -- PACKED, then NEW1 … NEW4, the state it hands commit), then its ARGV offset (ARG), its
  -- CHECK_FN and its COMMIT_FN (the written-out paths above store them in this order). Lua 5.1
  -- has no constants, and a local costs an instruction and a register on every call: the
  -- generator writes each name's number in place (`V[b + ARG]` runs as `V[b + 11]`), and Lua
  -- folds the sums of numbers the written-out paths below write (`V[STRIDE + ARG]`).
  --- @offsets STRIDE 13, ALLOWED 1, REMAINING 2, RESET 3, RETRY 4, DELAY 5, PACKED 6, NEW1 7, NEW2 8, NEW3 9, NEW4 10, ARG 11, CHECK_FN 12, COMMIT_FN 13
  -- Two to four policies, written out per count, with each check's values in locals. When every
  -- policy admits it commits and replies; when one denies it leaves V and PLANNED as the loop
  -- below would have, and admitted = 0.
  if n == 2 then
    if UNROLLED ~= ARGV then
      local p, _, nargs = o, nil, nil
      C1, M1, _, _, nargs = algorithm(p)
      O1, p = p + 1, p + 1 + nargs
      C2, M2, _, _, nargs = algorithm(p)
      O2, p = p + 1, p + 1 + nargs
      UNROLLED = ARGV
    end
    local a1, r1, s1, t1, d1, p1, x1, y1, z1, w1 = C1(KEYS[1], O1, COST)
    local a2, r2, s2, t2, d2, p2, x2, y2, z2, w2 = C2(KEYS[2], O2, COST)
    if a1 == 1 and a2 == 1 then
      if MODE ~= '1' and COST > 0 then
        M1(KEYS[1], O1, COST, s1, x1, y1, z1, w1)
        M2(KEYS[2], O2, COST, s2, x2, y2, z2, w2)
      end
      --- @if batch
      local reply, h = OUT, OUTN + 1
      --- @else
      local reply, h = { 1, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil }, 1
      --- @end
      local c, head = h, 1
      if p1 then
        reply[c + 1], c, head = p1, c + 1, head + 4
      else
        reply[c + 1], reply[c + 2], reply[c + 3], reply[c + 4], reply[c + 5] = 1, r1, s1, t1, d1
        c = c + 5
      end
      if p2 then
        reply[c + 1], c, head = p2, c + 1, head + 8
      else
        reply[c + 1], reply[c + 2], reply[c + 3], reply[c + 4], reply[c + 5] = 1, r2, s2, t2, d2
        c = c + 5
      end
      reply[h] = head
      --- @if batch
      OUTN = c
      return OUT
      --- @else
      return reply
      --- @end
    end
    V[ALLOWED], V[REMAINING], V[RESET], V[RETRY], V[DELAY], V[PACKED], V[NEW1], V[NEW2], V[NEW3], V[NEW4], V[ARG], V[CHECK_FN], V[COMMIT_FN] =
      a1, r1, s1, t1, d1, p1, x1, y1, z1, w1, O1, C1, M1
    V[STRIDE + ALLOWED], V[STRIDE + REMAINING], V[STRIDE + RESET], V[STRIDE + RETRY], V[STRIDE + DELAY], V[STRIDE + PACKED], V[STRIDE + NEW1], V[STRIDE + NEW2], V[STRIDE + NEW3], V[STRIDE + NEW4], V[STRIDE + ARG], V[STRIDE + CHECK_FN], V[STRIDE + COMMIT_FN] =
      a2, r2, s2, t2, d2, p2, x2, y2, z2, w2, O2, C2, M2
    PLANNED, admitted = ARGV, 0
  end
  if n == 3 then
    if UNROLLED ~= ARGV then
      local p, _, nargs = o, nil, nil
      C1, M1, _, _, nargs = algorithm(p)
      O1, p = p + 1, p + 1 + nargs
      C2, M2, _, _, nargs = algorithm(p)
      O2, p = p + 1, p + 1 + nargs
      C3, M3, _, _, nargs = algorithm(p)
      O3, p = p + 1, p + 1 + nargs
      UNROLLED = ARGV
    end
    local a1, r1, s1, t1, d1, p1, x1, y1, z1, w1 = C1(KEYS[1], O1, COST)
    local a2, r2, s2, t2, d2, p2, x2, y2, z2, w2 = C2(KEYS[2], O2, COST)
    local a3, r3, s3, t3, d3, p3, x3, y3, z3, w3 = C3(KEYS[3], O3, COST)
    if a1 == 1 and a2 == 1 and a3 == 1 then
      if MODE ~= '1' and COST > 0 then
        M1(KEYS[1], O1, COST, s1, x1, y1, z1, w1)
        M2(KEYS[2], O2, COST, s2, x2, y2, z2, w2)
        M3(KEYS[3], O3, COST, s3, x3, y3, z3, w3)
      end
      --- @if batch
      local reply, h = OUT, OUTN + 1
      --- @else
      local reply, h = { 1, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil }, 1
      --- @end
      local c, head = h, 1
      if p1 then
        reply[c + 1], c, head = p1, c + 1, head + 4
      else
        reply[c + 1], reply[c + 2], reply[c + 3], reply[c + 4], reply[c + 5] = 1, r1, s1, t1, d1
        c = c + 5
      end
      if p2 then
        reply[c + 1], c, head = p2, c + 1, head + 8
      else
        reply[c + 1], reply[c + 2], reply[c + 3], reply[c + 4], reply[c + 5] = 1, r2, s2, t2, d2
        c = c + 5
      end
      if p3 then
        reply[c + 1], c, head = p3, c + 1, head + 16
      else
        reply[c + 1], reply[c + 2], reply[c + 3], reply[c + 4], reply[c + 5] = 1, r3, s3, t3, d3
        c = c + 5
      end
      reply[h] = head
      --- @if batch
      OUTN = c
      return OUT
      --- @else
      return reply
      --- @end
    end
    V[ALLOWED], V[REMAINING], V[RESET], V[RETRY], V[DELAY], V[PACKED], V[NEW1], V[NEW2], V[NEW3], V[NEW4], V[ARG], V[CHECK_FN], V[COMMIT_FN] =
      a1, r1, s1, t1, d1, p1, x1, y1, z1, w1, O1, C1, M1
    V[STRIDE + ALLOWED], V[STRIDE + REMAINING], V[STRIDE + RESET], V[STRIDE + RETRY], V[STRIDE + DELAY], V[STRIDE + PACKED], V[STRIDE + NEW1], V[STRIDE + NEW2], V[STRIDE + NEW3], V[STRIDE + NEW4], V[STRIDE + ARG], V[STRIDE + CHECK_FN], V[STRIDE + COMMIT_FN] =
      a2, r2, s2, t2, d2, p2, x2, y2, z2, w2, O2, C2, M2
    V[2 * STRIDE + ALLOWED], V[2 * STRIDE + REMAINING], V[2 * STRIDE + RESET], V[2 * STRIDE + RETRY], V[2 * STRIDE + DELAY], V[2 * STRIDE + PACKED], V[2 * STRIDE + NEW1], V[2 * STRIDE + NEW2], V[2 * STRIDE + NEW3], V[2 * STRIDE + NEW4], V[2 * STRIDE + ARG], V[2 * STRIDE + CHECK_FN], V[2 * STRIDE + COMMIT_FN] =
      a3, r3, s3, t3, d3, p3, x3, y3, z3, w3, O3, C3, M3
    PLANNED, admitted = ARGV, 0
  end
  if n == 4 then
    if UNROLLED ~= ARGV then
      local p, _, nargs = o, nil, nil
      C1, M1, _, _, nargs = algorithm(p)
      O1, p = p + 1, p + 1 + nargs
      C2, M2, _, _, nargs = algorithm(p)
      O2, p = p + 1, p + 1 + nargs
      C3, M3, _, _, nargs = algorithm(p)
      O3, p = p + 1, p + 1 + nargs
      C4, M4, _, _, nargs = algorithm(p)
      O4, p = p + 1, p + 1 + nargs
      UNROLLED = ARGV
    end
    local a1, r1, s1, t1, d1, p1, x1, y1, z1, w1 = C1(KEYS[1], O1, COST)
    local a2, r2, s2, t2, d2, p2, x2, y2, z2, w2 = C2(KEYS[2], O2, COST)
    local a3, r3, s3, t3, d3, p3, x3, y3, z3, w3 = C3(KEYS[3], O3, COST)
    local a4, r4, s4, t4, d4, p4, x4, y4, z4, w4 = C4(KEYS[4], O4, COST)
    if a1 == 1 and a2 == 1 and a3 == 1 and a4 == 1 then
      if MODE ~= '1' and COST > 0 then
        M1(KEYS[1], O1, COST, s1, x1, y1, z1, w1)
        M2(KEYS[2], O2, COST, s2, x2, y2, z2, w2)
        M3(KEYS[3], O3, COST, s3, x3, y3, z3, w3)
        M4(KEYS[4], O4, COST, s4, x4, y4, z4, w4)
      end
      --- @if batch
      local reply, h = OUT, OUTN + 1
      --- @else
      local reply, h = { 1, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil }, 1
      --- @end
      local c, head = h, 1
      if p1 then
        reply[c + 1], c, head = p1, c + 1, head + 4
      else
        reply[c + 1], reply[c + 2], reply[c + 3], reply[c + 4], reply[c + 5] = 1, r1, s1, t1, d1
        c = c + 5
      end
      if p2 then
        reply[c + 1], c, head = p2, c + 1, head + 8
      else
        reply[c + 1], reply[c + 2], reply[c + 3], reply[c + 4], reply[c + 5] = 1, r2, s2, t2, d2
        c = c + 5
      end
      if p3 then
        reply[c + 1], c, head = p3, c + 1, head + 16
      else
        reply[c + 1], reply[c + 2], reply[c + 3], reply[c + 4], reply[c + 5] = 1, r3, s3, t3, d3
        c = c + 5
      end
      if p4 then
        reply[c + 1], c, head = p4, c + 1, head + 32
      else
        reply[c + 1], reply[c + 2], reply[c + 3], reply[c + 4], reply[c + 5] = 1, r4, s4, t4, d4
        c = c + 5
      end
      reply[h] = head
      --- @if batch
      OUTN = c
      return OUT
      --- @else
      return reply
      --- @end
    end
    V[ALLOWED], V[REMAINING], V[RESET], V[RETRY], V[DELAY], V[PACKED], V[NEW1], V[NEW2], V[NEW3], V[NEW4], V[ARG], V[CHECK_FN], V[COMMIT_FN] =
      a1, r1, s1, t1, d1, p1, x1, y1, z1, w1, O1, C1, M1
    V[STRIDE + ALLOWED], V[STRIDE + REMAINING], V[STRIDE + RESET], V[STRIDE + RETRY], V[STRIDE + DELAY], V[STRIDE + PACKED], V[STRIDE + NEW1], V[STRIDE + NEW2], V[STRIDE + NEW3], V[STRIDE + NEW4], V[STRIDE + ARG], V[STRIDE + CHECK_FN], V[STRIDE + COMMIT_FN] =
      a2, r2, s2, t2, d2, p2, x2, y2, z2, w2, O2, C2, M2
    V[2 * STRIDE + ALLOWED], V[2 * STRIDE + REMAINING], V[2 * STRIDE + RESET], V[2 * STRIDE + RETRY], V[2 * STRIDE + DELAY], V[2 * STRIDE + PACKED], V[2 * STRIDE + NEW1], V[2 * STRIDE + NEW2], V[2 * STRIDE + NEW3], V[2 * STRIDE + NEW4], V[2 * STRIDE + ARG], V[2 * STRIDE + CHECK_FN], V[2 * STRIDE + COMMIT_FN] =
      a3, r3, s3, t3, d3, p3, x3, y3, z3, w3, O3, C3, M3
    V[3 * STRIDE + ALLOWED], V[3 * STRIDE + REMAINING], V[3 * STRIDE + RESET], V[3 * STRIDE + RETRY], V[3 * STRIDE + DELAY], V[3 * STRIDE + PACKED], V[3 * STRIDE + NEW1], V[3 * STRIDE + NEW2], V[3 * STRIDE + NEW3], V[3 * STRIDE + NEW4], V[3 * STRIDE + ARG], V[3 * STRIDE + CHECK_FN], V[3 * STRIDE + COMMIT_FN] =
      a4, r4, s4, t4, d4, p4, x4, y4, z4, w4, O4, C4, M4
    PLANNED, admitted = ARGV, 0
  end
  if not admitted then
    -- Each policy's ARGV offset, check and commit depend on ARGV alone: worked out once for the
    -- decisions of a batch that share it (PLANNED, include/blocks.lua).
    if PLANNED ~= ARGV then
      for i = 1, n do
        local check, commit, _, _, nargs = algorithm(o)
        local b = STRIDE * (i - 1)
        V[b + ARG], V[b + CHECK_FN], V[b + COMMIT_FN] = o + 1, check, commit
        o = o + 1 + nargs
      end
      PLANNED = ARGV
    end
    admitted = 1
    for i = 1, n do
      local b = STRIDE * (i - 1)
      V[b + ALLOWED], V[b + REMAINING], V[b + RESET], V[b + RETRY], V[b + DELAY], V[b + PACKED],
        V[b + NEW1], V[b + NEW2], V[b + NEW3], V[b + NEW4] = V[b + CHECK_FN](KEYS[i], V[b + ARG], COST)
      if V[b + ALLOWED] == 0 then admitted = 0 end
    end
  end

  if admitted == 0 and MODE ~= '1' then
    local _, _, lockout_us, lock_out = block_steps()
    -- The longest lockout among the policies that denied a cost they could admit.
    local by, longest, forget_by = nil, -1, 0
    for i = 1, n do
      local b = STRIDE * (i - 1)
      if V[b + ALLOWED] == 0 and V[b + RETRY] >= 0 then
        local d, forget = lockout_us(n, i, level)
        if d and d > longest then by, longest, forget_by = i, d, forget end
      end
    end
    if by then return lock_out(block_key, by, V[STRIDE * (by - 1) + ARG], longest, forget_by, level) end
  end

  -- The reply: { admitted + 4 · packed_mask, then per policy its packed value when bit i - 1 of
  -- packed_mask is set, else its five fields }. A packed value is as the policy's check gave it
  -- for the call's cost (for cost 0 when it describes its key as it stands), read by its
  -- algorithm's `unpack`: a table costs Redis per element. A check of cost 0 that denies (only a
  -- stale state can) sends its fields. Past 48 policies the mask would lose digits: fields.
  -- h: where the reply starts (1 here; a batch script writes it into its own reply, include/batch.lua).
  --- @if batch
  local reply, h = OUT, OUTN + 1
  --- @else
  local reply, h = { admitted, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil }, 1
  --- @end
  local c, mask, bit = h, 0, 4
  for i = 1, n do
    local b = STRIDE * (i - 1)
    if admitted == 1 then
      if MODE ~= '1' and COST > 0 then
        V[b + COMMIT_FN](KEYS[i], V[b + ARG], COST, V[b + RESET], V[b + NEW1], V[b + NEW2], V[b + NEW3], V[b + NEW4])
      end
    elseif V[b + ALLOWED] == 1 and COST > 0 then
      -- Another policy denied, so nothing was taken: describe this key as it stands.
      V[b + ALLOWED], V[b + REMAINING], V[b + RESET], V[b + RETRY], V[b + DELAY], V[b + PACKED] = V[b + CHECK_FN](KEYS[i], V[b + ARG], 0)
      if V[b + ALLOWED] == 0 then V[b + PACKED] = nil end
    end
    if V[b + PACKED] and i <= 48 then
      reply[c + 1] = V[b + PACKED]
      c, mask = c + 1, mask + bit
    else
      reply[c + 1], reply[c + 2], reply[c + 3], reply[c + 4], reply[c + 5] = V[b + ALLOWED], V[b + REMAINING], V[b + RESET], V[b + RETRY], V[b + DELAY]
      c = c + 5
    end
    bit = bit * 2
  end
  reply[h] = admitted + mask
  --- @if batch
  OUTN = c
  return OUT
  --- @else
  return reply
  --- @end
--- @if batch
end
--- @end
