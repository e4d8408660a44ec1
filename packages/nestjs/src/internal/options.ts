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
  type AccessConfig,
  configError,
  createRateLimiter,
  emitWarning,
  KEY_OPTION_NAMES,
  type KeyConfig,
  type KeyOptions,
  optionNames,
  ownOptions,
  parseAccessOptions,
  parseHeaderOptions,
  parseKeyOptions,
  RATE_LIMITER_OPTION_NAMES,
  type RateLimitHeaderConfig,
} from '@floodgate/core/http';
import type { ExecutionContext } from '@nestjs/common';
import type {
  RateLimitCount,
  RateLimitModuleOptions,
  RateLimitPolicyFunction,
  RateLimitScope,
} from '../rate-limit.interfaces.js';
import { readCount, readScope, readShadow } from './readers.js';

/** The module's options, parsed. */
export interface RateLimitConfig {
  readonly store: Store;
  /** Policies of every guarded handler; undefined: none (or `dynamic`). */
  readonly policies: readonly Policy[] | undefined;
  /** `policies` given as a function: chosen per request. */
  readonly dynamic: RateLimitPolicyFunction | undefined;
  /** The module policies' `count`, and every `@RateLimit`'s default. */
  readonly count: RateLimitCount;
  /** The module policies' `shadow`, and every `@RateLimit`'s default. */
  readonly shadow: boolean;
  /** Whether `headers` was given (shadow sets send headers only then). */
  readonly headersGiven: boolean;
  /** `allow` and `deny`, parsed (with the key options' `ipHeader` rules). */
  readonly access: AccessConfig<ExecutionContext> & {
    readonly ipHeaders: KeyConfig<unknown>['ipHeaders'];
    readonly diagnostics: KeyConfig<unknown>['diagnostics'];
  };
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
    count: true,
    shadow: true,
    allow: true,
    deny: true,
  }),
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
  // Own properties only: a polluted Object.prototype must not configure the module.
  const o = ownOptions(options, where);
  if (!allowGlobal) refuseForRootAsyncOnly(o, where);
  const store = moduleStore(o, where);
  const scope = readScope(o.scope, `${where}.scope`);
  const { skip, errorMessage, onMissingPrincipal } = readGuardOptions(o, where);
  const { limiterOptions, keyOptions } = splitModuleOptions(o, where, allowGlobal);
  // A limiter validates the policies and the limiter options exactly as it will use them, and
  // names its fields under this module's name.
  const dynamic =
    typeof o.policies === 'function' ? (o.policies as RateLimitPolicyFunction) : undefined;
  const fixed = dynamic === undefined ? o.policies : undefined;
  const probe = buildLimiter(store, fixed ?? PROBE_POLICY, limiterOptions, where);
  const keys = parseKeyOptions<ExecutionContext>(keyOptions, where);
  return {
    store,
    access: {
      ...parseAccessOptions<ExecutionContext>(o, where),
      ipHeaders: keys.ipHeaders,
      // The proxy checks run on address lists whatever the key (a forgeable allowlist).
      diagnostics: keys.diagnostics,
    },
    policies: fixed === undefined ? undefined : probe.policies,
    dynamic,
    count: readCount(o.count, `${where}.count`) ?? 'all',
    shadow: readShadow(o.shadow, `${where}.shadow`) ?? false,
    headersGiven: o.headers !== undefined,
    scope,
    skip,
    errorMessage,
    onMissingPrincipal,
    keys,
    keyOptions: Object.freeze(keyOptions),
    headers: parseHeaderOptions(o.headers, `${where}.headers`),
    limiterOptions: Object.freeze(limiterOptions),
  };
}

/** `global` and `mode` from a `forRootAsync` factory: they are read by forRootAsync itself. */
function refuseForRootAsyncOnly(o: Record<string, unknown>, where: string): void {
  for (const name of ['global', 'mode'] as const) {
    if (o[name] === undefined) continue;
    throw new RateLimitConfigError(
      'FLOODGATE_UNKNOWN_OPTION',
      `${where}.${name}`,
      o[name],
      `${where}.${name} is not read here: pass ${name} to RateLimitModule.forRootAsync({ ${name}, ... }) itself`,
    );
  }
}

/** The module's store; without one, this process's memory (reported once). */
function moduleStore(o: Record<string, unknown>, where: string): Store {
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
  return store;
}

/** What the guard asks per request: `skip`, `errorMessage`, `onMissingPrincipal`. */
function readGuardOptions(
  o: Record<string, unknown>,
  where: string,
): Pick<RateLimitConfig, 'skip' | 'errorMessage' | 'onMissingPrincipal'> {
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
  return {
    skip: o.skip as RateLimitConfig['skip'],
    errorMessage: o.errorMessage as RateLimitConfig['errorMessage'],
    onMissingPrincipal,
  };
}

/** The key options and the limiter options among the module's; unknown names throw. */
function splitModuleOptions(
  o: Record<string, unknown>,
  where: string,
  allowGlobal: boolean,
): { limiterOptions: Record<string, unknown>; keyOptions: Record<string, unknown> } {
  const own = [...MODULE_OPTION_NAMES, ...(allowGlobal ? ['global', 'mode'] : [])];
  const limiterOptions: Record<string, unknown> = {};
  const keyOptions: Record<string, unknown> = {};
  for (const name of Object.keys(o)) {
    if (o[name] === undefined || name === 'global' || name === 'mode') continue;
    // Module policies are shared across routes by policy key (buildLimiter): never one key per set.
    if (name === 'stateKeys' && o[name] !== 'per-policy') {
      throw configError(
        `${where}.stateKeys`,
        o[name],
        "'per-policy' (NestJS shares module policies across routes)",
      );
    }
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
  return { limiterOptions, keyOptions };
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
  // One key per policy: a module policy is one budget across every route's limiter that holds
  // it, and RateLimitService.reset(…, { policy }) resets just that policy (redisStore would
  // otherwise keep each route's set of policies in one key of its own).
  return createRateLimiter(
    { ...limiterOptions, stateKeys: 'per-policy', store, policies } as RateLimiterOptions,
    where,
  );
}
