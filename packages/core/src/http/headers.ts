/**
 * Response headers for a Decision:
 * - `RateLimit-Policy` and `RateLimit` of draft-ietf-httpapi-ratelimit-headers-10: each a
 *   Structured Field List (RFC 9651) with one Item per policy. The Item is a String holding the
 *   policy name; `RateLimit-Policy` carries `q` (quota) and `w` (window, seconds), `RateLimit`
 *   carries `r` (remaining) and `t` (seconds until more quota is available).
 * - the legacy `X-RateLimit-Limit / -Remaining / -Reset` (Reset in epoch seconds, as GitHub and
 *   express-rate-limit send it);
 * - `Retry-After` on a denial, in whole seconds rounded up, never earlier than the `t` of any
 *   policy that denied (draft §6).
 * Stacked limiters append their Items to the lists; the single-valued headers keep the most
 * restrictive value.
 */
import type { Decision, PolicyDecision } from '../decision.js';
import { configError, optionNames, readOptions } from '../options.js';

/** Which header groups to send. */
export interface RateLimitHeaderOptions {
  /** `RateLimit-Policy` and `RateLimit` (IETF draft 10). @default true */
  standard?: boolean;
  /** `X-RateLimit-Limit`, `X-RateLimit-Remaining`, `X-RateLimit-Reset`. @default false */
  legacy?: boolean;
  /** `Retry-After` on denied responses. @default true */
  retryAfter?: boolean;
}

/** The parsed header switches. */
export interface RateLimitHeaderConfig {
  readonly standard: boolean;
  readonly legacy: boolean;
  readonly retryAfter: boolean;
}

/** @default IETF headers and Retry-After on, legacy X-RateLimit-* off. */
export const DEFAULT_HEADER_CONFIG: RateLimitHeaderConfig = Object.freeze({
  standard: true,
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
  const flag = (name: keyof RateLimitHeaderConfig): boolean => {
    const v = o[name];
    if (v === undefined) return DEFAULT_HEADER_CONFIG[name];
    if (typeof v !== 'boolean') throw configError(`${field}.${name}`, v, 'a boolean');
    return v;
  };
  return Object.freeze({
    standard: flag('standard'),
    legacy: flag('legacy'),
    retryAfter: flag('retryAfter'),
  });
}

/** Where headers go: `res.getHeader/setHeader` in Express, `ctx.response.get/ctx.set` in Koa. */
export interface HeaderTarget {
  get(name: string): string | number | readonly string[] | undefined;
  set(name: string, value: string): void;
}

// RFC 9651 §3.3.1: Integers have at most 15 digits.
const MAX_SF_INTEGER = 999_999_999_999_999;

function sfInteger(n: number): string {
  return String(Math.min(MAX_SF_INTEGER, Math.max(0, Math.trunc(n))));
}

/**
 * Serialises an RFC 9651 String: `"` and `\` escaped. Strings may only hold printable ASCII;
 * anything else (a policy name may be Unicode) is percent-encoded from its UTF-8 bytes so the
 * field always parses.
 */
export function serializeSfString(value: string): string {
  let out = '"';
  for (const ch of value) {
    const code = ch.codePointAt(0)!;
    if (ch === '"' || ch === '\\') out += `\\${ch}`;
    else if (code >= 0x20 && code <= 0x7e && ch !== '%') out += ch;
    else
      out += Array.from(new TextEncoder().encode(ch), (b) => `%${b.toString(16).padStart(2, '0')}`)
        .join('')
        .toUpperCase();
  }
  return `${out}"`;
}

/** Whole seconds, rounded up (a client that waits this long is never early). */
export function ceilSeconds(ms: number): number {
  return ms <= 0 ? 0 : Math.ceil(ms / 1000);
}

/**
 * `t` for one policy: a denying policy's `retryAfter` (when the cost can ever be admitted),
 * otherwise the time until the key is back to full capacity.
 */
export function policyResetSeconds(policy: PolicyDecision): number {
  return ceilSeconds(policyResetMs(policy));
}

function policyResetMs(policy: PolicyDecision): number {
  return !policy.allowed && policy.retryAfter > 0 ? policy.retryAfter : policy.resetAfter;
}

/**
 * `RateLimit-Policy` items: `"name";q=<capacity>;w=<window seconds>`, one per policy. With a
 * `quotaUnit` (draft §3.1.2, e.g. `concurrent-requests`) the item says `qu` instead of `w`.
 */
export function formatRateLimitPolicy(decision: Decision, quotaUnit?: string): string {
  return decision.policies
    .map((p) => {
      const head = `${serializeSfString(p.name)};q=${sfInteger(p.limit)}`;
      if (quotaUnit !== undefined) return `${head};qu=${serializeSfString(quotaUnit)}`;
      // `w` is a non-zero Integer of seconds: a sub-second window is advertised as 1s.
      return `${head};w=${sfInteger(Math.max(1, ceilSeconds(p.window)))}`;
    })
    .join(', ');
}

/** `RateLimit` items: `"name";r=<remaining>;t=<seconds>`, one per policy. */
export function formatRateLimit(decision: Decision): string {
  return decision.policies
    .map(
      (p) =>
        `${serializeSfString(p.name)};r=${sfInteger(p.remaining)};t=${sfInteger(policyResetSeconds(p))}`,
    )
    .join(', ');
}

/**
 * `Retry-After` seconds for a denied decision: the latest `t` among the policies that denied,
 * at least 1. Undefined when the decision admitted the request.
 */
export function retryAfterSeconds(decision: Decision): number | undefined {
  if (decision.allowed) return undefined;
  let seconds = ceilSeconds(decision.retryAfter);
  for (const p of decision.policies) {
    if (!p.allowed) seconds = Math.max(seconds, policyResetSeconds(p));
  }
  return Math.max(1, seconds);
}

/** Appends `item` to a list-valued header's current value (joined with `, `). */
export function appendHeaderValue(
  existing: string | number | readonly string[] | undefined,
  item: string,
): string {
  if (existing === undefined || existing === '') return item;
  const current = Array.isArray(existing) ? existing.join(', ') : String(existing);
  return current === '' ? item : `${current}, ${item}`;
}

/**
 * Sets every enabled header group for `decision` on `target`. A `quotaUnit` other than
 * requests (`concurrent-requests`) is named in `RateLimit-Policy` and leaves the legacy headers
 * alone (they describe request rates).
 */
export function applyRateLimitHeaders(
  target: HeaderTarget,
  decision: Decision,
  config: RateLimitHeaderConfig = DEFAULT_HEADER_CONFIG,
  now: number = Date.now(),
  quotaUnit?: string,
): void {
  if (decision.policies.length === 0) return;
  if (config.standard) {
    target.set(
      'RateLimit-Policy',
      appendHeaderValue(target.get('RateLimit-Policy'), formatRateLimitPolicy(decision, quotaUnit)),
    );
    target.set('RateLimit', appendHeaderValue(target.get('RateLimit'), formatRateLimit(decision)));
  }
  if (config.legacy && quotaUnit === undefined) {
    // One value only: keep whichever stacked limiter leaves the fewest requests.
    const current = Number(firstValue(target.get('X-RateLimit-Remaining')));
    const remaining = Math.max(0, Math.floor(decision.remaining));
    if (!(Number.isFinite(current) && current <= remaining)) {
      const decider =
        decision.policies.find((p) => p.name === decision.policy) ?? decision.policies[0]!;
      target.set('X-RateLimit-Limit', sfInteger(decision.limit));
      target.set('X-RateLimit-Remaining', sfInteger(remaining));
      target.set('X-RateLimit-Reset', sfInteger(Math.ceil((now + policyResetMs(decider)) / 1000)));
    }
  }
  if (config.retryAfter) {
    const seconds = retryAfterSeconds(decision);
    if (seconds !== undefined) {
      const current = Number(firstValue(target.get('Retry-After')));
      target.set(
        'Retry-After',
        String(Number.isFinite(current) ? Math.max(current, seconds) : seconds),
      );
    }
  }
}

function firstValue(value: string | number | readonly string[] | undefined): string | undefined {
  const first = Array.isArray(value) ? value[0] : value;
  return first === undefined || first === '' ? undefined : String(first);
}
