-- Shared step: the answer of a smooth limiter with limit 0 (max_cost -1), which its arithmetic
-- cannot give: a cost 0 reads an empty key, any other is denied for good (retry_after -1).
-- Written out where it is called (`return closed(cost)`): no closure per EVALSHA.
--- @inline
local function closed(cost)
  if cost == 0 then return 1, 0, 0, 0, 0 end
  return 0, 0, 0, -1, 0
end
