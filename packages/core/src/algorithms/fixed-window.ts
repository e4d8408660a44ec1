// fixedWindow: the policy factory, its parameters and the TypeScript twin of lua/fixed-window.lua.
import type { Duration } from '../duration.js';
import { parseDuration } from '../duration.js';
import { configError, fieldPathOf, optionNames, positiveInteger, readOptions } from '../options.js';
import { type BlockDuration, definePolicy, type Policy, rateName } from '../policy.js';
import type { Algorithm, CheckResult, Refunded, Verdict } from './algorithm.js';

/**
 * Options of `fixedWindow`: at most `limit` units per `window`, windows aligned to
 * `floor(now / window)` (or starting at each key's first admitted request); one counter per key.
 *
 * @example
 * ```ts
 * fixedWindow({ limit: 100, window: '1m' }); // 100 requests per calendar minute
 * fixedWindow({ limit: 1000, window: '1d', anchor: 'first-request' }); // 24 h from the first
 * ```
 */
export interface FixedWindowOptions {
  /** Units admitted per window; 0 admits nothing (every cost > 0 is denied for good). */
  limit: number;
  /** Window length; with anchor 'clock', windows are aligned to multiples of it since the epoch. */
  window: Duration;
  /**
   * Where a key's windows start. `'clock'`: at multiples of `window` since the epoch, the same
   * instants for every key (a daily window resets at UTC midnight). `'first-request'`: at the
   * key's first admitted request, and the next one at the first admitted request after it
   * ended (express-rate-limit, rate-limiter-flexible and @nestjs/throttler count this way), so
   * clients do not all reset at once. The two never share stored state.
   * @default 'clock'
   */
  anchor?: FixedWindowAnchor;
  /**
   * A hit that pushes the window's end out again to `window` from now, keeping its count (only
   * with anchor 'first-request', which it implies): `'on-denial'`, a denied request of a cost
   * the policy could admit (@fastify/rate-limit's `continueExceeding`: a client that keeps
   * hammering stays limited until it pauses for a whole window); `'on-hit'`, every request of
   * cost > 0, admitted or denied (rate-limit-redis' `resetExpiryOnChange`). A denied request
   * still charges nothing; a limiter with such a policy keeps no denied cache (every denial
   * moves its own retryAfter). docs/algorithms.md#fixed-window
   * @default none: a window ends `window` after it started
   */
  extendWindow?: FixedWindowExtension;
  /** Name used in headers. @default `fixed-<limit>-per-<window>` */
  name?: string;
  /**
   * Lock the key out for this long once this policy denies it (a cost it could admit);
   * progressive with `{ initial, multiplier, max, forgetAfter }`. docs/algorithms.md#blocks
   */
  blockDuration?: BlockDuration;
}

/** Every option name of FixedWindowOptions, checked against the type. */
const FIXED_WINDOW_OPTION_NAMES = optionNames<FixedWindowOptions>({
  limit: true,
  window: true,
  anchor: true,
  extendWindow: true,
  name: true,
  blockDuration: true,
});

/** When a hit pushes a window's end out again (FixedWindowOptions.extendWindow). */
export type FixedWindowExtension = 'on-denial' | 'on-hit';

/** Where `fixedWindow`'s windows start (FixedWindowOptions.anchor). */
export type FixedWindowAnchor = 'clock' | 'first-request';

/** @default 'clock' */
const DEFAULT_ANCHOR: FixedWindowAnchor = 'clock';

/** The third parameter: how lua/fixed-window.lua stores a key's window (its header, State). */
const LAYOUT_PER_WINDOW_KEY = 0;
const LAYOUT_PACKED = 1;
const LAYOUT_FIRST_REQUEST = 2;
/** Anchor 'first-request' with extendWindow 'on-denial' (3) or 'on-hit' (4). */
const LAYOUT_EXTEND_ON_DENIAL = 3;
const LAYOUT_EXTEND_ON_HIT = 4;

/** Whether `policy` is a fixedWindow whose denials push its window's end out (and write). */
export function extendsOnDenial(policy: Policy): boolean {
  return policy.kind === 'fixed-window' && (policy.params[2] ?? 0) >= LAYOUT_EXTEND_ON_DENIAL;
}

/**
 * At most `limit` units per window, windows aligned to `floor(now / window)`, or starting at a
 * key's first admitted request with `anchor: 'first-request'`. One counter per key. A client
 * can get up to 2× limit across a window edge; use slidingLog for exactness.
 */
export function fixedWindow(options: FixedWindowOptions): Policy {
  // An adapter's shorthand (Nest's `@RateLimit({ limit, window })`) names its own fields.
  const where = fieldPathOf(options, 'fixedWindow');
  const o = readOptions(options, where, FIXED_WINDOW_OPTION_NAMES);
  // 0 admits nothing: a maintenance switch (docs/algorithms.md#limit-0).
  const limit = positiveInteger(o.limit, `${where}.limit`, 0);
  const windowUs = parseDuration(o.window, `${where}.window`);
  const extend = o.extendWindow;
  if (extend !== undefined && extend !== 'on-denial' && extend !== 'on-hit') {
    throw configError(`${where}.extendWindow`, extend, "'on-denial' or 'on-hit'");
  }
  const anchor = o.anchor ?? (extend === undefined ? DEFAULT_ANCHOR : 'first-request');
  if (anchor !== 'clock' && anchor !== 'first-request') {
    throw configError(`${where}.anchor`, o.anchor, "'clock' or 'first-request'");
  }
  if (extend !== undefined && anchor !== 'first-request') {
    // Windows aligned to the clock end at fixed instants: there is no end to push out.
    throw configError(`${where}.anchor`, o.anchor, "'first-request' (extendWindow needs it)");
  }
  // The layout is a parameter, so the two anchors' policies have different ids (and keys).
  const layout =
    extend === 'on-hit'
      ? LAYOUT_EXTEND_ON_HIT
      : extend === 'on-denial'
        ? LAYOUT_EXTEND_ON_DENIAL
        : anchor === 'first-request'
          ? LAYOUT_FIRST_REQUEST
          : packsIntoOneInteger(limit, windowUs)
            ? LAYOUT_PACKED
            : LAYOUT_PER_WINDOW_KEY;
  const fromFirst = anchor === 'first-request';
  return definePolicy({
    kind: 'fixed-window',
    tag: 'fw',
    name: o.name,
    nameField: `${where}.name`,
    defaultName: `fixed-${rateName(limit, windowUs)}${fromFirst ? '-first-request' : ''}${extend ? `-extend-${extend}` : ''}`,
    limit,
    windowUs,
    capacity: limit,
    options: {
      limit,
      window: windowUs / 1000,
      ...(fromFirst ? { anchor } : {}),
      ...(extend ? { extendWindow: extend } : {}),
    },
    params: [limit, windowUs, layout] satisfies FixedWindowParams,
    blockDuration: o.blockDuration,
  });
}

const TWO_POW_53 = 2n ** 53n;

/**
 * Whether Redis can keep this policy's window index and count as one exact integer,
 * index · (limit + 1) + used, for every time a clock can give (below 2^53 µs): then the state
 * is one integer at the base key (72 bytes for a short key) instead of a count at a key named
 * after the window (88). True about whenever limit < window in µs.
 */
export function packsIntoOneInteger(limit: number, windowUs: number): boolean {
  const windows = BigInt(Math.floor(Number.MAX_SAFE_INTEGER / windowUs)) + 1n;
  return windows * BigInt(limit + 1) <= TWO_POW_53;
}

/**
 * The count of one window. In the packed layout (`params[2]` = 1) it is the same integer Redis
 * keeps, index · (limit + 1) + used: no object per write. Per window key (0): `{ index, used }`.
 * From the first request (2): `{ end, used }`, the window's end in µs (Redis: '<end>:<used>').
 */
type FixedWindowState = number | WindowCount | StartedWindow;

/**
 * A count of window `index` kept at a key of its own (layout 0); past the limit, `used` is what is
 * owed from that window on, and `carried` is the base key that carries it into the windows after
 * it (lua/fixed-window.lua: Debt).
 */
interface WindowCount {
  index: number;
  used: number;
  carried?: { from: number; owed: number };
}

/** A window of anchor 'first-request': it ends at `end` (µs); `used` units admitted in it. */
interface StartedWindow {
  end: number;
  used: number;
}

/**
 * The ARGV lua/fixed-window.lua reads after the algorithm name (µs for times); `layout` is 1
 * (packed) or 0 (per window key) for anchor 'clock', 2 for 'first-request', 3 and 4 for
 * 'first-request' with extendWindow 'on-denial' and 'on-hit'.
 */
export type FixedWindowParams = readonly [limit: number, window: number, layout: number];

/**
 * The current window of anchor 'first-request' in `state`, or undefined. A count past the limit
 * is a debt carried into the windows that follow back to back, each repaying `limit`
 * (lua/fixed-window.lua: Debt): once its window has ended, the one of the chain in force now,
 * with what is still owed from it on.
 */
function startedWindow(
  state: FixedWindowState | undefined,
  now: number,
  limit: number,
  window: number,
): StartedWindow | undefined {
  if (typeof state !== 'object' || !('end' in state)) return undefined;
  if (state.end > now) return state;
  if (state.used <= limit || limit === 0) return undefined;
  const k = Math.floor((now - state.end) / window) + 1;
  const used = state.used - k * limit;
  return used > 0 ? { end: state.end + k * window, used } : undefined;
}

/** The whole windows owed after the current one by `used` units (0 when they fit it). */
function windowsAhead(used: number, limit: number): number {
  return used > limit && limit > 0 ? Math.floor((used - 1) / limit) : 0;
}

/**
 * Check for anchor 'first-request' (lua/fixed-window.lua's layout 2, 3 and 4). With
 * extendWindow, a hit that extends starts the window over from now; a denial that does hands
 * the store the extended window to write (written only when the call consumes). In debt,
 * nothing is left before the last owing window; a charge carries what does not fit.
 */
function checkStarted(
  state: FixedWindowState | undefined,
  now: number,
  cost: number,
  [limit, window, layout]: FixedWindowParams,
  force: boolean,
): CheckResult<FixedWindowState> {
  const current = startedWindow(state, now, limit, window);
  const used = current?.used ?? 0;
  const ahead = windowsAhead(used, limit);
  // No current window: an admitted cost > 0 starts one now.
  let end = current?.end ?? now + window;
  const extend =
    cost > 0 &&
    cost <= limit &&
    (layout === LAYOUT_EXTEND_ON_HIT ||
      (layout === LAYOUT_EXTEND_ON_DENIAL && used + cost > limit));
  if (extend) end = now + window;
  const windowLeft = end - now;
  if (force && cost > 0 && limit > 0 && used + cost > limit) {
    const owed = used + cost;
    const ttl = windowLeft + windowsAhead(owed, limit) * window;
    return {
      allowed: true,
      remaining: 0,
      resetAfter: ttl,
      retryAfter: 0,
      delay: 0,
      next: { end, used: owed },
      ttl,
    };
  }
  if (ahead > 0) {
    const resetAfter = windowLeft + ahead * window;
    const verdict: CheckResult<FixedWindowState> = {
      allowed: cost === 0,
      remaining: 0,
      resetAfter,
      retryAfter: 0,
      delay: 0,
    };
    if (cost === 0) return verdict;
    const r = used - ahead * limit;
    verdict.retryAfter = cost > limit ? -1 : r + cost <= limit ? resetAfter - window : resetAfter;
    if (extend) {
      verdict.next = { end, used };
      verdict.ttl = resetAfter;
    }
    return verdict;
  }
  const verdict: CheckResult<FixedWindowState> = windowVerdict(
    used,
    cost,
    limit,
    windowLeft,
    force,
  );
  if (verdict.allowed || extend) {
    // limit 0: a charge admits, the count stays 0.
    verdict.next = { end, used: verdict.allowed ? Math.min(used + cost, limit) : used };
    verdict.ttl = windowLeft;
  }
  return verdict;
}

/**
 * A window's verdict (both anchors) from its count before this request and the time left in
 * it; the caller adds what an admission stores.
 */
function windowVerdict(
  used: number,
  cost: number,
  limit: number,
  windowLeft: number,
  force = false,
): Verdict {
  if (used + cost > limit && force) {
    // A charge past the limit fills the window (lua/fixed-window.lua's Debt).
    return { allowed: true, remaining: 0, resetAfter: windowLeft, retryAfter: 0, delay: 0 };
  }
  if (used + cost <= limit) {
    const after = used + cost;
    return {
      allowed: true,
      remaining: limit - after,
      resetAfter: after > 0 ? windowLeft : 0,
      retryAfter: 0,
      delay: 0,
    };
  }
  return {
    allowed: false,
    remaining: limit - used,
    resetAfter: used > 0 ? windowLeft : 0,
    retryAfter: cost > limit ? -1 : windowLeft,
    delay: 0,
  };
}

/**
 * Debt in the packed layout (lua/fixed-window.lua's Debt): a key that owes more than window
 * `index` holds −1 − (last · (limit + 1) + r): windows up to `last` − 1 full, r (1 … limit) in
 * window `last`. Negative, so it never reads as a count of another window. Its last window and
 * r, or undefined when the value is not a debt or the debt is over.
 */
function debtOf(
  state: FixedWindowState | undefined,
  index: number,
  limit: number,
): { last: number; r: number } | undefined {
  if (typeof state !== 'number' || state >= 0 || limit === 0) return undefined;
  const r = (-1 - state) % (limit + 1);
  const last = (-1 - state - r) / (limit + 1);
  return last >= index ? { last, r } : undefined;
}

/** Units owed from window `index` on by a debt. */
function owedOf({ last, r }: { last: number; r: number }, index: number, limit: number): number {
  return (last - index) * limit + r;
}

/**
 * `owed` units from window `index` on, as the key stores them: the count itself while it fits
 * the window, else a debt (debtOf); its TTL runs until the last owing window ends. Past the last
 * window any clock reaches (about the year 2255 for a 1 s window) the debt stops there, so the
 * value stays an exact integer.
 */
function packOwed(
  owed: number,
  index: number,
  now: number,
  [limit, window]: FixedWindowParams,
): { next: number; ttl: number } {
  const q = owed > limit ? Math.floor((owed - 1) / limit) : 0;
  let last = index + q;
  let r = owed - q * limit;
  const top = Math.floor(Number.MAX_SAFE_INTEGER / window);
  if (last > top) {
    last = top;
    r = limit;
  }
  const value = last * (limit + 1) + r;
  return { next: q > 0 ? -1 - value : value, ttl: (last + 1) * window - now };
}

/** A charge that leaves `owed` units (> 0) from window `index` on: admitted, maybe in debt. */
function chargeOwed(
  owed: number,
  index: number,
  now: number,
  params: FixedWindowParams,
): CheckResult<FixedWindowState> {
  const charge = packOwed(owed, index, now, params);
  const limit = params[0];
  return {
    allowed: true,
    remaining: owed <= limit ? limit - owed : 0,
    resetAfter: charge.ttl,
    retryAfter: 0,
    delay: 0,
    ...charge,
  };
}

/**
 * Check of a packed key holding a debt whose last window is `index` or later: before that window
 * nothing is left, and a cost fits in the first window with room for it; once it has come, the
 * debt's r units are that window's count. A read (cost 0) is admitted; a charge adds to it.
 */
function checkDebt(
  debt: { last: number; r: number },
  index: number,
  now: number,
  cost: number,
  params: FixedWindowParams,
  force: boolean,
): CheckResult<FixedWindowState> {
  const [limit, window] = params;
  const { last, r } = debt;
  if (force && cost > 0) return chargeOwed(owedOf(debt, index, limit) + cost, index, now, params);
  const resetAfter = (last + 1) * window - now;
  const remaining = last === index ? limit - r : 0;
  if (cost === 0) return { allowed: true, remaining, resetAfter, retryAfter: 0, delay: 0 };
  if (last === index && r + cost <= limit) {
    const next = index * (limit + 1) + r + cost;
    const left = limit - r - cost;
    return {
      allowed: true,
      remaining: left,
      resetAfter,
      retryAfter: 0,
      delay: 0,
      next,
      ttl: resetAfter,
    };
  }
  const retryAfter =
    cost > limit ? -1 : last > index && r + cost <= limit ? last * window - now : resetAfter;
  return { allowed: false, remaining, resetAfter, retryAfter, delay: 0 };
}

/**
 * What a per-window-key state (layout 0) counts in window `index`: that window's count when it
 * has one, else what a debt carried from an earlier window still owes there (`marked`).
 */
/**
 * The current window of layout 0 at `now`: its index, the time left in it, and its count (or,
 * in debt, what is owed from it on: `marked`, read from the base key's carry).
 */
function perWindowAt(
  state: FixedWindowState | undefined,
  now: number,
  [limit, window]: FixedWindowParams,
): { index: number; windowLeft: number; used: number; marked: boolean } {
  const index = Math.floor(now / window);
  return { index, windowLeft: (index + 1) * window - now, ...perWindowUsed(state, index, limit) };
}

function perWindowUsed(
  state: FixedWindowState | undefined,
  index: number,
  limit: number,
): { used: number; marked: boolean } {
  if (typeof state !== 'object' || !('index' in state)) return { used: 0, marked: false };
  if (state.index === index) return { used: state.used, marked: false };
  const carried = state.carried;
  if (carried !== undefined && limit > 0 && carried.from <= index) {
    const owed = carried.owed - (index - carried.from) * limit;
    if (owed > 0) return { used: owed, marked: true };
  }
  return { used: 0, marked: false };
}

/** `owed` units from window `index` on, as layout 0 stores them (a count, carried when past the limit). */
function perWindowOwed(
  owed: number,
  index: number,
  windowLeft: number,
  [limit, window]: FixedWindowParams,
): { next: WindowCount; ttl: number } {
  if (owed <= limit) return { next: { index, used: owed }, ttl: windowLeft };
  return {
    next: { index, used: owed, carried: { from: index, owed } },
    ttl: windowLeft + windowsAhead(owed, limit) * window,
  };
}

/**
 * Check of a limit kept at one key per window (layout 0): as the packed layout's debt, the count
 * past the limit being what is owed from the window on, carried by the base key.
 */
function checkPerWindowKey(
  state: FixedWindowState | undefined,
  now: number,
  cost: number,
  params: FixedWindowParams,
  force: boolean,
): CheckResult<FixedWindowState> {
  const [limit, window] = params;
  const { index, windowLeft, used, marked } = perWindowAt(state, now, params);
  if (force && cost > 0 && limit > 0 && used + cost > limit) {
    const charge = perWindowOwed(used + cost, index, windowLeft, params);
    return {
      allowed: true,
      remaining: 0,
      resetAfter: charge.ttl,
      retryAfter: 0,
      delay: 0,
      ...charge,
    };
  }
  if (used > limit) {
    const ahead = windowsAhead(used, limit);
    const resetAfter = windowLeft + ahead * window;
    const retryAfter =
      cost > limit ? -1 : used - ahead * limit + cost <= limit ? resetAfter - window : resetAfter;
    return cost === 0
      ? { allowed: true, remaining: 0, resetAfter, retryAfter: 0, delay: 0 }
      : { allowed: false, remaining: 0, resetAfter, retryAfter, delay: 0 };
  }
  const verdict: CheckResult<FixedWindowState> = windowVerdict(
    used,
    cost,
    limit,
    windowLeft,
    force,
  );
  if (verdict.allowed && !(marked && cost === 0)) {
    // limit 0: a charge admits, the count stays 0.
    verdict.next = { index, used: Math.min(used + cost, limit) };
    verdict.ttl = windowLeft;
  }
  return verdict;
}

/** Refund of layout 0: the window's count, or in debt what is owed, the last window's units first. */
function refundPerWindowKey(
  state: FixedWindowState | undefined,
  now: number,
  cost: number,
  params: FixedWindowParams,
): Refunded<FixedWindowState> {
  const [limit] = params;
  const { index, windowLeft, used, marked } = perWindowAt(state, now, params);
  if (used === 0) return undefined;
  const left = used - Math.min(cost, used);
  if (used <= limit && !marked) return { next: { index, used: left }, ttl: windowLeft };
  if (marked && left === 0) return 'delete';
  return perWindowOwed(left, index, windowLeft, params);
}

/** Twin of lua/fixed-window.lua. */
export const fixedWindowAlgorithm: Algorithm<FixedWindowState, FixedWindowParams> = {
  kind: 'fixed-window',
  leasable: true,
  // Per window key (layout 0), the count is at <base>:<window index>, not at the base key;
  // extendWindow (layouts 3 and 4) writes on a denial, in a key of its own.
  sharesKey: ([, , layout]) => layout !== LAYOUT_PER_WINDOW_KEY && layout < LAYOUT_EXTEND_ON_DENIAL,
  check(state, now, cost, params, _slack, force = false) {
    const [limit, window, layout] = params;
    if (layout >= LAYOUT_FIRST_REQUEST) return checkStarted(state, now, cost, params, force);
    if (layout === LAYOUT_PER_WINDOW_KEY) return checkPerWindowKey(state, now, cost, params, force);
    // The packed layout (1): one integer, index · (limit + 1) + used, or a debt (debtOf).
    const index = Math.floor(now / window);
    const base = index * (limit + 1);
    let used = 0;
    if (typeof state === 'number' && state >= base && state - base <= limit) used = state - base;
    else {
      const debt = debtOf(state, index, limit);
      if (debt !== undefined) return checkDebt(debt, index, now, cost, params, force);
    }
    const windowLeft = (index + 1) * window - now;
    const verdict: CheckResult<FixedWindowState> = windowVerdict(
      used,
      cost,
      limit,
      windowLeft,
      force,
    );
    if (verdict.allowed && used + cost > limit && limit > 0) {
      // A charge past the limit: the overrun carries into the following windows (Debt).
      return chargeOwed(used + cost, index, now, params);
    }
    if (verdict.allowed) {
      // limit 0: a charge admits, the count stays 0.
      verdict.next = base + Math.min(used + cost, limit);
      verdict.ttl = windowLeft;
    }
    return verdict;
  },
  refund(state, now, cost, [limit, window, layout]) {
    // The current window's count only; its TTL stays the window's end (Lua: DECRBY), and a
    // window of anchor 'first-request' keeps its end.
    if (layout >= LAYOUT_FIRST_REQUEST) {
      // In debt, what is owed goes down, the last window's units first.
      const current = startedWindow(state, now, limit, window);
      if (current === undefined || current.used === 0) return undefined;
      const used = current.used - Math.min(cost, current.used);
      return {
        next: { end: current.end, used },
        ttl: current.end - now + windowsAhead(used, limit) * window,
      };
    }
    const index = Math.floor(now / window);
    const windowLeft = (index + 1) * window - now;
    if (layout === LAYOUT_PACKED) {
      const base = index * (limit + 1);
      const debt = debtOf(state, index, limit);
      if (debt !== undefined) {
        // A debt: what is owed goes down, the last window's units first (Debt).
        const owed = owedOf(debt, index, limit);
        return packOwed(owed - Math.min(cost, owed), index, now, [limit, window, layout]);
      }
      if (typeof state !== 'number' || state < base || state - base > limit) return undefined;
      const used = state - base;
      if (used === 0) return undefined;
      return { next: state - Math.min(cost, used), ttl: windowLeft };
    }
    return refundPerWindowKey(state, now, cost, [limit, window, layout]);
  },
  unpack(reply, cost, [limit]) {
    // (window_left - 1) · (limit + 1) + count, negated minus 1 when denied (lua/fixed-window.lua).
    const allowed = reply >= 0;
    const x = allowed ? reply : -reply - 1;
    const count = x % (limit + 1);
    const windowLeft = (x - count) / (limit + 1) + 1;
    return {
      allowed,
      remaining: limit - count,
      resetAfter: count > 0 ? windowLeft : 0,
      retryAfter: allowed ? 0 : cost > limit ? -1 : windowLeft,
      delay: 0,
    };
  },
};
