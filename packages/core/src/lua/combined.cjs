// The combined variant of a multi-policy script for src/lua/assemble.cjs (DESIGN §5, one key
// per caller; lua/include/combined.lua says how it stores the states). It is made from the same
// sources as the ordinary script: the algorithms' and block steps' `redis.call(` on a policy's key
// becomes `CALL(` on that policy's entry in the one state key, and the engine passes policy i the
// number i as its key. Each rewrite must apply, so a change to the engine or an algorithm that a
// rewrite no longer fits fails in the generator, not in Redis.

const { batchReply, singleEngine, splitEngine, unrollEngine } = require('./unroll.cjs');

// Integer states go to the entry as numbers (no string.format to write them, no tonumber() to
// read them back: include/combined.lua stores numbers as numbers).
const INTEGER_SET = /CALL\('SET', (\w+), string\.format\('%d', (\w+(?: \+ \w+)?)\), 'PX'/g;
// Where a script hands Redis strings (ARGV[3] as the cost, the prelude's ttl_ms for a TTL), the
// entries take numbers: the cost as check and commit have it, include/combined.lua's ttl_number.
const COUNT_BY_COST = /CALL\('(INCRBY|DECRBY)', (\w+), ARGV\[3\]\)/g;
// A state read as a number: include/combined.lua's GETN answers it without CALL's command chain.
const NUMBER_GET = /tonumber\(CALL\('GET', (\w+)\)\)/g;
const toCall = (text) =>
  text
    .replaceAll('redis.call(', 'CALL(')
    .replace(INTEGER_SET, 'SETN($1, $2')
    .replace(COUNT_BY_COST, (_, command, key) =>
      command === 'INCRBY' ? `COUNT(${key}, cost)` : `COUNT(${key}, -cost)`,
    )
    .replace(NUMBER_GET, 'GETN($1)')
    .replaceAll('ttl_ms(', 'ttl_number(');
const rewrite = (text, pairs, where) =>
  pairs.reduce((t, [from, to]) => {
    if (!t.includes(from))
      throw new Error(`${where} no longer holds \`${from}\` (combined variant)`);
    return t.replaceAll(from, to);
  }, text);
// KEYS are the state key and the block key; ARGV holds n groups of 1 + nargs values, then n
// lockouts, so n follows from ARGV (a one-algorithm script: its NARGS; mixed: walk the groups).
const COMBINED_COUNT = `-- The combined layout (include/combined.lua): KEYS are the caller's state and its block state;
-- ARGV's n groups (a name and its nargs values) and n lockouts give n, counted once per ARGV
-- table (COUNTED: a batch's calls of one shape share theirs).
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
local block_key = KEYS[2]`;
// The engine's header documents the per-policy KEYS: the combined variant says what it changes.
const ENGINE_HEADER = /^(?:--.*\n)+/;

/**
 * The combined variant's parts, made from include/engine.lua, blocks.lua and combined.lua, for
 * assemble.cjs: `toCall` rewrites an algorithm or step for it, `part` leads the script, `blocks`
 * and `engine` (or `batchEngine`) end it.
 */
function combinedVariant(engine, blocks, part) {
  const combinedEngineText = rewrite(
    engine.replace(
      ENGINE_HEADER,
      "-- include/engine.lua with policy i's key replaced by i, its entry in KEYS[1] (include/combined.lua).\n",
    ),
    [
      ['local n = #KEYS - 1\nlocal block_key = KEYS[n + 1]', COMBINED_COUNT],
      ["redis.call('DEL', KEYS[i])", "CALL('DEL', i)"],
      ['KEYS[i]', 'i'],
      ['KEYS[1]', '1'],
    ],
    'lua/include/engine.lua',
  );
  // Its paths for two to four policies, written out with policy i's key as i.
  const combinedEngine = splitEngine(unrollEngine(combinedEngineText, (i) => String(i)));
  const combinedBlocks = rewrite(
    blocks,
    [
      ["redis.call('DEL', KEYS[i])", "CALL('DEL', i)"],
      ['KEYS[i]', 'i'],
    ],
    'lua/include/blocks.lua',
  );
  for (const [where, text] of [
    ['engine', `${combinedEngine.defined}\n${combinedEngine.perCall}`],
    ['blocks', combinedBlocks],
  ]) {
    if (/KEYS\[(?!2\])/.test(text))
      throw new Error(`combined ${where} still reads a policy's KEYS`);
  }
  // The engine runs in decide(), whose state is written back once the decision is made (an error
  // writes nothing); a batch script calls decide() per call (include/batch.lua).
  // defined: what comes before decide_policies; body: its body.
  const ENGINE = '-- >>> lua/include/engine.lua';
  const SELF = '-- >>> packages/core/src/lua/combined.cjs';
  const decideText = (defined, body) => `${defined}${SELF}
local function decide_policies()
${ENGINE}
${body}
${SELF}
end

local function decide()
  READ, WRITTEN = false, false
  local reply = decide_policies()
  write_state()
  return reply
end`;
  // A single script's: decide_several's body inline (src/lua/unroll.cjs singleEngine).
  const COMBINED_ENGINE = `${decideText('', singleEngine(combinedEngine))}\n\nreturn decide()`;
  // A batch script's: its decisions' replies go into the batch's own (src/lua/unroll.cjs).
  // include/batch.lua asks make_engine() for decide when it has none: here it has.
  const COMBINED_DECIDE = `${decideText(
    `${ENGINE}\n${batchReply(combinedEngine.defined)}\n\n`,
    combinedEngine.perCall,
  )}\n\nlocal function make_engine() return decide end`;

  return {
    toCall,
    part,
    blocks: combinedBlocks,
    engine: COMBINED_ENGINE,
    batchEngine: COMBINED_DECIDE,
  };
}

module.exports = { combinedVariant };
