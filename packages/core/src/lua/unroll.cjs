// The variants of lua/include/engine.lua that src/lua/assemble.cjs and lua-combined.mjs
// put in scripts: splitEngine cuts it into what a batch script defines once and its per-call
// part; singleEngine pastes the several-policies part back inline for a single-call script;
// batchReply has a batch script's decisions of several policies answer into the batch's reply;
// and, below, the engine's path for limiters of two to four policies, written out once per
// policy count by src/lua/assemble.cjs where lua/include/engine.lua says `--- @unrolled` (and its state
// where include/blocks.lua says `--- @unrolled-state`). It decides as the engine's loop does, but
// keeps each check's values in locals: the loop stores ten values per policy in the table V and
// reads them back, and for a 3-policy limiter that table work was a fifth of what Redis spent on
// a batched decision (callgrind, docs/benchmarks.md "Three policies"). When every policy admits it
// commits and replies itself; when one denies it hands the values to the loop's V and the
// engine goes on from there (lockouts, describing the other keys as they stand), so denials keep
// one code path. `key(i)` is how policy i's key is written: `KEYS[i]`, or `i` in the combined
// variant (src/lua/combined.cjs).

/** The counts written out: more policies go through the engine's loop. */
const UNROLLED_COUNTS = [2, 3, 4];
const STATE_MARK = '--- @unrolled-state';
// How this file names itself in the markers around the text it writes (assemble.cjs).
const SELF = 'packages/core/src/lua/unroll.cjs';
const PATH_MARK = '--- @unrolled';
const FIELDS = ['a', 'r', 's', 't', 'd', 'p', 'x', 'y', 'z', 'w'];

const range = (n) => Array.from({ length: n }, (_, i) => i + 1);
const list = (n, f) => range(n).map(f).join(', ');

/** The upvalues the written-out paths plan into: check, commit and ARGV offset per policy. */
function stateText() {
  const max = Math.max(...UNROLLED_COUNTS);
  return [
    `-- >>> ${SELF} (the state of the paths for two to four policies)`,
    "-- Each policy i's check Ci, commit Mi and ARGV offset Oi, planned once per ARGV table.",
    `local ${list(max, (i) => `C${i}`)}, ${list(max, (i) => `M${i}`)}, ${list(max, (i) => `O${i}`)}, UNROLLED`,
    '-- <<<',
  ].join('\n');
}

function pathFor(n, key) {
  const vals = (i) => FIELDS.map((f) => `${f}${i}`).join(', ');
  const lines = [];
  const add = (indent, text) => lines.push(`${'  '.repeat(indent)}${text}`);
  add(0, `if n == ${n} then`);
  add(1, 'if UNROLLED ~= ARGV then');
  add(2, 'local p, _, nargs = o, nil, nil');
  for (const i of range(n)) {
    add(2, `C${i}, M${i}, _, _, nargs = algorithm(p)`);
    add(2, `O${i}, p = p + 1, p + 1 + nargs`);
  }
  add(2, 'UNROLLED = ARGV');
  add(1, 'end');
  for (const i of range(n)) add(1, `local ${vals(i)} = C${i}(${key(i)}, O${i}, COST)`);
  add(
    1,
    `if ${range(n)
      .map((i) => `a${i} == 1`)
      .join(' and ')} then`,
  );
  add(2, "if MODE ~= '1' and COST > 0 then");
  for (const i of range(n)) {
    add(3, `M${i}(${key(i)}, O${i}, COST, s${i}, x${i}, y${i}, z${i}, w${i})`);
  }
  add(2, 'end');
  // The engine's reply: { 1 + 4 · packed_mask, then each policy's packed value or five fields }.
  add(2, `local reply, h = { 1${', nil'.repeat(5 * n)} }, 1`);
  add(2, 'local c, head = h, 1');
  for (const i of range(n)) {
    add(2, `if p${i} then`);
    add(3, `reply[c + 1], c, head = p${i}, c + 1, head + ${4 * 2 ** (i - 1)}`);
    add(2, 'else');
    add(
      3,
      `reply[c + 1], reply[c + 2], reply[c + 3], reply[c + 4], reply[c + 5] = 1, r${i}, s${i}, t${i}, d${i}`,
    );
    add(3, 'c = c + 5');
    add(2, 'end');
  }
  add(2, 'reply[h] = head');
  add(2, 'return reply');
  add(1, 'end');
  // A denial: the loop's values, as its checks and planning would have left them.
  for (const i of range(n)) {
    // The layout engine.lua names (STRIDE 13: ALLOWED … NEW4, ARG, CHECK_FN, COMMIT_FN).
    const b = 13 * (i - 1);
    const slots = range(13)
      .map((k) => `V[${b + k}]`)
      .join(', ');
    add(1, `${slots} = ${vals(i)}, O${i}, C${i}, M${i}`);
  }
  add(1, 'PLANNED, admitted = ARGV, 0');
  add(0, 'end');
  return lines.join('\n');
}

/**
 * `engine` (include/engine.lua's text, or its combined rewrite) with its `--- @unrolled` line
 * replaced by the written-out paths, policy i's key written as `key(i)`.
 */
function unrollEngine(engine, key) {
  const mark = /^( *)--- @unrolled$/m;
  const found = mark.exec(engine);
  if (!found) throw new Error(`lua/include/engine.lua no longer holds a \`${PATH_MARK}\` line`);
  const indent = found[1];
  const paths = [
    `-- >>> ${SELF} (the paths for two to four policies, written out)`,
    ...UNROLLED_COUNTS.map((n) => pathFor(n, key)),
    '-- <<<',
  ]
    .join('\n')
    .replace(/^/gm, indent);
  return engine.replace(mark, () => paths);
}

/**
 * include/engine.lua's two parts, at its `--- @decide` line: what is defined once per script call
 * (decide_several), and the per-call part, which a batch script wraps in its decide().
 */
function splitEngine(engine) {
  const mark = /^--- @decide\b.*\n/m;
  const found = mark.exec(engine);
  if (!found) throw new Error('lua/include/engine.lua no longer holds a `--- @decide` line');
  return {
    defined: engine.slice(0, found.index).trimEnd(),
    perCall: engine.slice(found.index + found[0].length).trimEnd(),
  };
}

/** `blocks` (include/blocks.lua's text) with its `--- @unrolled-state` line replaced. */
function unrollState(blocks) {
  if (!blocks.includes(`\n${STATE_MARK}\n`) && !blocks.endsWith(`\n${STATE_MARK}`)) {
    throw new Error(`lua/include/blocks.lua no longer holds a \`${STATE_MARK}\` line`);
  }
  return blocks.replace(STATE_MARK, stateText());
}

// A decision's reply table, as the engine (and the paths above) start it and end it.
const REPLY_START = /^( *)local reply, h = \{ [^}\n]* \}, 1$/gm;
const REPLY_END = /^( *)reply\[h\] = ([^\n]+)\n\1return reply$/gm;

/**
 * The engine of a batch script: a decision's reply goes straight into the batch's reply, OUT,
 * from OUTN + 1 on, instead of into a table of its own (include/batch.lua). A table per decision,
 * and Redis turning each into a nested reply, cost a 3-policy decision ~5 700 of its ~83 000
 * instructions (callgrind, docs/benchmarks.md "Three policies"); the Node side reads the flat
 * reply back (stores/redis-batch.ts).
 */
function batchReply(engine) {
  const starts = engine.match(REPLY_START)?.length ?? 0;
  const ends = engine.match(REPLY_END)?.length ?? 0;
  const expected = UNROLLED_COUNTS.length + 1;
  if (starts !== expected || ends !== expected) {
    throw new Error(
      `the engine should start and end ${expected} reply tables (found ${starts} and ${ends}): lua/include/engine.lua or src/lua/unroll.cjs changed`,
    );
  }
  return engine
    .replace(REPLY_START, '$1local reply, h = OUT, OUTN + 1')
    .replace(REPLY_END, '$1reply[h] = $2\n$1OUTN = c\n$1return OUT');
}

/**
 * The engine of a single-call script: the per-call part with decide_several's body in place of
 * its call. A single script runs once per EVALSHA, so it has no frame to keep small, and making
 * the closure would cost every call: each local it captures becomes an upvalue object (~9 000
 * instructions per one-policy call with decide_several's ~30, `pnpm bench` run 6).
 */
function singleEngine({ defined, perCall }) {
  const fn =
    /^((?:--.*\n)*)local function decide_several\(n, o, block_key, level\)\n([\s\S]*)\nend$/m;
  const found = fn.exec(defined);
  const call = 'return decide_several(n, o, block_key, level)';
  if (!found || !perCall.endsWith(call)) {
    throw new Error(
      'lua/include/engine.lua: decide_several and its call are no longer as expected',
    );
  }
  const body = found[2].replace(/^ {2}/gm, '');
  return `${defined.slice(0, found.index)}${perCall.slice(0, -call.length)}${body}`;
}

module.exports = {
  UNROLLED_COUNTS,
  unrollEngine,
  splitEngine,
  unrollState,
  batchReply,
  singleEngine,
};
