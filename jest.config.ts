import type { Config } from 'jest';

// One jest run for the whole workspace. Sources are transformed by swc (TypeScript 7 has no
// JS API, so ts-jest is out); `tsc --noEmit` does the type checking separately.
const swc = [
  '@swc/jest',
  {
    jsc: {
      parser: { syntax: 'typescript', decorators: true },
      transform: { legacyDecorator: true, decoratorMetadata: true },
      target: 'es2022',
    },
    module: { type: 'commonjs' },
  },
] as const;

/** What every project of the run shares. */
const base = {
  rootDir: '.',
  testEnvironment: 'node',
  transform: { '^.+\\.(t|j)sx?$': swc as unknown as [string, Record<string, unknown>] },
  // NestJS 12 (and content-disposition, quick-lru) ship ESM only, and mercurius loads quick-lru
  // with import(): swc turns them into CommonJS like our sources.
  transformIgnorePatterns: [
    '/node_modules/(?!(\\.pnpm/)?(fast-check|pure-rand|@nestjs|content-disposition|mercurius|quick-lru))',
  ],
  moduleNameMapper: {
    '^@floodgate/(core|express|fastify|koa|nestjs|opentelemetry)$':
      '<rootDir>/packages/$1/src/index.ts',
    '^@floodgate/core/http$': '<rootDir>/packages/core/src/http/index.ts',
    '^@floodgate/redis-server$': '<rootDir>/tools/redis-server/src/index.ts',
    '^@floodgate/http-test-kit$': '<rootDir>/tools/http-test-kit/src/index.ts',
    '^(\\.{1,2}/.*)\\.js$': '$1',
  },
};

const config: Config = {
  projects: [
    {
      ...base,
      displayName: 'floodgate',
      testMatch: [
        '<rootDir>/packages/*/test/**/*.test.ts',
        '<rootDir>/packages/*/src/**/*.test.ts',
        '<rootDir>/examples/*/test/**/*.test.ts',
        // Smoke tests of the packed packages, installed as a user gets them (test/harness/packed.ts).
        '<rootDir>/test/packed/**/*.test.ts',
      ],
    },
    {
      // @floodgate/nestjs's HTTP suites again on NestJS 11 (the root devDependencies): the peer
      // range covers 11 and 12, and packages/nestjs develops against 12.
      ...base,
      displayName: 'nestjs-11',
      testMatch: [
        '<rootDir>/packages/nestjs/test/rate-limit.{config,e2e,features,protection}.test.ts',
      ],
      moduleNameMapper: {
        '^@nestjs/(common|core|testing|platform-express|platform-fastify)(/.*)?$':
          '<rootDir>/node_modules/@nestjs/$1$2',
        ...base.moduleNameMapper,
      },
    },
  ],
  globalSetup: '<rootDir>/test/harness/global-setup.ts',
  globalTeardown: '<rootDir>/test/harness/global-teardown.ts',
  testTimeout: 30_000,
  // Two cores: more workers only add contention with the redis-server under test.
  maxWorkers: 2,
};

export default config;
