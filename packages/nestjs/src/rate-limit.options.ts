/**
 * Parses module options and `@RateLimit` options once, into fully defined values. Errors are
 * the core's RateLimitConfigError; those about a decorator name the controller and handler.
 */
import {
  fixedWindow,
  type Policy,
  RateLimitConfigError,
  RateLimiter,
  type RateLimiterOptions,
  type Store,
} from '@floodgate/core';
import {
  configError,
  KEY_OPTION_NAMES,
  type KeyConfig,
  parseHeaderOptions,
  parseKeyOptions,
  type RateLimitHeaderConfig,
  readOptions,
} from '@floodgate/core/http';
import type { ExecutionContext } from '@nestjs/common';
import type { RateLimitCost, RateLimitKey } from './rate-limit.interfaces.js';

/** The module's options, parsed. */
export interface RateLimitConfig {
  readonly store: Store;
  /** Policies of guarded routes without `@RateLimit`; undefined leaves them unlimited. */
  readonly policies: readonly Policy[] | undefined;
  readonly keys: KeyConfig<ExecutionContext>;
  /** The key options as given, under each decorator's own `key`. */
  readonly keyOptions: Readonly<Record<string, unknown>>;
  readonly headers: RateLimitHeaderConfig;
  /** `prefix`, `onStoreError`, `timeout`, `circuitBreaker`, `hooks`: given to every limiter. */
  readonly limiterOptions: Readonly<Partial<RateLimiterOptions>>;
}

/** One `@RateLimit(...)`, parsed. */
export interface ParsedRateLimit {
  readonly policies: readonly Policy[];
  readonly key: RateLimitKey | undefined;
  readonly cost: RateLimitCost;
}

/** Names the module reads itself; every other name goes to each RateLimiter. */
const MODULE_OPTION_NAMES: readonly string[] = [
  'store',
  'policies',
  'headers',
  ...KEY_OPTION_NAMES,
];

// Only used to validate limiter options when the module has no policies of its own.
const PROBE_POLICY = fixedWindow({ limit: 1, window: 1000 });

/**
 * Reads `forRoot` options (`global` included) or what a `forRootAsync` factory returned
 * (`global` must be given to `forRootAsync` itself: the guard is registered before any
 * factory runs).
 */
export function parseModuleOptions(
  options: unknown,
  where: string,
  allowGlobal: boolean,
): RateLimitConfig {
  if (options === null || typeof options !== 'object' || Array.isArray(options)) {
    throw configError(where, options, 'an options object');
  }
  const o = options as Record<string, unknown>;
  if (!allowGlobal && o.global !== undefined) {
    throw new RateLimitConfigError(
      'FLOODGATE_UNKNOWN_OPTION',
      `${where}.global`,
      o.global,
      `${where}.global is not read here: pass global to RateLimitModule.forRootAsync({ global, ... }) itself`,
    );
  }
  const store = o.store as Store | undefined;
  if (store === null || typeof store !== 'object' || typeof store.prepare !== 'function') {
    throw configError(
      `${where}.store`,
      o.store,
      'a store: memoryStore() or redisStore({ client })',
    );
  }
  const limiterOptions: Record<string, unknown> = {};
  const keyOptions: Record<string, unknown> = {};
  for (const name of Object.keys(o)) {
    if (o[name] === undefined || name === 'global') continue;
    if (KEY_OPTION_NAMES.includes(name as never)) keyOptions[name] = o[name];
    else if (!MODULE_OPTION_NAMES.includes(name)) limiterOptions[name] = o[name];
  }
  // A limiter validates the policies and the limiter options exactly as it will use them; an
  // unknown name is reported by it, under this module's name.
  let probe: RateLimiter;
  try {
    probe = rethrow(where, 'RateLimiter', () =>
      buildLimiter(store, o.policies ?? PROBE_POLICY, limiterOptions),
    );
  } catch (error) {
    if (!(error instanceof RateLimitConfigError) || error.code !== 'FLOODGATE_UNKNOWN_OPTION') {
      throw error;
    }
    // The limiter knows only its own names; list the module's too.
    const own = [...MODULE_OPTION_NAMES, ...(allowGlobal ? ['global'] : [])];
    const limiterNames = /\(known: ([^)]*)\)/.exec(error.message)?.[1] ?? '';
    throw new RateLimitConfigError(
      error.code,
      error.field,
      error.value,
      `${error.field} is not an option (module options: ${own.join(', ')}; limiter options: ${limiterNames})`,
      { cause: error },
    );
  }
  return {
    store,
    policies: o.policies === undefined ? undefined : probe.policies,
    keys: parseKeyOptions<ExecutionContext>(keyOptions, where),
    keyOptions: Object.freeze(keyOptions),
    headers: parseHeaderOptions(o.headers, `${where}.headers`),
    limiterOptions: Object.freeze(limiterOptions),
  };
}

/** Reads `@RateLimit(...)` options; `where` names the controller or `Controller.handler`. */
export function parseRateLimitOptions(options: unknown, where: string): ParsedRateLimit {
  const field = `@RateLimit(${where})`;
  const o = readOptions(options, field, ['limit', 'window', 'name', 'policies', 'key', 'cost']);
  const shorthand = ['limit', 'window', 'name'].filter((n) => o[n] !== undefined);
  let policies: readonly Policy[];
  if (o.policies !== undefined) {
    if (shorthand.length > 0) {
      throw new RateLimitConfigError(
        'FLOODGATE_INVALID_OPTION',
        `${field}.${shorthand[0]}`,
        o[shorthand[0]!],
        `${field}: give either { limit, window } (one fixed window) or { policies }, not both`,
      );
    }
    policies = (Array.isArray(o.policies) ? o.policies : [o.policies]) as Policy[];
  } else if (shorthand.length > 0) {
    const window = { limit: o.limit, window: o.window, name: o.name } as Parameters<
      typeof fixedWindow
    >[0];
    policies = [rethrow(field, 'fixedWindow', () => fixedWindow(window))];
  } else {
    throw new RateLimitConfigError(
      'FLOODGATE_NO_POLICIES',
      `${field}.limit`,
      undefined,
      `${field} needs { limit, window } (one fixed window) or { policies: [...] }`,
    );
  }
  const cost = o.cost === undefined ? 1 : o.cost;
  if (
    typeof cost !== 'function' &&
    (typeof cost !== 'number' || !Number.isSafeInteger(cost) || cost < 0)
  ) {
    throw configError(
      `${field}.cost`,
      cost,
      'a non-negative integer or a function (context) => number',
    );
  }
  return { policies, key: o.key as RateLimitKey | undefined, cost: cost as RateLimitCost };
}

/** A limiter over `policies` with the module's limiter options. */
export function buildLimiter(
  store: Store,
  policies: unknown,
  limiterOptions: Readonly<Record<string, unknown>>,
): RateLimiter {
  return new RateLimiter({ ...limiterOptions, store, policies } as RateLimiterOptions);
}

/**
 * Runs `make`; a RateLimitConfigError about `inner` (e.g. `fixedWindow.limit`) is rethrown
 * about `where` (e.g. `@RateLimit(DevicesController.list).limit`).
 */
export function rethrow<T>(where: string, inner: string, make: () => T): T {
  try {
    return make();
  } catch (error) {
    if (!(error instanceof RateLimitConfigError)) throw error;
    const field = error.field.startsWith(inner)
      ? where + error.field.slice(inner.length)
      : `${where}.${error.field}`;
    const message = error.message.split(`${inner}.`).join(`${where}.`);
    throw new RateLimitConfigError(
      error.code,
      field,
      error.value,
      message.includes(where) ? message : `${where}: ${message}`,
      { cause: error },
    );
  }
}
