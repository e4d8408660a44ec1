/**
 * A Redis error that names `user_script:<line>` is traced back to the lua/ file and line that
 * line was assembled from, in the store's error message (single call and batch) and by
 * `scriptSourceLine` for any line of any script.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { useTestRedis } from '../../../../../test/harness/redis';
import { gcra, RateLimiter, RateLimitStoreError, redisStore } from '../../../src/index';
import {
  fixedScripts,
  scriptFor,
  scriptSourceLine,
  withSourceLine,
} from '../../../src/stores/scripts';

const testRedis = useTestRedis();
const root = join(__dirname, '../../../../..');
const sourceLines = (file: string) => readFileSync(join(root, file), 'utf8').split('\n');

/** The store's error for a gcra decision on a key that holds a list (WRONGTYPE in gcra.lua). */
test("a single call: WRONGTYPE in gcra.lua names lua/gcra.lua and its GET line in the store's error", async () => {
  const limiter = new RateLimiter({
    store: redisStore({ client: testRedis(), batch: false }),
    policies: [gcra({ limit: 5, window: '1s' })],
  });
  const [key] = limiter.storageKeys('victim');
  await testRedis().lpush(key!, 'not a timestamp');
  await testRedis().pexpire(key!, 60_000);
  const prepared = limiter.store.prepare(limiter.policies);
  const error = await prepared
    .decide(limiter.storageKeys('victim'), 1, false)
    .catch((e: unknown) => e as Error);
  expect(error).toBeInstanceOf(RateLimitStoreError);
  const found = /user_script:(\d+)\b.*\(lua\/gcra\.lua:(\d+)\)/s.exec((error as Error).message);
  expect(found).not.toBeNull();
  const ran = scriptFor(['gcra']).source.split('\n')[Number(found![1]) - 1]!;
  const line = Number(found![2]);
  expect(sourceLines('lua/gcra.lua')[line - 1]!.trim()).toBe(ran.trim());
  expect(ran).toContain("redis.call('GET', key)");
});

// In a batch, a failing redis.call reaches include/batch.lua's pcall as Redis's error without a
// line (Redis adds `user_script:<line>` only to an error that leaves the script); a Lua error
// there carries the batch script's line, which the batch's reader traces with that script.
test('a batch call: a Lua error line is traced against the batch script', () => {
  const batch = fixedScripts().find((s) => s.name === 'gcra-batch')!;
  const lines = batch.source.split('\n');
  const get = lines.findIndex((l) => l.includes("tonumber(redis.call('GET', key))")) + 1;
  expect(withSourceLine(batch, `user_script:${get}: attempt to compare nil with number`)).toMatch(
    /\(lua\/gcra\.lua:14\)$/,
  );
});

test('every line that is a copy of a source line is traced to that line; the others to a file', () => {
  const scripts = fixedScripts();
  let exact = 0;
  for (const script of scripts) {
    script.source.split('\n').forEach((text, i) => {
      if (text.trim() === '' || text.trim().startsWith('--')) return;
      const at = scriptSourceLine(script, i + 1);
      expect(at.file).toMatch(/^(lua\/.+\.lua|packages\/core\/src\/lua\/\w+\.cjs)$/);
      if (!at.exact) return;
      exact++;
      expect({
        script: script.name,
        line: i + 1,
        text: sourceLines(at.file)[at.line - 1]?.trim(),
      }).toEqual({ script: script.name, line: i + 1, text: text.trim() });
    });
  }
  expect(exact).toBeGreaterThan(10_000);
});

test('a line after an inline step is traced to its own line, not to a look-alike', () => {
  // token-bucket.lua pastes include/refill.lua where it calls refill(): the lines after it
  // keep their own line numbers.
  const script = scriptFor(['token-bucket']);
  const lines = script.source.split('\n');
  const source = sourceLines('lua/token-bucket.lua');
  const pasted = lines.findIndex((l) =>
    /-- >>> lua\/include\/refill\.lua:\d+ \(inline refill\)/.test(l),
  );
  expect(pasted).toBeGreaterThan(0);
  const after = lines.findIndex((l, i) => i > pasted && l.trim() === '-- <<<') + 1;
  const at = scriptSourceLine(script, after + 1);
  expect(at).toMatchObject({ file: 'lua/token-bucket.lua', exact: true });
  const call = source.findIndex((l) => /= refill\(/.test(l)) + 1;
  expect(at.line).toBe(call + 1);
});

test('withSourceLine leaves other messages, and traced ones, as they are', () => {
  const script = scriptFor(['gcra']);
  expect(withSourceLine(script, 'ERR nothing to trace')).toBe('ERR nothing to trace');
  const once = withSourceLine(script, 'ERR user_script:14: boom');
  expect(once).toMatch(/^ERR user_script:14: boom \(lua\/.+:\d+(, about)?\)$/);
  expect(withSourceLine(script, once)).toBe(once);
});
