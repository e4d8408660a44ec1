/**
 * Response headers for a Decision:
 * - `RateLimit-Policy` and `RateLimit` of draft-ietf-httpapi-ratelimit-headers-10: each a
 *   Structured Field List (RFC 9651) with one Item per policy. The Item is a String holding the
 *   policy name; `RateLimit-Policy` carries `q` (quota) and `w` (window, seconds), `RateLimit`
 *   carries `r` (remaining) and `t` (seconds until more quota is available).
 * - the legacy `X-RateLimit-Limit / -Remaining / -Reset` (Reset in epoch seconds, as GitHub and
 *   express-rate-limit send it);
 * - `Retry-After` on a denial, in whole seconds rounded up, never earlier than the `t` of any
 *   policy that denied (draft §6); none when retrying cannot help (retryAfter −1).
 * `headers.standard` may ask for the formats of drafts 8, 7 and 6 instead (as express-rate-limit
 * sends them). A decision no store made (`onStoreError` answered) gets no quota headers.
 * Stacked limiters append their Items to the lists; the single-valued headers keep the most
 * restrictive value.
 */
import { createHash } from 'node:crypto';
import type { Decision, PolicyDecision } from '../decision.js';
import { isSlotDenial } from './concurrency.js';
import { DEFAULT_HEADER_CONFIG, type RateLimitHeaderConfig } from './header-options.js';

/** Where headers go: `res.getHeader/setHeader` in Express, `ctx.response.get/ctx.set` in Koa. */
export interface HeaderTarget {
  get(name: string): string | number | readonly string[] | undefined;
  set(name: string, value: string): void;
  /**
   * True when the response's headers have already gone out (a handler streamed early, a
   * limiter placed late): nothing is set then, as express-rate-limit does, and the request is
   * still counted. @default never
   */
  sent?(): boolean;
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

/** Decisions the failure policy (`onStoreError: 'open' | 'closed'`) answered: no store decided. */
const UNDECIDED: ReadonlySet<string> = new Set(['store-error', 'timeout', 'circuit-open']);

/**
 * Whether a store (the configured one, or a fallback) decided: false when `onStoreError:
 * 'open'` or `'closed'` answered for a store that failed, timed out or whose circuit is open.
 * Such a decision knows nothing about the client's quota, so no quota headers are sent for it.
 */
export function storeDecided(decision: Decision): boolean {
  return decision.reason === undefined || !UNDECIDED.has(decision.reason);
}

/**
 * The `pk` (partition key) parameter of draft 8: the first 12 bytes of the SHA-256 of the
 * client's key, as a Byte Sequence, so a client can tell its partitions apart without learning
 * the key itself.
 */
export function partitionKey(key: string): string {
  return `:${createHash('sha256').update(key).digest().subarray(0, 12).toString('base64')}:`;
}

/**
 * `RateLimit-Policy` items: `"name";q=<quota>;w=<window seconds>`, one per policy, where the
 * quota is the policy's `limit` option, its sustained rate per window (a token bucket's or a
 * GCRA's burst is not a quota per window, and draft 10 has no parameter for it). With a
 * `quotaUnit` (draft §3.1.2, e.g. `concurrent-requests`) the item says `qu` instead of `w`;
 * with a `key` (draft 8) it adds `pk`.
 */
export function formatRateLimitPolicy(
  decision: Decision,
  quotaUnit?: string,
  key?: string,
): string {
  const pk = key === undefined ? '' : `;pk=${partitionKey(key)}`;
  const policies = decision.policies;
  let out = '';
  for (let i = 0; i < policies.length; i++) {
    const p = policies[i]!;
    const item =
      quotaUnit === undefined
        ? `${policyItem(p)}${pk}`
        : `${sfName(p.name)};q=${sfInteger(p.quota)};qu=${serializeSfString(quotaUnit)}${pk}`;
    out = i === 0 ? item : `${out}, ${item}`;
  }
  return out;
}

/** `w`: a non-zero Integer of seconds (a sub-second window is advertised as 1 s). */
function windowSeconds(p: PolicyDecision): string {
  return sfInteger(Math.max(1, ceilSeconds(p.window)));
}

/** `RateLimit` items: `"name";r=<remaining>;t=<seconds>`, one per policy. */
export function formatRateLimit(decision: Decision): string {
  const policies = decision.policies;
  let out = '';
  for (let i = 0; i < policies.length; i++) {
    const p = policies[i]!;
    const item = `${sfName(p.name)};r=${sfInteger(p.remaining)};t=${sfInteger(policyResetSeconds(p))}`;
    out = i === 0 ? item : `${out}, ${item}`;
  }
  return out;
}

/**
 * Per policy name, its serialised name and its last `RateLimit-Policy` item: a policy's name,
 * quota and window change rarely, and rebuilding them cost a string per character per request.
 * Names are the application's own, but a policies function may make many: the table is
 * emptied when it holds MAX_CACHED_NAMES.
 */
const namesSeen = new Map<string, { sf: string; quota: number; window: number; item: string }>();
const MAX_CACHED_NAMES = 1000;

function nameEntry(name: string) {
  let entry = namesSeen.get(name);
  if (entry === undefined) {
    if (namesSeen.size >= MAX_CACHED_NAMES) namesSeen.clear();
    entry = { sf: serializeSfString(name), quota: Number.NaN, window: Number.NaN, item: '' };
    namesSeen.set(name, entry);
  }
  return entry;
}

function sfName(name: string): string {
  return nameEntry(name).sf;
}

/** `"name";q=<quota>;w=<window seconds>`, remembered while the quota and window stay. */
function policyItem(p: PolicyDecision): string {
  const entry = nameEntry(p.name);
  if (entry.quota !== p.quota || entry.window !== p.window) {
    entry.item = `${entry.sf};q=${sfInteger(p.quota)};w=${windowSeconds(p)}`;
    entry.quota = p.quota;
    entry.window = p.window;
  }
  return entry.item;
}

/** Drafts 6 and 7: `RateLimit-Policy` items without names, `<quota>;w=<window seconds>`. */
export function formatUnnamedRateLimitPolicy(decision: Decision): string {
  return decision.policies.map((p) => `${sfInteger(p.quota)};w=${windowSeconds(p)}`).join(', ');
}

/**
 * `Retry-After` seconds for a denied decision: the latest `t` among the policies that denied,
 * at least 1. Undefined when the decision admitted the request, and when retrying cannot help:
 * a policy that denied can never admit this cost (retryAfter −1: too large a cost, a limit of
 * 0, a block 'forever'), so a client that honours Retry-After would retry forever; and for a
 * refusal because every concurrency slot was busy (`isSlotDenial`): a slot frees when a request
 * in flight ends, which is not known.
 */
export function retryAfterSeconds(decision: Decision): number | undefined {
  if (decision.allowed || decision.retryAfter < 0) return undefined;
  // Busy concurrency slots free when a request in flight ends: no wait is known.
  if (isSlotDenial(decision)) return undefined;
  let seconds = ceilSeconds(decision.retryAfter);
  for (const p of decision.policies) {
    if (p.allowed) continue;
    if (p.retryAfter < 0) return undefined;
    seconds = Math.max(seconds, policyResetSeconds(p));
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

/** What `applyRateLimitHeaders` may need besides the decision. */
export interface HeaderContext {
  /** Epoch milliseconds, for the legacy `X-RateLimit-Reset`. @default Date.now() */
  readonly now?: number;
  /**
   * A quota unit other than requests (`concurrent-requests`): named in `RateLimit-Policy`
   * (drafts 8 and 10); drafts 6 and 7 and the legacy headers describe request rates only and
   * leave such a decision out.
   */
  readonly quotaUnit?: string;
  /** The client's key, for draft 8's `pk`. */
  readonly key?: string;
}

/**
 * Sets every enabled header group for `decision` on `target`. A decision the store did not
 * make (`storeDecided`) gets no quota headers, only `Retry-After` when it denies. A shadow
 * decision (`shadow: true`) never gets `Retry-After`: it was not refused, and it counts as
 * admitted for `config.admitted`. Nothing is set once the target's headers were sent, nor on an
 * admitted response with `admitted: false`, nor on a denied one with `denied: false`.
 */
export function applyRateLimitHeaders(
  target: HeaderTarget,
  decision: Decision,
  config: RateLimitHeaderConfig = DEFAULT_HEADER_CONFIG,
  context: HeaderContext = {},
): void {
  if (decision.policies.length === 0) return;
  if (!(decision.allowed || decision.shadow ? config.admitted : config.denied)) return;
  if (target.sent?.() === true) return;
  const { quotaUnit } = context;
  if (storeDecided(decision)) {
    const draft = config.standard;
    if (draft === 'draft-10' || draft === 'draft-8') {
      const key = draft === 'draft-8' ? context.key : undefined;
      appendTo(target, 'RateLimit-Policy', formatRateLimitPolicy(decision, quotaUnit, key));
      appendTo(target, 'RateLimit', formatRateLimit(decision));
    } else if (draft !== false && quotaUnit === undefined) {
      appendTo(target, 'RateLimit-Policy', formatUnnamedRateLimitPolicy(decision));
      setSingleValued(target, draft, decision, config);
    }
    if (config.legacy && quotaUnit === undefined) {
      setSingleValued(target, 'legacy', decision, config, context.now ?? Date.now());
    }
  }
  // A would-be denial in shadow mode is answered 200: Retry-After would tell clients to wait.
  if (config.retryAfter && !decision.shadow) {
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

function appendTo(target: HeaderTarget, name: string, items: string): void {
  target.set(name, appendHeaderValue(target.get(name), items));
}

/**
 * The single-valued headers (draft 6, draft 7's `RateLimit`, legacy X-RateLimit-*) describe one
 * policy: the one that decided. Stacked limiters keep whichever leaves the fewest requests.
 */
function setSingleValued(
  target: HeaderTarget,
  format: 'draft-6' | 'draft-7' | 'legacy',
  decision: Decision,
  config: RateLimitHeaderConfig,
  now = 0,
): void {
  const legacyNames = config.legacyNames;
  const decider =
    decision.policies.find((p) => p.name === decision.policy) ?? decision.policies[0]!;
  const remaining = Math.max(0, Math.floor(decider.remaining));
  const remainingHeader =
    format === 'legacy'
      ? legacyNames.remaining
      : format === 'draft-6'
        ? 'RateLimit-Remaining'
        : undefined;
  const current =
    remainingHeader === undefined
      ? draft7Remaining(firstValue(target.get('RateLimit')))
      : Number(firstValue(target.get(remainingHeader)));
  if (Number.isFinite(current) && current <= remaining) return;
  const reset = policyResetSeconds(decider);
  if (format === 'legacy') {
    target.set(legacyNames.limit, sfInteger(decision.limit));
    target.set(legacyNames.remaining, sfInteger(remaining));
    target.set(legacyNames.reset, sfInteger(Math.ceil((now + policyResetMs(decider)) / 1000)));
  } else if (format === 'draft-6') {
    target.set('RateLimit-Limit', sfInteger(decider.quota));
    target.set('RateLimit-Remaining', sfInteger(remaining));
    target.set('RateLimit-Reset', sfInteger(reset));
  } else {
    target.set(
      'RateLimit',
      `limit=${sfInteger(decider.quota)}, remaining=${sfInteger(remaining)}, reset=${sfInteger(reset)}`,
    );
  }
}

/** `remaining` of a draft-7 `RateLimit` Dictionary set by an earlier limiter (NaN if none). */
function draft7Remaining(value: string | undefined): number {
  const match = value === undefined ? null : /(?:^|,)\s*remaining=(\d+)/.exec(value);
  return match ? Number(match[1]) : Number.NaN;
}

function firstValue(value: string | number | readonly string[] | undefined): string | undefined {
  const first = Array.isArray(value) ? value[0] : value;
  return first === undefined || first === '' ? undefined : String(first);
}
