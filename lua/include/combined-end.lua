-- The end of include/combined-decide.lua's decide_policies(), after the engine: decide() runs it
-- and writes the key's state back (write_state, include/combined.lua). A batch script calls
-- decide() per call (include/batch.lua asks make_engine() for it); a single script returns it.
end

local function decide()
  READ, WRITTEN = false, false
  local reply = decide_policies()
  write_state()
  return reply
end

--- @if batch
local function make_engine() return decide end
--- @else
return decide()
--- @end
