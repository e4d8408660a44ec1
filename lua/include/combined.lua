-- Floodgate combined layout (DESIGN §5, one key per caller): a limiter of several policies whose
-- states are all strings keeps them in one key, read with one GET and written with one SET … PX
-- per decision instead of one of each per policy. scripts/generate-lua.mjs makes the combined
-- variant of a script from the same sources: this part comes right after the prelude, the
-- algorithms' `redis.call(` becomes `CALL(` and the engine hands policy i the number i as its
-- key, so every algorithm's GET, SET … PX, DEL, INCRBY and DECRBY lands on policy i's entry here.
--
-- KEYS[1]  the caller's state, '<expiry ms>=<state>;' per policy in order ('=;' for a policy with
--          none; entries after the last state are left out). <state> is the string the policy's
--          own key would hold, <expiry ms> when that key would expire: the script's clock in
--          whole ms plus the TTL its algorithm set, as Redis dates a key's expiry. PX: until the
--          latest expiry, so the key lives as long as its longest-lived state needs and no
--          longer (to the ms); with no state left it is deleted.
-- KEYS[2]  the block state, as in include/engine.lua.
--
-- An entry past its expiry reads as missing, as the key would (Redis keeps a key through the
-- millisecond of its expiry); it is dropped at the next write. (Every algorithm dates its own state, so an entry read a little later or earlier than
-- its key would have expired decides the same: see INJECTED_CLOCK_TTL_SLACK_MS in redis.ts.)

-- STATE[i], EXPIRY[i]: policy i's entry, read on the first CALL of a decision; NOW_MS: the
-- clock in whole ms then; WRITTEN: a CALL changed one; POLICIES: the limiter's number of
-- policies (set by the engine).
local STATE, EXPIRY, NOW_MS, READ, WRITTEN, POLICIES

local function CALL(command, i, value, _, ms)
  if not READ then
    READ, STATE, EXPIRY, NOW_MS = true, {}, {}, math.floor(now / 1000)
    local stored = redis.call('GET', KEYS[1])
    if stored then
      local j = 0
      for e, s in string.gmatch(stored, '(%d*)=([^;]*);') do
        j = j + 1
        if e ~= '' then STATE[j], EXPIRY[j] = s, tonumber(e) end
      end
    end
  end
  if command == 'GET' then
    if STATE[i] and EXPIRY[i] >= NOW_MS then return STATE[i] end
    return false
  end
  WRITTEN = true
  if command == 'SET' then
    -- Every algorithm writes SET key state 'PX' ms, its state already a string.
    STATE[i], EXPIRY[i] = value, NOW_MS + ms
  elseif command == 'DEL' then
    STATE[i] = nil
  else
    -- INCRBY or DECRBY of a count this decision read (its expiry stays, as a key's TTL would).
    if command == 'DECRBY' then value = -value end
    local count = tonumber(STATE[i]) + value
    STATE[i] = string.format('%d', count)
    return count
  end
end

-- Writes the entries back when a CALL changed one: one SET … PX, or DEL with none left.
local function write_state()
  if not WRITTEN then return end
  local parts, last, latest = {}, 0, nil
  for i = 1, POLICIES do
    local e = EXPIRY[i]
    if STATE[i] and e >= NOW_MS then
      parts[i], last = string.format('%d=', e) .. STATE[i] .. ';', i
      if not latest or e > latest then latest = e end
    else
      parts[i] = '=;'
    end
  end
  if latest then
    redis.call('SET', KEYS[1], table.concat(parts, '', 1, last), 'PX', math.max(latest - NOW_MS, 1))
  else
    redis.call('DEL', KEYS[1])
  end
end
