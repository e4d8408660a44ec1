/**
 * Installs @floodgate/core the way a user gets it — `npm pack`, then the tarball unpacked into
 * a fresh project's node_modules — and imports it from ESM and CommonJS (require of ESM, Node
 * ≥ 20.19) to prove the exports map, the types entry and the built files are all there.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { type PackedProject, packedProject } from '../../../test/harness/packed';

let project: PackedProject;

beforeAll(() => {
  project = packedProject({
    label: 'core',
    packages: { '@floodgate/core': join(__dirname, '..') },
  });
}, 60_000);

afterAll(() => project.remove());

test('the tarball holds the built entry points and their types, not the sources or tests', () => {
  const root = join(project.dir, 'node_modules/@floodgate/core');
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
  expect(JSON.parse(project.run(file, body))).toEqual([true, true, false]);
});
