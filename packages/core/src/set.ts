/**
 * `limiter.set(key, { used })`: a key's count written directly (rate-limiter-flexible's `set`,
 * for migration and admin tools). Every policy forgets the key's state and is charged `used`
 * units as a charge does (`penalize`), in one atomic store call: the key then holds what a
 * fresh key holds after that charge (docs/algorithms.md#set). Blocks are kept.
 */
import { describeValue, RateLimitArgumentError, RateLimitConfigError } from './errors.js';
import { isCost, optionNames, ownValue } from './options.js';
import type { Policy } from './policy.js';
import { assertDebt } from './reservation.js';
import type { PreparedPolicies, Store } from './stores/store.js';

/** The argument of `limiter.set`. */
export interface SetOptions {
  /**
   * Units the key has used, per policy as its algorithm reads a charge (docs/algorithms.md#set):
   * a non-negative integer; 0 empties every policy's count (blocks stay); past a policy's
   * capacity the key is in debt.
   */
  used: number;
}

/** Names `set` accepts. */
const SET_OPTIONS = optionNames<SetOptions>({ used: true });

/** Checks `set`'s argument (own properties only, every name known) and returns `used`. */
export function readSetOptions(options: unknown): number {
  if (options === null || typeof options !== 'object' || Array.isArray(options)) {
    throw new RateLimitArgumentError(
      'options',
      options,
      `set() takes an options object such as { used: 3 }, got ${describeValue(options)}`,
    );
  }
  for (const name in options) {
    if (Object.hasOwn(options, name) && !(SET_OPTIONS as readonly string[]).includes(name)) {
      throw new RateLimitArgumentError(
        name,
        (options as Record<string, unknown>)[name],
        `${name} is not an option of set() (known: ${SET_OPTIONS.join(', ')})`,
      );
    }
  }
  const used = ownValue(options, 'used');
  if (!isCost(used)) {
    throw new RateLimitArgumentError(
      'used',
      used,
      `used must be a non-negative integer, got ${describeValue(used)}`,
    );
  }
  return used;
}

/**
 * Refuses `set` on a limiter that cannot do it: a policy that cannot carry debt (slidingLog,
 * leakyBucket: a count past its capacity has no meaning there), or a store without `set`.
 */
export function assertSettable(
  limiter: { readonly policies: readonly Policy[]; readonly store: Store },
  prepared: PreparedPolicies,
): void {
  assertDebt(limiter, prepared, 'set');
  if (prepared.set === undefined) {
    throw new RateLimitConfigError(
      'FLOODGATE_NO_DEBT',
      'store',
      limiter.store.kind,
      `set() needs a store that can write a key's count; the ${limiter.store.kind} store cannot`,
    );
  }
}
