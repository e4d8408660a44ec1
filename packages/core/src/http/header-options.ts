/**
 * The `headers` option of every adapter: which header groups to send, and in which IETF draft's
 * format, parsed once into a fully defined config.
 */
import { configError, optionNames, readOptions } from '../options.js';

/**
 * The IETF draft whose header format `standard` sends:
 * - `'draft-10'` (default): `RateLimit-Policy: "name";q=100;w=60` and `RateLimit: "name";r=99;t=60`,
 *   one Item per policy (draft-ietf-httpapi-ratelimit-headers-10);
 * - `'draft-8'`: the same named policies plus a `pk` partition key (a hash of the client's key),
 *   as express-rate-limit sends them;
 * - `'draft-7'`: `RateLimit-Policy: 100;w=60` and one combined `RateLimit: limit=100, remaining=99,
 *   reset=60` (a Dictionary) for the policy that decided;
 * - `'draft-6'`: `RateLimit-Policy: 100;w=60` and `RateLimit-Limit`, `RateLimit-Remaining`,
 *   `RateLimit-Reset` for the policy that decided.
 */
export type RateLimitHeaderDraft = 'draft-10' | 'draft-8' | 'draft-7' | 'draft-6';

/** The drafts `headers.standard` accepts. */
export const HEADER_DRAFTS: readonly RateLimitHeaderDraft[] = Object.freeze([
  'draft-10',
  'draft-8',
  'draft-7',
  'draft-6',
]);

/**
 * Names for the legacy headers (koa-ratelimit's `headers: { remaining, reset, total }`); a name
 * left out keeps its `X-RateLimit-*` default.
 */
export interface LegacyHeaderNames {
  /** @default 'X-RateLimit-Limit' */
  limit?: string;
  /** @default 'X-RateLimit-Remaining' */
  remaining?: string;
  /** @default 'X-RateLimit-Reset' */
  reset?: string;
}

/** The default legacy header names. */
export const DEFAULT_LEGACY_HEADER_NAMES: Readonly<Required<LegacyHeaderNames>> = Object.freeze({
  limit: 'X-RateLimit-Limit',
  remaining: 'X-RateLimit-Remaining',
  reset: 'X-RateLimit-Reset',
});

/** Which header groups to send. */
export interface RateLimitHeaderOptions {
  /**
   * The IETF `RateLimit` headers in the format of one draft (`true` is `'draft-10'`), or
   * `false` for none.
   * @default 'draft-10'
   */
  standard?: boolean | RateLimitHeaderDraft;
  /**
   * `X-RateLimit-Limit`, `X-RateLimit-Remaining`, `X-RateLimit-Reset`; an object turns them on
   * under other names (`{ remaining: 'Rate-Limit-Remaining' }`). @default false
   */
  legacy?: boolean | LegacyHeaderNames;
  /** `Retry-After` on denied responses. @default true */
  retryAfter?: boolean;
  /**
   * Headers on admitted responses (@fastify/rate-limit's `addHeadersOnExceeding`); `false`
   * sends them only with a denial. @default true
   */
  admitted?: boolean;
  /**
   * Headers on denied responses, `Retry-After` included (@fastify/rate-limit's `addHeaders`);
   * `false` sends a bare 429. @default true
   */
  denied?: boolean;
}

/** The parsed header switches. */
export interface RateLimitHeaderConfig {
  /** The draft to follow, or `false` for no IETF headers. */
  readonly standard: RateLimitHeaderDraft | false;
  readonly legacy: boolean;
  /** The legacy headers' names (the defaults unless `legacy` named others). */
  readonly legacyNames: Readonly<Required<LegacyHeaderNames>>;
  readonly retryAfter: boolean;
  /** Whether admitted responses (and shadow-mode would-be denials) get headers. */
  readonly admitted: boolean;
  /** Whether denied responses get headers. */
  readonly denied: boolean;
}

/**
 * @default IETF headers (draft 10) and Retry-After on, legacy X-RateLimit-* off, on admitted
 * and denied responses alike.
 */
export const DEFAULT_HEADER_CONFIG: RateLimitHeaderConfig = Object.freeze({
  standard: 'draft-10',
  legacy: false,
  legacyNames: DEFAULT_LEGACY_HEADER_NAMES,
  retryAfter: true,
  admitted: true,
  denied: true,
});

/** No headers at all (`headers: false`). */
const NO_HEADERS: RateLimitHeaderConfig = Object.freeze({
  ...DEFAULT_HEADER_CONFIG,
  standard: false,
  retryAfter: false,
});

/** Every option name of RateLimitHeaderOptions, checked against the type. */
const HEADER_OPTION_NAMES = optionNames<RateLimitHeaderOptions>({
  standard: true,
  legacy: true,
  retryAfter: true,
  admitted: true,
  denied: true,
});

const LEGACY_NAME_KEYS = optionNames<LegacyHeaderNames>({
  limit: true,
  remaining: true,
  reset: true,
});

/** RFC 9110 §5.6.2: a field name is a token. */
const FIELD_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

/** `legacy`: a boolean, or names (which turn the group on). */
function parseLegacy(
  value: unknown,
  field: string,
): Pick<RateLimitHeaderConfig, 'legacy' | 'legacyNames'> {
  if (value === undefined) return { legacy: false, legacyNames: DEFAULT_LEGACY_HEADER_NAMES };
  if (typeof value === 'boolean')
    return { legacy: value, legacyNames: DEFAULT_LEGACY_HEADER_NAMES };
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw configError(field, value, 'a boolean or { limit, remaining, reset } header names');
  }
  const o = readOptions(value, field, LEGACY_NAME_KEYS);
  const names = { ...DEFAULT_LEGACY_HEADER_NAMES };
  for (const name of LEGACY_NAME_KEYS) {
    const v = o[name];
    if (v === undefined) continue;
    if (typeof v !== 'string' || !FIELD_NAME.test(v)) {
      throw configError(`${field}.${name}`, v, 'a header name (an RFC 9110 token)');
    }
    names[name] = v;
  }
  const taken = new Set(Object.values(names).map((n) => n.toLowerCase()));
  if (taken.size < 3) {
    throw configError(field, value, 'three different header names');
  }
  return { legacy: true, legacyNames: Object.freeze(names) };
}

/**
 * Reads a `headers` option: `true` (defaults), `false` (none), or an object switching groups;
 * a group left out keeps its default.
 */
export function parseHeaderOptions(value: unknown, field: string): RateLimitHeaderConfig {
  if (value === undefined || value === true) return DEFAULT_HEADER_CONFIG;
  if (value === false) return NO_HEADERS;
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw configError(
      field,
      value,
      'a boolean or { standard, legacy, retryAfter, admitted, denied }',
    );
  }
  const o = readOptions(value, field, HEADER_OPTION_NAMES);
  const flag = (name: 'retryAfter' | 'admitted' | 'denied'): boolean => {
    const v = o[name];
    if (v === undefined) return DEFAULT_HEADER_CONFIG[name];
    if (typeof v !== 'boolean') throw configError(`${field}.${name}`, v, 'a boolean');
    return v;
  };
  let standard: RateLimitHeaderDraft | false;
  if (o.standard === undefined || o.standard === true) standard = 'draft-10';
  else if (o.standard === false) standard = false;
  else if (HEADER_DRAFTS.includes(o.standard as RateLimitHeaderDraft)) {
    standard = o.standard as RateLimitHeaderDraft;
  } else {
    throw configError(
      `${field}.standard`,
      o.standard,
      `a boolean or one of ${HEADER_DRAFTS.map((d) => `'${d}'`).join(', ')}`,
    );
  }
  return Object.freeze({
    standard,
    ...parseLegacy(o.legacy, `${field}.legacy`),
    retryAfter: flag('retryAfter'),
    admitted: flag('admitted'),
    denied: flag('denied'),
  });
}
