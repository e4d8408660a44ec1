/**
 * Installs @floodgate/koa and @floodgate/core the way a user gets them (`npm pack`, each
 * tarball unpacked into a fresh project's node_modules, next to the framework) and serves a
 * limited route from ESM and CommonJS: proves the exports maps and built files are complete.
 * Needs the packages built (`pnpm -r --filter './packages/*' run build`).
 */
import { join } from 'node:path';
import { type PackedProject, packedProject } from '../../../test/harness/packed';

const packagesDir = join(__dirname, '../..');
let project: PackedProject;

beforeAll(() => {
  project = packedProject({
    label: 'koa',
    packages: {
      '@floodgate/core': join(packagesDir, 'core'),
      '@floodgate/koa': join(packagesDir, 'koa'),
    },
    // The framework as the user has it installed (the peer dependency).
    links: { koa: join(packagesDir, 'koa/node_modules/koa') },
  });
}, 60_000);

afterAll(() => project.remove());

test.each([
  [
    'ESM import',
    'main.mjs',
    "import Koa from 'koa';\nimport { rateLimit } from '@floodgate/koa';\nimport { gcra } from '@floodgate/core';",
  ],
  [
    'CommonJS require',
    'main.cjs',
    "const Koa = require('koa');\nconst { rateLimit } = require('@floodgate/koa');\nconst { gcra } = require('@floodgate/core');",
  ],
])('%s serves a limited route', (_how, file, imports) => {
  const seen = JSON.parse(
    project.run(
      file,
      `${imports}
const app = new Koa();
app.use(rateLimit({ policies: gcra({ name: 'g', limit: 2, window: '1m' }) }));
app.use((ctx) => { ctx.body = { remaining: ctx.state.rateLimit.remaining }; });
const server = app.listen(0, '127.0.0.1', async () => {
  const url = 'http://127.0.0.1:' + server.address().port + '/';
  const seen = [];
  for (let i = 0; i < 3; i++) {
    const res = await fetch(url);
    seen.push([res.status, res.headers.get('ratelimit')]);
  }
  console.log(JSON.stringify(seen));
  server.close();
});
`,
    ),
  );
  expect(seen.map((s: [number, string]) => s[0])).toEqual([200, 200, 429]);
  expect(seen[0][1]).toMatch(/^"g";r=1;t=\d+$/);
});
