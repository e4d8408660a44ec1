/**
 * `resolveKey` without a promise when none is needed: a key function that answers synchronously
 * and the `'ip'` source give their key in the same turn. An `async` resolver costs a promise and
 * a microtask per source per request, which showed in the Express server's CPU per request
 * (docs/benchmarks.md); the answers and errors are the same as `resolveKey`'s.
 */
import { ipKey, type KeyConfig, keyOfValue, resolveKeyFrom } from './keys.js';
import type { HttpRequestView } from './types.js';

/**
 * The key for a request (see `resolveKey`): a string when every source tried answered
 * synchronously, else a promise of it, continued from the first source that returned a
 * promise (or needs one: `'appKey'`, `'clientId'`). Throws what `resolveKey` would reject with.
 */
export function resolveKeyNow<Req>(
  config: KeyConfig<Req>,
  view: HttpRequestView,
  req: Req,
): string | Promise<string> {
  const sources = config.sources;
  for (let i = 0; i < sources.length; i++) {
    const source = sources[i]!;
    let key: string | undefined;
    if (typeof source === 'function') {
      const value: unknown = source(req);
      if (isThenable(value)) {
        return Promise.resolve(value).then(
          (settled) => keyOfValue(settled) ?? resolveKeyFrom(config, view, req, i + 1),
        );
      }
      key = keyOfValue(value);
    } else if (source === 'ip') {
      key = ipKey(config, view);
    } else {
      return resolveKeyFrom(config, view, req, i);
    }
    if (key !== undefined) return key;
  }
  return config.fallbackKey;
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return (
    value !== null &&
    (typeof value === 'object' || typeof value === 'function') &&
    typeof (value as { then?: unknown }).then === 'function'
  );
}
