/**
 * Adapter options are read from own properties only: a polluted `Object.prototype.cost = 0`
 * must not make requests free. A JSON `"__proto__"` key (an own property after JSON.parse) is
 * refused by name rather than dropped.
 */
import { RateLimitConfigError } from '../errors.js';
import { configError } from '../options.js';

/**
 * The own enumerable options of `options` in a null-prototype record (so a missing name reads
 * `undefined` whatever Object.prototype holds).
 */
export function ownOptions(options: unknown, where: string): Record<string, unknown> {
  if (options === null || typeof options !== 'object' || Array.isArray(options)) {
    throw configError(where, options, 'an options object');
  }
  const own: Record<string, unknown> = Object.create(null);
  for (const name of Object.keys(options)) {
    const value = (options as Record<string, unknown>)[name];
    if (name === '__proto__') {
      throw new RateLimitConfigError(
        'FLOODGATE_UNKNOWN_OPTION',
        `${where}.__proto__`,
        value,
        `${where}.__proto__ is not an option (a "__proto__" key, e.g. from JSON.parse, is refused rather than dropped)`,
      );
    }
    own[name] = value;
  }
  return own;
}
