/**
 * Installs @floodgate/express and @floodgate/core the way a user gets them (`npm pack`, each
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
    label: 'express',
    packages: {
      '@floodgate/core': join(packagesDir, 'core'),
      '@floodgate/express': join(packagesDir, 'express'),
    },
    // The framework as the user has it installed (the peer dependency).
    links: { express: join(packagesDir, 'express/node_modules/express') },
  });
}, 60_000);

afterAll(() => project.remove());

test.each([
  [
    'ESM import',
    'main.mjs',
    "import express from 'express';\nimport { rateLimit } from '@floodgate/express';\nimport { gcra } from '@floodgate/core';",
  ],
  [
    'CommonJS require',
    'main.cjs',
    "const express = require('express');\nconst { rateLimit } = require('@floodgate/express');\nconst { gcra } = require('@floodgate/core');",
  ],
])('%s serves a limited route', (_how, file, imports) => {
  const seen = JSON.parse(
    project.run(
      file,
      `${imports}
const app = express();
app.use(rateLimit({ policies: gcra({ name: 'g', limit: 2, window: '1m' }) }));
app.get('/', (req, res) => res.json({ remaining: req.rateLimit.remaining }));
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
