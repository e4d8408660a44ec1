/**
 * Parses module options and `@RateLimit` options once, into fully defined values. Errors are
 * the core's RateLimitConfigError; those about a decorator name the controller and handler.
 */
import {
  fixedWindow,
  memoryStore,
  type Policy,
  RateLimitConfigError,
  type RateLimiter,
  type RateLimiterOptions,
  type Store,
} from '@floodgate/core';
import {
  configError,
  createRateLimiter,
  emitWarning,
  KEY_OPTION_NAMES,
  type KeyConfig,
  type KeyOptions,
  optionNames,
  ownOptions,
  parseHeaderOptions,
  parseKeyOptions,
  RATE_LIMITER_OPTION_NAMES,
  type RateLimitHeaderConfig,
  readAs,
  readOptions,
} from '@floodgate/core/http';
import type { ExecutionContext } from '@nestjs/common';
import type {
  RateLimitCost,
  RateLimitKey,
  RateLimitModuleOptions,
  RateLimitPoliciesOptions,
  RateLimitScope,
  RateLimitWindowOptions,
} from './rate-limit.interfaces.js';

/** The module's options, parsed. */
export interface RateLimitConfig {
  readonly store: Store;
  /** Policies of every guarded handler; undefined: none. */
  readonly policies: readonly Policy[] | undefined;
  readonly scope: RateLimitScope;
  readonly skip: ((context: ExecutionContext) => boolean | Promise<boolean>) | undefined;
  readonly errorMessage: RateLimitModuleOptions['errorMessage'];
  readonly onMissingPrincipal: 'error' | 'fallback';
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
  readonly scope: RateLimitScope;
  readonly override: boolean;
}

/** @default 'route' */
export const DEFAULT_SCOPE: RateLimitScope = 'route';
const SCOPES: readonly string[] = ['route', 'controller', 'global'];

/** @default 'Too Many Requests' */
export const DEFAULT_ERROR_MESSAGE = 'Too Many Requests';

let warnedDefaultStore = false;

/** The module options that are neither a key option nor passed on to each RateLimiter. */
type ModuleOnlyOptions = Omit<
  RateLimitModuleOptions,
  | Exclude<keyof RateLimiterOptions, 'store' | 'policies'>
  | keyof KeyOptions<unknown>
  | 'global'
  | 'mode'
>;

/** Names the module reads itself; every RateLimiter option goes to each RateLimiter. */
const MODULE_OPTION_NAMES: readonly string[] = [
  ...optionNames<ModuleOnlyOptions>({
    store: true,
    policies: true,
    headers: true,
    scope: true,
    skip: true,
    errorMessage: true,
    onMissingPrincipal: true,
  }),
  ...KEY_OPTION_NAMES,
];

/** Every name `@RateLimit(...)` takes, checked against its two shapes. */
const RATE_LIMIT_OPTION_NAMES = optionNames<RateLimitWindowOptions & RateLimitPoliciesOptions>({
  limit: true,
  window: true,
  name: true,
  anchor: true,
  policies: true,
  key: true,
  cost: true,
  scope: true,
  override: true,
});

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
  // Own properties only: a polluted Object.prototype must not configure the module.
  const o = ownOptions(options, where);
  if (!allowGlobal && o.global !== undefined) {
    throw new RateLimitConfigError(
      'FLOODGATE_UNKNOWN_OPTION',
      `${where}.global`,
      o.global,
      `${where}.global is not read here: pass global to RateLimitModule.forRootAsync({ global, ... }) itself`,
    );
  }
  if (!allowGlobal && o.mode !== undefined) {
    throw new RateLimitConfigError(
      'FLOODGATE_UNKNOWN_OPTION',
      `${where}.mode`,
      o.mode,
      `${where}.mode is not read here: pass mode to RateLimitModule.forRootAsync({ mode, ... }) itself`,
    );
  }
  let store = o.store as Store | undefined;
  if (store === undefined) {
    store = memoryStore();
    if (!warnedDefaultStore) {
      warnedDefaultStore = true;
      emitWarning(
        'FLOODGATE_DEFAULT_MEMORY_STORE',
        `${where} has no store, so it counts in this process's memory (memoryStore()): every ` +
          'process keeps its own counts. Give store: redisStore({ client }) to share them.',
      );
    }
  }
  if (store === null || typeof store !== 'object' || typeof store.prepare !== 'function') {
    throw configError(
      `${where}.store`,
      o.store,
      'a store: memoryStore() or redisStore({ client })',
    );
  }
  const scope = readScope(o.scope, `${where}.scope`);
  if (o.skip !== undefined && typeof o.skip !== 'function') {
    throw configError(`${where}.skip`, o.skip, 'a function (context) => boolean');
  }
  if (
    o.errorMessage !== undefined &&
    typeof o.errorMessage !== 'function' &&
    (typeof o.errorMessage !== 'string' || o.errorMessage === '')
  ) {
    throw configError(
      `${where}.errorMessage`,
      o.errorMessage,
      'a non-empty string or a function (context, decision) => string',
    );
  }
  const onMissingPrincipal = o.onMissingPrincipal ?? 'error';
  if (onMissingPrincipal !== 'error' && onMissingPrincipal !== 'fallback') {
    throw configError(`${where}.onMissingPrincipal`, o.onMissingPrincipal, "'error' or 'fallback'");
  }
  const own = [...MODULE_OPTION_NAMES, ...(allowGlobal ? ['global', 'mode'] : [])];
  const limiterOptions: Record<string, unknown> = {};
  const keyOptions: Record<string, unknown> = {};
  for (const name of Object.keys(o)) {
    if (o[name] === undefined || name === 'global' || name === 'mode') continue;
    if (KEY_OPTION_NAMES.includes(name as never)) keyOptions[name] = o[name];
    else if (RATE_LIMITER_OPTION_NAMES.includes(name as keyof RateLimiterOptions)) {
      if (!own.includes(name)) limiterOptions[name] = o[name];
    } else if (!own.includes(name)) {
      throw new RateLimitConfigError(
        'FLOODGATE_UNKNOWN_OPTION',
        `${where}.${name}`,
        o[name],
        `${where}.${name} is not an option (module options: ${own.join(', ')}; limiter options: ${RATE_LIMITER_OPTION_NAMES.filter((n) => !own.includes(n)).join(', ')})`,
      );
    }
  }
  // A limiter validates the policies and the limiter options exactly as it will use them, and
  // names its fields under this module's name.
  const probe = buildLimiter(store, o.policies ?? PROBE_POLICY, limiterOptions, where);
  return {
    store,
    policies: o.policies === undefined ? undefined : probe.policies,
    scope,
    skip: o.skip as RateLimitConfig['skip'],
    errorMessage: o.errorMessage as RateLimitConfig['errorMessage'],
    onMissingPrincipal,
    keys: parseKeyOptions<ExecutionContext>(keyOptions, where),
    keyOptions: Object.freeze(keyOptions),
    headers: parseHeaderOptions(o.headers, `${where}.headers`),
    limiterOptions: Object.freeze(limiterOptions),
  };
}

/** Reads `@RateLimit(...)` options; `where` names the controller or `Controller.handler`. */
export function parseRateLimitOptions(options: unknown, where: string): ParsedRateLimit {
  const field = `@RateLimit(${where})`;
  const o = readOptions(options, field, RATE_LIMIT_OPTION_NAMES);
  const shorthand = ['limit', 'window', 'name', 'anchor'].filter((n) => o[n] !== undefined);
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
    const window = {
      limit: o.limit,
      window: o.window,
      name: o.name,
      anchor: o.anchor,
    } as Parameters<typeof fixedWindow>[0];
    policies = [readAs(window, field, () => fixedWindow(window))];
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
  if (o.override !== undefined && typeof o.override !== 'boolean') {
    throw configError(`${field}.override`, o.override, 'a boolean');
  }
  return {
    policies,
    key: o.key as RateLimitKey | undefined,
    cost: cost as RateLimitCost,
    scope: readScope(o.scope, `${field}.scope`),
    override: o.override === true,
  };
}

function readScope(value: unknown, field: string): RateLimitScope {
  if (value === undefined) return DEFAULT_SCOPE;
  if (!SCOPES.includes(value as string)) {
    throw configError(field, value, "'route', 'controller' or 'global'");
  }
  return value as RateLimitScope;
}

/**
 * A limiter over `policies` with the module's limiter options; its configuration errors name
 * fields under `where` (the module, or the `@RateLimit(...)` that gave the policies).
 */
export function buildLimiter(
  store: Store,
  policies: unknown,
  limiterOptions: Readonly<Record<string, unknown>>,
  where: string,
): RateLimiter {
  return createRateLimiter({ ...limiterOptions, store, policies } as RateLimiterOptions, where);
}
