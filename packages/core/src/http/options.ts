/**
 * The options every HTTP adapter shares, parsed once into a fully defined config. The
 * per-request steps they all run (skip → key → cost → consume) are in check-request.ts.
 * Adapters add only what their framework needs: reading the request into an HttpRequestView,
 * writing headers and the 429.
 */

import type { ServerResponse } from 'node:http';
import type { Clock } from '../clock.js';
import type { ConcurrencyLimiter } from '../concurrency-limiter.js';
import { RateLimitConfigError } from '../errors.js';
import { configError, optionNames } from '../options.js';
import { createRateLimiter, type RateLimiter } from '../rate-limiter.js';
import {
  DEFAULT_PREFIX,
  RATE_LIMITER_OPTION_NAMES,
  type RateLimiterOptions,
  readPrefix,
} from '../rate-limiter-options.js';
import { memoryStore } from '../stores/memory.js';
import type { Store } from '../stores/store.js';
import {
  ACCESS_OPTION_NAMES,
  type AccessConfig,
  type AccessOptions,
  parseAccessOptions,
} from './access-list.js';
import { budgetOf, FirstRequestWatch, noteBudget, noteLeaseBudget } from './budget.js';
import { type HttpConcurrencyOptions, parseConcurrencyOption } from './concurrency.js';
import { type CountOption, CountWarning, parseCountOption } from './count.js';
import {
  parseHeaderOptions,
  type RateLimitHeaderConfig,
  type RateLimitHeaderOptions,
} from './header-options.js';
import { KEY_OPTION_NAMES, type KeyConfig, type KeyOptions, parseKeyOptions } from './keys.js';
import { ownOptions } from './own-options.js';
import { type PoliciesFunction, PolicySets, validateSetOptions } from './policy-sets.js';
import {
  checkSettleOption,
  parseCostOption,
  type SettleConfig,
  type SettledCost,
} from './settle.js';
import { parseShadowOption, shadowHooks } from './shadow.js';

/**
 * Options shared by `@floodgate/express` and `@floodgate/koa` (`Req` is the framework's request
 * or context, `OnLimited` its handler type). Either `limiter`, or `policies` plus the other
 * RateLimiter options (`store` defaults to `memoryStore()`; `prefix` and any other RateLimiter
 * option are passed through unchanged); and/or `concurrency`.
 */
export type HttpRateLimitOptions<Req, OnLimited = unknown, Res = ServerResponse> = KeyOptions<Req> &
  AccessOptions<Req> &
  Omit<Partial<RateLimiterOptions>, 'policies'> & {
    /**
     * The limits: a policy, an array of policies, or a function of the request that returns
     * them (per plan or tenant; one limiter per distinct set, see POLICY_SET_CACHE_SIZE).
     */
    policies?: RateLimiterOptions['policies'] | PoliciesFunction<Req>;
    /**
     * Count every request but never refuse one (no 429, no `onLimited`, no delay); decisions
     * carry `shadow: true`, and headers are off unless `headers` is given. @default false
     */
    shadow?: boolean;
    /** A ready limiter; excludes `policies`, `store` and the other RateLimiter options. */
    limiter?: RateLimiter;
    /** Header groups to send: `true` (default set), `false`, or `{ standard, legacy, retryAfter }`. @default true */
    headers?: boolean | RateLimitHeaderOptions;
    /** Requests for which this answers true are not counted and get no headers. */
    skip?: (req: Req) => boolean | Promise<boolean>;
    /**
     * Units a request takes: a non-negative integer, a function of the request, or
     * `{ estimate, actual }` to settle at the actual cost after the response (http/settle.ts).
     * @default 1
     */
    cost?: number | ((req: Req) => number | Promise<number>) | SettledCost<Req, Res>;
    /** Replaces the default 429 problem response. */
    onLimited?: OnLimited;
    /**
     * At most this many requests in flight per key (a ConcurrencyLimiter, or its options; the
     * store defaults to the rate limiter's). The slot is freed when the response finishes,
     * closes or errors.
     */
    concurrency?: ConcurrencyLimiter | HttpConcurrencyOptions;
    /**
     * Which admitted requests keep their charge: `'failed'` (status ≥ 400, aborted or errored),
     * `'succeeded'` (status < 400), or `(req, res) => boolean` (true: counts); the others are
     * refunded when the response ends (count.ts). @default 'all'
     */
    count?: CountOption<Req, Res>;
  };

/** The options the adapters read themselves (the key options aside). */
type AdapterOnlyOptions = Omit<
  HttpRateLimitOptions<unknown>,
  keyof RateLimiterOptions | keyof KeyOptions<unknown> | keyof AccessOptions<unknown>
>;

/** Names the adapters read themselves; every RateLimiter option goes to the RateLimiter. */
export const HTTP_OPTION_NAMES = [
  ...optionNames<AdapterOnlyOptions>({
    limiter: true,
    headers: true,
    skip: true,
    cost: true,
    onLimited: true,
    concurrency: true,
    count: true,
    shadow: true,
  }),
  ...KEY_OPTION_NAMES,
  ...ACCESS_OPTION_NAMES,
] as const;

/** The parsed, fully defined adapter config. */
export interface HttpRateLimitConfig<Req, OnLimited = unknown, Res = ServerResponse>
  extends KeyConfig<Req>,
    AccessConfig<Req> {
  /** Undefined when only `concurrency` was configured, or `policies` is a function. */
  readonly limiter: RateLimiter | undefined;
  /** The limiters of a `policies` function, per policy set. */
  readonly policySets: PolicySets<Req> | undefined;
  /** Count, never refuse (shadow.ts). */
  readonly shadow: boolean;
  readonly concurrency: ConcurrencyLimiter | undefined;
  readonly headers: RateLimitHeaderConfig;
  readonly skip: ((req: Req) => boolean | Promise<boolean>) | undefined;
  readonly cost: number | ((req: Req) => number | Promise<number>);
  /** `cost.actual`: settle each admitted request at its actual cost. */
  readonly settle: SettleConfig<Req, Res> | undefined;
  readonly onLimited: OnLimited | undefined;
  /** The limiter's budget (see budget.ts), for the double-count diagnostic. */
  readonly budget: string | undefined;
  /** Notices a middleware built per request. */
  readonly firstRequest: FirstRequestWatch;
  /** `count`, and its once-only warning for a count function that fails. */
  readonly count: CountOption<Req, Res>;
  readonly countWarning: CountWarning;
}

/**
 * Parses adapter options once, at construction. Unknown names, bad values and a `limiter`
 * mixed with limiter options throw RateLimitConfigError (`where` names the factory, e.g.
 * `rateLimit`).
 */
export function parseHttpRateLimitOptions<Req, OnLimited = unknown, Res = ServerResponse>(
  options: unknown,
  where: string,
  extraNames: readonly string[] = [],
): HttpRateLimitConfig<Req, OnLimited, Res> {
  const o = readAdapterOptions(options, where);
  const limiterOptions = limiterOptionsOf(o, where, [...HTTP_OPTION_NAMES, ...extraNames]);
  const shadow = parseShadowOption(o.shadow, `${where}.shadow`);
  if (shadow && limiterOptions.hooks !== undefined) {
    limiterOptions.hooks = shadowHooks(limiterOptions.hooks);
  }
  const rate = rateLimitingOf(o, limiterOptions, shadow, where);
  const { limiter, setOptions } = rate;
  const perRequest = requestFunctionsOf<Req, OnLimited, Res>(o, where);
  // A concurrency-only middleware's `prefix` names its slots' keys.
  const prefix =
    limiter?.prefix ??
    readPrefix(limiterOptions.prefix ?? setOptions?.prefix ?? DEFAULT_PREFIX, where);
  const concurrency = parseConcurrencyOption(
    o.concurrency,
    `${where}.concurrency`,
    () =>
      limiter?.store ?? rate.store ?? (limiterOptions.store as Store | undefined) ?? memoryStore(),
    limiterOptions,
    prefix,
  );
  refuseUnusedLimiterOptions(rate, limiterOptions, where);
  checkSettleOption(perRequest.settle, limiter, o.count ?? 'all', where);
  const keys = parseKeyOptions<Req>(o, where);
  if (limiter !== undefined) noteBudget(keys.diagnostics, limiter, where);
  if (concurrency !== undefined) noteLeaseBudget(keys.diagnostics, concurrency, where);
  return {
    ...keys,
    ...parseAccessOptions<Req>(o, where),
    limiter,
    policySets:
      setOptions &&
      new PolicySets(
        limiterOptions.policies as PoliciesFunction<Req>,
        setOptions,
        where,
        keys.diagnostics,
      ),
    shadow,
    concurrency,
    // In shadow mode a response says nothing about limits unless asked to.
    headers: parseHeaderOptions(
      shadow && o.headers === undefined ? false : o.headers,
      `${where}.headers`,
    ),
    ...perRequest,
    budget: limiter === undefined ? undefined : budgetOf(limiter),
    firstRequest: new FirstRequestWatch(),
    ...countOption<Req, Res>(o.count, where, limiter !== undefined || setOptions !== undefined),
  };
}

/** The options object's own properties; a factory mounted uncalled is named as such. */
function readAdapterOptions(options: unknown, where: string): Record<string, unknown> {
  if (options === null || typeof options !== 'object' || Array.isArray(options)) {
    throw configError(where, options, 'an options object');
  }
  const passed = requestKind(options);
  if (passed !== undefined) {
    // `app.use(rateLimit)`: the framework calls the factory itself with each request.
    throw new RateLimitConfigError(
      'FLOODGATE_INVALID_OPTION',
      where,
      undefined,
      `${where}() was called with ${passed} instead of options: it was mounted without being called. Write app.use(${where}({ policies: … })), not app.use(${where})`,
    );
  }
  return ownOptions(options, where);
}

/** The options that are the limiter's (every name not in `own`); unknown names throw. */
function limiterOptionsOf(
  o: Record<string, unknown>,
  where: string,
  own: readonly string[],
): Record<string, unknown> {
  const limiterOptions: Record<string, unknown> = {};
  for (const name of Object.keys(o)) {
    if (own.includes(name)) continue;
    if (!RATE_LIMITER_OPTION_NAMES.includes(name as keyof RateLimiterOptions)) {
      throw new RateLimitConfigError(
        'FLOODGATE_UNKNOWN_OPTION',
        `${where}.${name}`,
        o[name],
        `${where}.${name} is not an option (adapter options: ${own.join(', ')}; limiter options: ${RATE_LIMITER_OPTION_NAMES.join(', ')})`,
      );
    }
    if (o[name] !== undefined) limiterOptions[name] = o[name];
  }
  return limiterOptions;
}

/** How requests are rate limited: a given limiter, one built here, or one per policy set. */
interface RateLimiting {
  readonly limiter: RateLimiter | undefined;
  /** The store of a limiter built here or of the policy sets. */
  readonly store: Store | undefined;
  /** The limiter options shared by every policy set (`policies` a function). */
  readonly setOptions: Omit<RateLimiterOptions, 'policies'> | undefined;
}

/**
 * `limiter` as given (never mixed with limiter options or shadow mode), policy sets for a
 * `policies` function, else a limiter built from the limiter options; none when only
 * `concurrency` is limited.
 */
function rateLimitingOf(
  o: Record<string, unknown>,
  limiterOptions: Record<string, unknown>,
  shadow: boolean,
  where: string,
): RateLimiting {
  if (o.limiter !== undefined) {
    return {
      limiter: givenLimiter(o, limiterOptions, shadow, where),
      store: undefined,
      setOptions: undefined,
    };
  }
  if (typeof limiterOptions.policies === 'function') {
    const store = (limiterOptions.store as Store | undefined) ?? memoryStore();
    const { policies: _, ...rest } = limiterOptions;
    const setOptions = { deniedCache: defaultDeniedCache(store), ...rest, store };
    validateSetOptions(setOptions, where);
    return { limiter: undefined, store, setOptions };
  }
  if (o.concurrency === undefined || limiterOptions.policies !== undefined) {
    const store = (limiterOptions.store as Store | undefined) ?? memoryStore();
    const limiter = createRateLimiter(
      { deniedCache: defaultDeniedCache(store), ...limiterOptions, store } as RateLimiterOptions,
      where,
    );
    return { limiter, store, setOptions: undefined };
  }
  return { limiter: undefined, store: undefined, setOptions: undefined };
}

/** The `limiter` option: a RateLimiter, alone (its own hooks could not run in shadow mode). */
function givenLimiter(
  o: Record<string, unknown>,
  limiterOptions: Record<string, unknown>,
  shadow: boolean,
  where: string,
): RateLimiter {
  if (shadow) {
    throw configError(
      `${where}.shadow`,
      o.shadow,
      `used with policies, not with ${where}.limiter (whose own hooks could not tell a would-be denial from a denial)`,
    );
  }
  if (typeof (o.limiter as RateLimiter | null)?.consume !== 'function') {
    throw configError(`${where}.limiter`, o.limiter, 'a RateLimiter');
  }
  const mixed = Object.keys(limiterOptions)[0];
  if (mixed !== undefined) {
    throw new RateLimitConfigError(
      'FLOODGATE_INVALID_OPTION',
      `${where}.${mixed}`,
      limiterOptions[mixed],
      `${where}.${mixed} cannot be combined with ${where}.limiter: configure the limiter itself, or pass policies instead of a limiter`,
    );
  }
  return o.limiter as RateLimiter;
}

/** `skip`, `cost` (and its `settle`) and `onLimited`: what is asked per request. */
function requestFunctionsOf<Req, OnLimited, Res>(
  o: Record<string, unknown>,
  where: string,
): Pick<HttpRateLimitConfig<Req, OnLimited, Res>, 'skip' | 'cost' | 'settle' | 'onLimited'> {
  if (o.skip !== undefined && typeof o.skip !== 'function') {
    throw configError(`${where}.skip`, o.skip, 'a function (req) => boolean');
  }
  if (o.onLimited !== undefined && typeof o.onLimited !== 'function') {
    throw configError(`${where}.onLimited`, o.onLimited, 'a function');
  }
  const { cost, settle } = parseCostOption<Req, Res>(o.cost, where);
  return {
    skip: o.skip as HttpRateLimitConfig<Req>['skip'],
    cost,
    settle,
    onLimited: o.onLimited as OnLimited | undefined,
  };
}

/**
 * Limiter options (other than `store` and `prefix`, which also names a concurrency-only
 * middleware's slots) with neither a limiter nor policy sets to use them.
 */
function refuseUnusedLimiterOptions(
  rate: RateLimiting,
  limiterOptions: Record<string, unknown>,
  where: string,
): void {
  if (rate.limiter !== undefined || rate.setOptions !== undefined) return;
  const name = Object.keys(limiterOptions).find((n) => n !== 'store' && n !== 'prefix');
  if (name === undefined) return;
  throw configError(
    `${where}.${name}`,
    limiterOptions[name],
    'used with policies (there are none: only concurrency is limited)',
  );
}

/** `count` with its warning; it needs policies to refund. */
function countOption<Req, Res>(value: unknown, where: string, hasPolicies: boolean) {
  const count = parseCountOption<Req, Res>(value, `${where}.count`);
  if (count !== 'all' && !hasPolicies) {
    throw configError(`${where}.count`, value, 'used with policies (only concurrency is limited)');
  }
  return { count, countWarning: new CountWarning(where) };
}

/** `an HTTP request` / `a Koa context` when `value` is one (a factory mounted uncalled). */
function requestKind(value: object): string | undefined {
  const v = value as { method?: unknown; headers?: unknown; socket?: unknown; req?: unknown };
  const isRequest = (r: typeof v | undefined) =>
    r !== undefined && typeof r.method === 'string' && typeof r.headers === 'object' && !!r.socket;
  // A Koa context delegates method, headers and socket to its request: test it first.
  if (typeof v.req === 'object' && isRequest(v.req as typeof v)) return 'a Koa context';
  if (isRequest(v)) return 'an HTTP request';
  return undefined;
}

/**
 * The adapters turn the local cache of denied keys on for a shared (Redis) store: a flood from
 * one key then costs one Redis call per retry window instead of one per request (measured
 * 26–48× more denied decisions per second, no measurable cost on admitted traffic; see
 * docs/benchmarks.md). Its countdown runs on the store's clock when one is injected. In memory
 * there is no round trip to save, so it stays off. `deniedCache: false` turns it off.
 */
function defaultDeniedCache(store: Store): RateLimiterOptions['deniedCache'] {
  if (store.kind !== 'redis') return false;
  const clock = (store as { clock?: Clock }).clock;
  return clock ? { clock } : true;
}
