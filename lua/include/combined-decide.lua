-- The combined layout's decision (include/combined.lua), opened before include/engine.lua:
-- decide_policies() runs the engine, and include/combined-end.lua's decide() writes the state
-- back once the decision is made (an error writes nothing). KEYS are the caller's state and its
-- block state; ARGV's n groups (a name and its nargs values) and n lockouts give n, counted once
-- per ARGV table (COUNTED: a batch's calls of one shape share theirs).
local function decide_policies()
if COUNTED ~= ARGV then
  local count = 0
  if CHECK then
    count = (#ARGV - FIRST_ARG + 1) / (NARGS + 2)
  else
    local g = FIRST_ARG
    while ALG[ARGV[g]] do count, g = count + 1, g + 1 + ALG[ARGV[g]][5] end
  end
  if POLICIES ~= count then POLICIES, FORMAT = count, string.rep('<dds', count) end
  COUNTED = ARGV
end
local n = POLICIES
local block_key = KEYS[2]
