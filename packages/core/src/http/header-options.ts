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

/** Which header groups to send. */
export interface RateLimitHeaderOptions {
  /**
   * The IETF `RateLimit` headers in the format of one draft (`true` is `'draft-10'`), or
   * `false` for none.
   * @default 'draft-10'
   */
  standard?: boolean | RateLimitHeaderDraft;
  /** `X-RateLimit-Limit`, `X-RateLimit-Remaining`, `X-RateLimit-Reset`. @default false */
  legacy?: boolean;
  /** `Retry-After` on denied responses. @default true */
  retryAfter?: boolean;
}

/** The parsed header switches. */
export interface RateLimitHeaderConfig {
  /** The draft to follow, or `false` for no IETF headers. */
  readonly standard: RateLimitHeaderDraft | false;
  readonly legacy: boolean;
  readonly retryAfter: boolean;
}

/** @default IETF headers (draft 10) and Retry-After on, legacy X-RateLimit-* off. */
export const DEFAULT_HEADER_CONFIG: RateLimitHeaderConfig = Object.freeze({
  standard: 'draft-10',
  legacy: false,
  retryAfter: true,
});

/** Every option name of RateLimitHeaderOptions, checked against the type. */
const HEADER_OPTION_NAMES = optionNames<RateLimitHeaderOptions>({
  standard: true,
  legacy: true,
  retryAfter: true,
});

/**
 * Reads a `headers` option: `true` (defaults), `false` (none), or an object switching groups;
 * a group left out keeps its default.
 */
export function parseHeaderOptions(value: unknown, field: string): RateLimitHeaderConfig {
  if (value === undefined || value === true) return DEFAULT_HEADER_CONFIG;
  if (value === false) return Object.freeze({ standard: false, legacy: false, retryAfter: false });
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw configError(field, value, 'a boolean or { standard, legacy, retryAfter }');
  }
  const o = readOptions(value, field, HEADER_OPTION_NAMES);
  const flag = (name: 'legacy' | 'retryAfter'): boolean => {
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
  return Object.freeze({ standard, legacy: flag('legacy'), retryAfter: flag('retryAfter') });
}
