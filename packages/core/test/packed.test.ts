/**
 * Installs @floodgate/core the way a user gets it — `npm pack`, then the tarball unpacked into
 * a fresh project's node_modules — and imports it from ESM and CommonJS (require of ESM, Node
 * ≥ 20.19) to prove the exports map, the types entry and the built files are all there.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const packageDir = join(__dirname, '..');
let project: string;

beforeAll(() => {
  project = mkdtempSync(join(tmpdir(), 'floodgate-packed-'));
  // npm is always there (pnpm may be running through npx); core has no dependencies to rewrite.
  execFileSync('npm', ['pack', '--pack-destination', project], { cwd: packageDir, stdio: 'pipe' });
  const tarball = readdirSync(project).find((f) => f.endsWith('.tgz'));
  expect(tarball).toBeDefined();
  const target = join(project, 'node_modules/@floodgate/core');
  mkdirSync(target, { recursive: true });
  execFileSync('tar', ['-xzf', join(project, tarball!), '-C', target, '--strip-components=1']);
}, 60_000);

afterAll(() => rmSync(project, { recursive: true, force: true }));

test('the tarball holds the built entry points and their types, not the sources or tests', () => {
  const root = join(project, 'node_modules/@floodgate/core');
  expect(existsSync(join(root, 'dist/index.js'))).toBe(true);
  expect(existsSync(join(root, 'dist/index.d.ts'))).toBe(true);
  expect(existsSync(join(root, 'src'))).toBe(false);
  expect(existsSync(join(root, 'test'))).toBe(false);
});

test.each([
  ['ESM import', 'main.mjs', "import { RateLimiter, gcra, memoryStore } from '@floodgate/core';"],
  [
    'CommonJS require',
    'main.cjs',
    "const { RateLimiter, gcra, memoryStore } = require('@floodgate/core');",
  ],
])('%s works', (_how, file, importLine) => {
  const body = `${importLine}
const limiter = new RateLimiter({ store: memoryStore(), policies: gcra({ limit: 2, window: '1s' }) });
(async () => {
  const seen = [];
  for (let i = 0; i < 3; i++) seen.push((await limiter.consume('k')).allowed);
  console.log(JSON.stringify(seen));
})();
`;
  writeFileSync(join(project, file), body);
  const out = execFileSync(process.execPath, [file], {
    cwd: project,
    encoding: 'utf8',
    timeout: 20_000,
  });
  expect(JSON.parse(out.trim().split('\n').pop()!)).toEqual([true, true, false]);
});
