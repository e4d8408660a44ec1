/**
 * packages/core/src/lua/assemble.cjs: a `--- @inline` step is pasted where it is called, with the caller's
 * names, and every call it cannot paste without changing what the script decides fails the
 * generator with a message naming the step and the problem.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fixedScripts } from '../../src/stores/scripts';

const root = join(__dirname, '../../../..');
const { expandInline, takeInline } = require('../../src/lua/assemble.cjs') as {
  takeInline(text: string, file: string): { rest: string; steps: Map<string, unknown> };
  expandInline(source: string, steps: Map<string, unknown>, file: string): string;
};
const all = fixedScripts();
const batches = all.filter((s) => s.name.endsWith('-batch'));
const singles = all.filter((s) => !s.name.endsWith('-batch') && !s.name.startsWith('lease-'));
// The markers around each pasted copy (`-- >>> lua/include/…:<line> (inline step)` … `-- <<<`).
const MARKERS = /^ *-- (>>> .*|<<<)\n/gm;

// Steps shaped like lua/include/pair.lua, refill.lua and closed.lua, written here so that the
// cases below do not change when those files do.
const INCLUDE = `-- Shared steps for the test.

-- The two values stored at key. 'key' in a string is not the parameter.
--- @inline
local function get_pair(key)
  local a, b
  local state = redis.call('GET', key)
  if state then
    a, b = string.match(state, '^key:(%d+):(%d+)$')
  end
  return a, b
end

-- Assigns its parameters: a call must assign the same names.
--- @inline
local function refill(level, since, capacity, rate, now)
  if now > since then
    level = math.min(capacity, level + (now - since) * rate)
    since = now
  end
  return level, since
end

-- Returns early: only \`return closed(cost)\` can paste it.
--- @inline
local function closed(cost)
  if cost == 0 then return 1, 0 end
  return 0, -1
end

-- Ends without a return.
--- @inline
local function touch(key)
  redis.call('PEXPIRE', key, 1)
end

-- Not inline: stays a function.
local function ttl_ms(us)
  return math.ceil(us / 1000)
end`;

interface Expansion {
  readonly rest?: string;
  readonly text?: string;
  readonly error?: string;
}

/** Each algorithm source expanded with INCLUDE's steps (markers left out), or the error thrown. */
function expandAll(sources: readonly string[]): Expansion[] {
  return sources.map((source) => {
    try {
      const { rest, steps } = takeInline(INCLUDE, 'lua/include/test.lua');
      return { rest, text: expandInline(source, steps, 'alg.lua').replace(MARKERS, '') };
    } catch (e) {
      return { error: (e as Error).message };
    }
  });
}

const fn = (...body: string[]) =>
  ['local function check(k, cost, cap, r, t)', ...body, 'end'].join('\n');

const PASTED: readonly [string, string, string][] = [
  [
    'a value step: its body in do … end with the caller names, its return assigned to them',
    fn('  local x, y = get_pair(k)', '  return x, y'),
    fn(
      '  local x, y',
      '  do',
      '    local a, b',
      "    local state = redis.call('GET', k)",
      '    if state then',
      "      a, b = string.match(state, '^key:(%d+):(%d+)$')",
      '    end',
      '    x, y = a, b',
      '  end',
      '  return x, y',
    ),
  ],
  [
    'a step that assigns its parameters, called as `x, y = step(x, y, …)`: no do, no extra assignment',
    fn('  level, since = refill(level, since, cap, r, t)'),
    fn(
      '  if t > since then',
      '    level = math.min(cap, level + (t - since) * r)',
      '    since = t',
      '  end',
    ),
  ],
  [
    '`return step(…)`: the body as it is, its returns returning',
    fn('  local n = cost - 1', '  if n < 0 then', '    return closed(n)', '  end'),
    fn(
      '  local n = cost - 1',
      '  if n < 0 then',
      '    if n == 0 then return 1, 0 end',
      '    return 0, -1',
      '  end',
    ),
  ],
];

const REFUSED: readonly [string, string, string][] = [
  [
    'an argument that is not a name',
    fn('  local x, y = get_pair(KEYS[1])'),
    'get_pair: takes 1 names as arguments: KEYS[1]',
  ],
  [
    'an expression as argument',
    fn("  local x, y = get_pair(k .. ':b')"),
    "get_pair: takes 1 names as arguments: k .. ':b'",
  ],
  [
    'too many arguments',
    fn('  local x, y = get_pair(k, cost)'),
    'get_pair: takes 1 names as arguments: k, cost',
  ],
  [
    "a local of the step hiding the caller's argument",
    fn('  local x, y = get_pair(state)'),
    "get_pair: its local state would hide the caller's",
  ],
  [
    "a local of the step hiding the caller's target",
    fn('  local a, y = get_pair(k)'),
    "get_pair: its local a would hide the caller's",
  ],
  [
    'an assigned parameter whose name the call does not assign',
    fn('  local l, s = refill(level, since, cap, r, t)'),
    'refill: assigns its parameter level, so the call must assign level too',
  ],
  [
    'an assigned parameter whose name the call assigns only in part',
    fn('  level, s = refill(level, since, cap, r, t)'),
    'refill: assigns its parameter since, so the call must assign since too',
  ],
  [
    'a step with a return before its last line used as a value',
    fn('  local ok, n = closed(cost)'),
    'closed: used as a value, so it must end with its only `return`',
  ],
  [
    'a step without a return used as a value',
    fn('  local done = touch(k)'),
    'touch: used as a value, so it must end with its only `return`',
  ],
  [
    'a call inside an expression',
    fn('  if closed(cost) then return 1 end'),
    'closed: is used other than as `[local] x, … = step(…)` or `return step(…)`',
  ],
  [
    'a call as a statement',
    fn('  touch(k)'),
    'touch: is used other than as `[local] x, … = step(…)` or `return step(…)`',
  ],
  [
    'the step as a value',
    fn('  local read = get_pair'),
    'get_pair: is used other than as `[local] x, … = step(…)` or `return step(…)`',
  ],
];

const results = expandAll([...PASTED, ...REFUSED].map(([, source]) => source));
const pasted = results.slice(0, PASTED.length);
const refused = results.slice(PASTED.length);

describe('a call the step can be pasted into', () => {
  test.each(PASTED.map((c, i) => [c[0], c[2], i] as const))('%s', (_, expected, i) => {
    expect(pasted[i]).toEqual({ rest: expect.any(String), text: expected });
  });

  test('the include keeps only what is not inline: no inline step is defined', () => {
    expect(pasted[0]?.rest).toBe(
      '-- Shared steps for the test.\n\n-- Not inline: stays a function.\nlocal function ttl_ms(us)\n  return math.ceil(us / 1000)\nend',
    );
  });
});

describe('a call the step cannot be pasted into fails with the step and the problem', () => {
  test.each(REFUSED.map((c, i) => [c[0], c[2], i] as const))('%s', (_, why, i) => {
    expect(refused[i]).toEqual({ error: `lua/alg.lua: inline step ${why}` });
  });
});

describe('the real lua/', () => {
  const inlineSteps = readdirSync(join(root, 'lua/include')).flatMap((file) =>
    [
      ...readFileSync(join(root, 'lua/include', file), 'utf8').matchAll(
        /^--- @inline\nlocal function (\w+)\(/gm,
      ),
    ].map((m) => m[1] as string),
  );

  test('generates without error, and scripts.ts is what it generates', () => {
    const out = execFileSync(
      process.execPath,
      [join(root, 'scripts/generate-lua.mjs'), '--check'],
      {
        encoding: 'utf8',
        timeout: 30_000,
      },
    );
    expect(out).toMatch(/^generated scripts are up to date/);
  });

  test('no generated script defines or calls an inline step', () => {
    expect(inlineSteps.length).toBeGreaterThan(0);
    for (const script of all) {
      for (const step of inlineSteps) {
        const named = new RegExp(`(?<![\\w.:])${step} *\\(`).test(script.source);
        expect({ script: script.name, step, named }).toEqual({
          script: script.name,
          step,
          named: false,
        });
      }
    }
  });

  // lua/include/several.lua: a single-call script runs once per EVALSHA, so the several-policies
  // part is its body inline (a closure would make an upvalue object of every local it captures,
  // ~9 000 instructions per call); a batch script defines it once and calls it per decision.
  test('single-call scripts run decide_several inline; batch scripts define it once', () => {
    for (const script of singles) {
      expect({ script: script.name, has: script.source.includes('decide_several') }).toEqual({
        script: script.name,
        has: false,
      });
    }
    for (const script of batches) {
      const defined = script.source.match(/local function decide_several\(/g) ?? [];
      expect({ script: script.name, defined: defined.length }).toEqual({
        script: script.name,
        defined: 1,
      });
    }
  });

  test('a call it cannot paste fails the generator, naming the file, the step and the problem', () => {
    const dir = mkdtempSync(join(tmpdir(), 'floodgate-lua-'));
    try {
      cpSync(join(root, 'lua'), join(dir, 'lua'), { recursive: true });
      cpSync(join(root, 'scripts'), join(dir, 'scripts'), { recursive: true });
      cpSync(join(root, 'packages/core/src/lua'), join(dir, 'packages/core/src/lua'), {
        recursive: true,
      });
      const file = join(dir, 'lua/token-bucket.lua');
      const source = readFileSync(file, 'utf8');
      const call = 'units, since = refill(units, since, capacity, rate, now)';
      expect(source).toContain(call);
      writeFileSync(
        file,
        source.replace(call, 'local u, s = refill(units, since, capacity, rate, now)'),
      );
      const run = spawnSync(process.execPath, [join(dir, 'scripts/generate-lua.mjs')], {
        encoding: 'utf8',
        timeout: 30_000,
      });
      expect(run.status).toBe(1);
      expect(run.stderr).toContain(
        'lua/token-bucket.lua: inline step refill: assigns its parameter level, so the call must assign units too',
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
