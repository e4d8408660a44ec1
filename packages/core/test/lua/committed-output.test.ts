/**
 * What `pnpm generate` commits stays small and reviewable: lua/scripts.sha1 (one line per fixed
 * script), never the assembled scripts themselves, so a change to lua/ diffs as Lua plus hashes.
 */
import { execFileSync } from 'node:child_process';
import { statSync } from 'node:fs';
import { join } from 'node:path';
import { readPinnedScripts } from './pinned';

const root = join(__dirname, '../../../..');
const tracked = execFileSync('git', ['ls-files'], { cwd: root, encoding: 'utf8' })
  .split('\n')
  .filter(Boolean);

test('no assembled script and no generated source is committed; lua/build/ is ignored', () => {
  expect(tracked.filter((f) => f.startsWith('lua/build/') || f.includes('/generated/'))).toEqual(
    [],
  );
  const ignored = execFileSync('git', ['check-ignore', 'lua/build/gcra.lua'], {
    cwd: root,
    encoding: 'utf8',
  });
  expect(ignored.trim()).toBe('lua/build/gcra.lua');
});

test('lua/scripts.sha1 is one short line per fixed script, under 200 KB like every Lua file', () => {
  const pinned = readPinnedScripts();
  expect(pinned.length).toBeGreaterThan(30);
  for (const { name, sha1 } of pinned) {
    expect(sha1).toMatch(/^[0-9a-f]{40}$/);
    expect(name).toMatch(/^[a-z+-]+$/);
  }
  for (const file of tracked.filter((f) => f.startsWith('lua/'))) {
    expect({ file, small: statSync(join(root, file)).size <= 200 * 1024 }).toEqual({
      file,
      small: true,
    });
  }
});
