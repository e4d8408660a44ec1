/**
 * TypeScript users of the packed packages: the same program type-checks under `module` nodenext
 * and node16, from ES modules and from CommonJS, and under the node10 resolution of
 * `module: commonjs` projects. An expected type error proves the types are real, not `any`.
 * The first setup also checks every declaration file (skipLibCheck off, so ours are checked);
 * the others skip that (it costs ~20 s of CPU each, in third-party types).
 */
import { join } from 'node:path';
import { type PackedInstall, type PackedProject, packedInstall } from '../harness/packed';

let install: PackedInstall;

beforeAll(() => {
  install = packedInstall();
}, 240_000);

const PROGRAM = `import express from 'express';
import { type Decision, RateLimiter, gcra, memoryStore } from '@floodgate/core';
import { parseKeyOptions } from '@floodgate/core/http';
import { rateLimit } from '@floodgate/express';
import { rateLimit as fastifyRateLimit } from '@floodgate/fastify';
import { rateLimit as koaRateLimit } from '@floodgate/koa';
import Fastify from 'fastify';
import { RateLimit, RateLimitGuard, RateLimitModule } from '@floodgate/nestjs';
import { floodgateMetrics } from '@floodgate/opentelemetry';

const limiter = new RateLimiter({
  store: memoryStore(),
  policies: gcra({ limit: 2, window: '1s' }),
  hooks: floodgateMetrics({ limiter: 'ts' }).hooks,
});
export async function check(key: string): Promise<boolean> {
  const decision: Decision = await limiter.consume(key);
  return decision.allowed;
}

const app = express();
app.use(rateLimit({ policies: gcra({ limit: 10, window: '1m' }) }));
app.get('/', (req, res) => {
  const remaining: number | undefined = req.rateLimit?.remaining;
  res.json({ remaining });
});
export const koaMiddleware = koaRateLimit({ limiter });
export async function fastifyApp() {
  const fastify = Fastify();
  await fastify.register(fastifyRateLimit, { limiter, hook: 'preHandler' });
  fastify.get('/', { config: { rateLimit: false } }, async (request) => request.rateLimit?.remaining);
  return fastify;
}
export const exported = [parseKeyOptions, RateLimit, RateLimitGuard, RateLimitModule.forRoot];

// @ts-expect-error limit is a number: the types are real, not any
gcra({ limit: 'ten', window: '1s' });
`;

const setups: [
  string,
  { type?: string; file: string; compilerOptions: Record<string, unknown> },
][] = [
  [
    'nodenext, ES module, declaration files checked',
    {
      type: 'module',
      file: 'main.ts',
      compilerOptions: { module: 'nodenext', skipLibCheck: false },
    },
  ],
  [
    'nodenext, CommonJS',
    { type: 'commonjs', file: 'main.ts', compilerOptions: { module: 'nodenext' } },
  ],
  [
    'node16, ES module',
    { type: 'module', file: 'main.mts', compilerOptions: { module: 'node16' } },
  ],
  [
    'node16, CommonJS',
    { type: 'commonjs', file: 'main.cts', compilerOptions: { module: 'node16' } },
  ],
  [
    'node10 resolution (module commonjs)',
    { file: 'main.ts', compilerOptions: { module: 'commonjs', moduleResolution: 'node10' } },
  ],
];

test.each(setups)('%s', (label, setup) => {
  const project: PackedProject = install.project(`ts-${label.replace(/\W+/g, '-')}`, {
    'package.json': JSON.stringify({ private: true, ...(setup.type ? { type: setup.type } : {}) }),
    [setup.file]: PROGRAM,
    'tsconfig.json': JSON.stringify({
      compilerOptions: {
        target: 'ES2022',
        strict: true,
        esModuleInterop: true,
        skipLibCheck: true,
        noEmit: true,
        types: ['node'],
        ...setup.compilerOptions,
      },
      files: [setup.file],
    }),
  });
  const tsc = join(install.dir, 'node_modules/typescript/bin/tsc');
  project.exec(process.execPath, [tsc, '-p', 'tsconfig.json']);
  project.remove();
});
