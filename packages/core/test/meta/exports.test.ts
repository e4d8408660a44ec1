/**
 * The root entry of @floodgate/core is the documented API (DESIGN.md §3): the limiters, the
 * policy factories, the stores, their option and decision types, and the errors. Adapter
 * helpers live at `@floodgate/core/http`; engine internals stay unexported. This list makes a
 * new public name a decision: add it here, and to the README, on purpose.
 */
import { join } from 'node:path';
import ts from 'typescript';
import * as root from '../../src/index';

/** Values: what `import { … } from '@floodgate/core'` gives at run time. */
const VALUES = [
  'AdaptiveConcurrency',
  'adaptiveConcurrency',
  'ConcurrencyLimiter',
  'RateLimitArgumentError',
  'RateLimitConfigError',
  'RateLimiter',
  'RateLimitStoreError',
  'fixedWindow',
  'gcra',
  'leakyBucket',
  'memoryStore',
  'redisStore',
  'slidingLog',
  'slidingWindow',
  'smoothBursty',
  'smoothWarmingUp',
  'tokenBucket',
];

/** Types: the options, decisions and error codes of the values above. */
const TYPES = [
  'AdaptiveConcurrencyOptions',
  'AdaptiveDecision',
  'AdaptiveLease',
  'AimdOptions',
  'Criticality',
  'EventLoopOptions',
  'FleetOptions',
  'FleetReserve',
  'Gradient2Options',
  'ReleaseOptions',
  'SheddingOptions',
  'VegasOptions',
  // Live limits (setLimit, getLimit, clearLimit).
  'Carry',
  'ClearLimitOptions',
  'EffectiveLimit',
  'LimitOverride',
  'SetLimitOptions',
  'AcquireOptions',
  'BlockDuration',
  'CallContext',
  'CircuitBreakerOptions',
  'CircuitState',
  'Clock',
  'ConcurrencyAcquireOptions',
  'ConcurrencyDecision',
  'ConcurrencyLimiterOptions',
  'ConsumeOptions',
  'Decision',
  'DecisionReason',
  'DeniedCacheOptions',
  'Duration',
  'FallbackLimiter',
  'FixedWindowOptions',
  'HotKey',
  'HotKeysOptions',
  'GcraOptions',
  'LeakyBucketOptions',
  'Lease',
  'LeaseOption',
  'LeaseOptions',
  'MemoryStoreOptions',
  'OnStoreError',
  'Policy',
  'PolicyDecision',
  'RateLimitConfigErrorCode',
  'RateLimiterHooks',
  'RateLimiterOptions',
  'RedisStoreOptions',
  'Reservation',
  'SetOptions',
  'SlidingLogOptions',
  'SlidingWindowOptions',
  'SmoothBurstyOptions',
  'SmoothWarmingUpOptions',
  'StateKeys',
  'Store',
  'StoreCallEvent',
  'StoreErrorEvent',
  'StoreFailure',
  'TokenBucketOptions',
];

const sorted = (names: Iterable<string>) => [...names].sort((a, b) => a.localeCompare(b));

/** Every name the entry file exports (values and types), as the compiler sees it. */
function compiledExports(entry: string): string[] {
  const program = ts.createProgram([entry], {
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    target: ts.ScriptTarget.ES2022,
    noEmit: true,
    skipLibCheck: true,
    types: ['node'],
  });
  const checker = program.getTypeChecker();
  const file = program.getSourceFile(entry);
  if (file === undefined) throw new Error(`cannot read ${entry}`);
  const module = checker.getSymbolAtLocation(file);
  if (module === undefined) throw new Error(`${entry} is not a module`);
  return checker.getExportsOfModule(module).map((symbol) => symbol.name);
}

describe('@floodgate/core root entry', () => {
  it('exports exactly the documented values', () => {
    expect(sorted(Object.keys(root))).toEqual(sorted(VALUES));
  });

  it('exports exactly the documented values and types', () => {
    const names = compiledExports(join(__dirname, '../../src/index.ts'));
    expect(sorted(names)).toEqual(sorted([...VALUES, ...TYPES]));
  });

  it('keeps engine internals and adapter helpers out', () => {
    const names = new Set(Object.keys(root));
    for (const internal of ['SCRIPTS', 'ENGINE_SCRIPT', 'scriptFor', 'ALGORITHMS', 'configError']) {
      expect(names.has(internal)).toBe(false);
    }
    for (const helper of ['checkHttpRequest', 'parseHttpRateLimitOptions', 'resolveKey']) {
      expect(names.has(helper)).toBe(false);
    }
  });
});

describe('@floodgate/core/http subpath', () => {
  it('is published next to the root entry and holds the adapter helpers', async () => {
    const pkg = require('../../package.json') as {
      exports: Record<string, Record<string, string>>;
    };
    expect(JSON.stringify(pkg.exports['./http'])).toMatch(/"\.\/dist\/(.+\/)?http\/index\.d\.ts"/);
    const http = await import('@floodgate/core/http');
    expect(typeof http.checkHttpRequest).toBe('function');
    expect(typeof http.parseHttpRateLimitOptions).toBe('function');
  });
});

describe('@floodgate/core/testing subpath', () => {
  it('publishes the store kit without importing a test runner', async () => {
    const pkg = require('../../package.json') as {
      exports: Record<string, Record<string, string>>;
    };
    expect(JSON.stringify(pkg.exports['./testing'])).toMatch(
      /"\.\/dist\/(.+\/)?testing\/index\.d\.ts"/,
    );
    const testing = await import('@floodgate/core/testing');
    expect(typeof testing.runScenario).toBe('function');
    expect(typeof testing.runDifferential).toBe('function');
    expect(testing.CONFORMANCE_SCENARIOS.length).toBeGreaterThan(50);
    const { readFileSync, readdirSync } = await import('node:fs');
    const { join } = await import('node:path');
    const dir = join(__dirname, '../../src/testing');
    const files = readdirSync(dir, { recursive: true, encoding: 'utf8' }).filter((f) =>
      f.endsWith('.ts'),
    );
    for (const file of files) {
      expect(readFileSync(join(dir, file), 'utf8')).not.toMatch(
        /from '(jest|@jest\/|vitest|fast-check)/,
      );
    }
  });
});
