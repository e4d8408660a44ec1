import type { Duration } from '../duration.js';
import { parseDuration } from '../duration.js';
import { positiveInteger, readOptions } from '../options.js';
import { definePolicy, type Policy, rateName } from '../policy.js';
import type { Algorithm } from './algorithm.js';

export interface FixedWindowOptions {
  /** Units admitted per window. */
  limit: number;
  /** Window length; windows are aligned to multiples of it since the epoch. */
  window: Duration;
  /** Name used in headers. @default `fixed-<limit>-per-<window>` */
  name?: string;
}

/**
 * At most `limit` units per window, windows aligned to `floor(now / window)`. One counter per
 * key. A client can get up to 2× limit across a window edge; use slidingLog for exactness.
 */
export function fixedWindow(options: FixedWindowOptions): Policy {
  const o = readOptions(options, 'fixedWindow', ['limit', 'window', 'name']);
  const limit = positiveInteger(o.limit, 'fixedWindow.limit');
  const windowUs = parseDuration(o.window, 'fixedWindow.window');
  return definePolicy({
    kind: 'fixed-window',
    tag: 'fw',
    name: o.name,
    nameField: 'fixedWindow.name',
    defaultName: `fixed-${rateName(limit, windowUs)}`,
    limit,
    windowUs,
    capacity: limit,
    options: { limit, window: windowUs / 1000 },
    params: [limit, windowUs],
  });
}

interface FixedWindowState {
  index: number;
  used: number;
}

/** Twin of lua/fixed-window.lua. */
export const fixedWindowAlgorithm: Algorithm<FixedWindowState> = {
  kind: 'fixed-window',
  check(state, now, cost, [limit, window]) {
    const index = Math.floor(now / window!);
    const used = state !== undefined && state.index === index ? state.used : 0;
    const windowLeft = (index + 1) * window! - now;
    if (used + cost <= limit!) {
      const after = used + cost;
      return {
        allowed: true,
        remaining: limit! - after,
        resetAfter: after > 0 ? windowLeft : 0,
        retryAfter: 0,
        delay: 0,
        next: { index, used: after },
        ttl: windowLeft,
      };
    }
    return {
      allowed: false,
      remaining: limit! - used,
      resetAfter: used > 0 ? windowLeft : 0,
      retryAfter: cost > limit! ? -1 : windowLeft,
      delay: 0,
    };
  },
};
