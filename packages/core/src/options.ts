/**
 * Option parsing shared by every factory: each options object is read once, at construction,
 * into a fully defined value. Unknown names are reported, `undefined` means "not given", and
 * a bad value throws a RateLimitConfigError naming the field and what it got.
 */
import { describeValue, RateLimitConfigError } from './errors.js';

export function configError(field: string, value: unknown, expected: string): RateLimitConfigError {
  if (value === undefined) {
    return new RateLimitConfigError(
      'FLOODGATE_MISSING_OPTION',
      field,
      value,
      `${field} is required: expected ${expected}`,
    );
  }
  return new RateLimitConfigError(
    'FLOODGATE_INVALID_OPTION',
    field,
    value,
    `${field} must be ${expected}, got ${describeValue(value)}`,
  );
}

/**
 * Every option name of `T`, each mapped to `true`. An object literal of this type must list
 * each name of `T` exactly once: a name added to the options type and missing here, or a name
 * here the type does not have, fails to compile (express-rate-limit's `KeysEnum`).
 */
export type OptionNames<T> = { readonly [K in keyof Required<T>]: true };

/** The names of `T`'s options as a list for `readOptions`, checked against the type. */
export function optionNames<T>(names: OptionNames<T>): readonly (keyof T & string)[] {
  return Object.freeze(Object.keys(names)) as readonly (keyof T & string)[];
}

/** Objects whose contents are not own properties: a `new Map()` is never an options object. */
const BUILT_INS: ReadonlyArray<abstract new (...args: never[]) => unknown> = [
  Map,
  Set,
  WeakMap,
  WeakSet,
  Promise,
  Date,
  RegExp,
  Error,
  ArrayBuffer,
];

/**
 * Checks that `options` is a plain object holding only `known` names, and returns a copy of its
 * own properties on an object without a prototype: an option that was not given reads as
 * `undefined` even when `Object.prototype` has been polluted (`Object.prototype.burst = 1e9`).
 */
export function readOptions(
  options: unknown,
  where: string,
  known: readonly string[],
): Record<string, unknown> {
  if (
    options === null ||
    typeof options !== 'object' ||
    Array.isArray(options) ||
    BUILT_INS.some((kind) => options instanceof kind)
  ) {
    throw configError(where, options, 'an options object');
  }
  const own: Record<string, unknown> = Object.create(null);
  for (const name of Object.keys(options)) {
    const value = (options as Record<string, unknown>)[name];
    if (!known.includes(name)) {
      throw new RateLimitConfigError(
        'FLOODGATE_UNKNOWN_OPTION',
        `${where}.${name}`,
        value,
        `${where}.${name} is not an option (known: ${known.join(', ')})`,
      );
    }
    own[name] = value;
  }
  return own;
}

/**
 * The cost rule, everywhere a cost is taken (a call's `cost`, an adapter's `cost` option or
 * cost function): a non-negative safe integer; 0 is a read that charges nothing.
 */
export function isCost(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0;
}

/** `object[name]` when `object` has it as an own property, else undefined (never inherited). */
export function ownValue(object: object, name: string): unknown {
  return Object.hasOwn(object, name) ? (object as Record<string, unknown>)[name] : undefined;
}

export function positiveInteger(value: unknown, field: string, min = 1): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < min) {
    throw configError(field, value, min === 0 ? 'a non-negative integer' : `an integer >= ${min}`);
  }
  return value;
}

export function optionalName(value: unknown, field: string): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || value.trim() === '' || /[\s",;=]/.test(value)) {
    throw configError(
      field,
      value,
      'a non-empty name without spaces, quotes, commas, semicolons or "="',
    );
  }
  return value;
}

/** The field paths `readAs` gave options objects while they are being read. */
const fieldPaths = new WeakMap<object, string>();

/**
 * Runs `build` (which reads `options`) so that its configuration errors name fields under
 * `where` instead of the reader's own name: an adapter passes its name for the same options
 * (`rateLimit.policies[0]`, `@RateLimit(Cats.list).limit`), nothing rewrites messages after.
 */
export function readAs<T>(options: object, where: string, build: () => T): T {
  fieldPaths.set(options, where);
  try {
    return build();
  } finally {
    fieldPaths.delete(options);
  }
}

/** Where errors about `options` start their field paths: `readAs`'s `where`, else `own`. */
export function fieldPathOf(options: unknown, own: string): string {
  if (options === null || typeof options !== 'object') return own;
  return fieldPaths.get(options) ?? own;
}
