/**
 * Checks of the policies that apply to one handler, at bootstrap: `@SkipRateLimit(...names)`
 * must name some of them, and module and handler policies must not share a name.
 */
import { type Policy, RateLimitConfigError } from '@floodgate/core';
import { configError } from '@floodgate/core/http';

/** The names `@SkipRateLimit(...)` skips; each must be a policy of the handler. */
export function parseSkipNames(
  value: unknown,
  where: string,
  policies: readonly Policy[],
): ReadonlySet<string> {
  const known = policies.map((p) => p.name);
  if (!Array.isArray(value)) {
    throw configError(where, value, 'no argument, true, false, or policy names as strings');
  }
  value.forEach((name: unknown, i) => {
    if (typeof name !== 'string' || !known.includes(name)) {
      throw new RateLimitConfigError(
        'FLOODGATE_INVALID_OPTION',
        `${where}[${i}]`,
        name,
        `${where}: ${describeName(name)} is not the name of a policy that applies here ` +
          `(${known.length > 0 ? known.map((n) => `"${n}"`).join(', ') : 'none'}); ` +
          'give @SkipRateLimit() no argument to skip every limit',
      );
    }
  });
  return new Set(value as string[]);
}

/** Module and handler policies may share a limiter (and headers): their names must differ. */
export function checkNames(
  module: { readonly policies: readonly Policy[] },
  own: { readonly policies: readonly Policy[] },
  where: string,
): void {
  const names = new Set(module.policies.map((p) => p.name));
  own.policies.forEach((p, i) => {
    if (!names.has(p.name)) return;
    throw new RateLimitConfigError(
      'FLOODGATE_DUPLICATE_POLICY',
      `@RateLimit(${where}).policies[${i}].name`,
      p.name,
      `@RateLimit(${where}): policy name "${p.name}" is also a module policy's name; name it ` +
        'differently (both apply, and headers tell policies apart by name), or give override: true',
    );
  });
}

function describeName(name: unknown): string {
  return typeof name === 'string' ? `"${name}"` : String(name);
}
