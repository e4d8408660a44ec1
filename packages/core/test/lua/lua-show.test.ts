/**
 * `pnpm lua:show <policy kinds…> [--batch]` prints the exact script a limiter with those policies
 * sends: the store's own script, byte for byte, with its name and SHA1 on stderr.
 */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import {
  batchScriptFor,
  combinedScriptFor,
  type GeneratedScript,
  scriptFor,
} from '../../src/stores/scripts';

const root = join(__dirname, '../../../..');
const show = (...args: string[]) =>
  spawnSync(process.execPath, [join(root, 'scripts/lua-show.mjs'), ...args], {
    encoding: 'utf8',
    timeout: 30_000,
  });
const code = (s: string) => s.split('\n').filter((l) => !l.trim().startsWith('--'));

test.each<[string[], () => GeneratedScript]>([
  [['gcra'], () => scriptFor(['gcra'])],
  [['fixedWindow', '--batch'], () => batchScriptFor(scriptFor(['fixed-window']))],
  // Several policies share one key per caller, as redisStore keeps them by default.
  [
    ['fixedWindow', 'fixedWindow', 'gcra', '--batch'],
    () => batchScriptFor(combinedScriptFor(['fixed-window', 'gcra'])),
  ],
  [['gcra', 'tokenBucket', '--per-policy'], () => scriptFor(['gcra', 'token-bucket'])],
  [['slidingLog', 'gcra'], () => scriptFor(['sliding-log', 'gcra'])],
])('lua:show %j prints the script the store sends', (args, expected) => {
  const run = show(...args);
  expect(run.status).toBe(0);
  const script = expected();
  expect(run.stdout).toBe(script.source);
  expect(run.stderr).toBe(`-- ${script.name} (SHA1 ${script.sha1} as sent)\n`);
});

test('--comments prints the same lines with their comments', () => {
  const plain = show('fixedWindow', 'gcra').stdout;
  const commented = show('fixedWindow', 'gcra', '--comments').stdout;
  expect(commented.split('\n')).toHaveLength(plain.split('\n').length);
  expect(code(commented)).toEqual(code(plain));
  expect(commented).toContain('-- Floodgate script prelude');
  expect(plain).not.toContain('-- Floodgate script prelude');
});

test('an unknown kind fails, listing the kinds there are', () => {
  const run = show('nope');
  expect(run.status).toBe(1);
  expect(run.stderr).toMatch(/unknown algorithm: nope \(kinds: fixed-window, gcra, /);
});
