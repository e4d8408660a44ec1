/**
 * Adapters report configuration errors under their own option names because the field path is
 * passed down to the core's readers (`readAs`, `createRateLimiter`), not because a finished
 * message is rewritten: values echoed in messages stay exactly as given, and unknown names are
 * checked against the option lists tied to the options types.
 */
import { fixedWindow, memoryStore, RateLimitConfigError, RateLimiter } from '@floodgate/core';
import {
  createRateLimiter,
  parseHttpRateLimitOptions,
  RATE_LIMITER_OPTION_NAMES,
  readAs,
} from '@floodgate/core/http';
import { configErrorOf } from '@floodgate/http-test-kit';
import { optionNames } from '../../src/options';

const policies = fixedWindow({ limit: 2, window: '1m' });
const parse = (options: Record<string, unknown>) =>
  configErrorOf(() => parseHttpRateLimitOptions(options, 'rateLimit'));

describe('field paths passed down to the core', () => {
  it('a limiter option names the adapter field and echoes a value mentioning RateLimiter as given', () => {
    const error = parse({ policies, prefix: 'RateLimiter.{x}' });
    expect(error.field).toBe('rateLimit.prefix');
    expect(error.value).toBe('RateLimiter.{x}');
    expect(error.message).toMatch(
      /^rateLimit\.prefix must be .*, got "RateLimiter\.\{x\}" \(help: /,
    );
  });

  it('a concurrency option echoes a value that contains ", got " unchanged', () => {
    const error = parse({ concurrency: { limit: 1, leaseTtl: 'soon, got it' } });
    expect(error.field).toBe('rateLimit.concurrency.leaseTtl');
    expect(error.code).toBe('FLOODGATE_INVALID_OPTION');
    expect(error.message).toMatch(
      /^rateLimit\.concurrency\.leaseTtl must be a positive duration \(milliseconds, or a string like '250ms', '1s', '1m', '1h', '1d'\), got "soon, got it" \(help: /,
    );
  });

  it('nested limiter options (deniedCache, circuitBreaker, hooks) keep the adapter prefix', () => {
    expect(parse({ policies, deniedCache: { maxKeys: 0 } }).field).toBe(
      'rateLimit.deniedCache.maxKeys',
    );
    expect(parse({ policies, circuitBreaker: { cooldown: -1 } }).field).toBe(
      'rateLimit.circuitBreaker.cooldown',
    );
    expect(parse({ policies, hooks: { onDecision: 1 } }).field).toBe('rateLimit.hooks.onDecision');
    const duplicate = parse({ policies: [policies, policies] });
    expect(duplicate.code).toBe('FLOODGATE_DUPLICATE_POLICY');
    expect(duplicate.message).toMatch(
      /^rateLimit\.policies\[1\]\.name "fixed-2-per-60s" is already/,
    );
  });

  it('an unknown name is unknown even next to a ready limiter, and both name lists are given', () => {
    const limiter = new RateLimiter({ store: memoryStore(), policies });
    const error = parse({ limiter, windowMs: 60_000 });
    expect(error.code).toBe('FLOODGATE_UNKNOWN_OPTION');
    expect(error.field).toBe('rateLimit.windowMs');
    expect(error.message).toContain('adapter options: limiter, headers, skip, cost, onLimited');
    expect(error.message).toContain(`limiter options: ${RATE_LIMITER_OPTION_NAMES.join(', ')}`);
  });

  it('createRateLimiter names fields under the caller, RateLimiter under its own name', () => {
    const options = { store: memoryStore(), policies: [] };
    expect(configErrorOf(() => createRateLimiter(options, 'plugin')).field).toBe('plugin.policies');
    expect(configErrorOf(() => new RateLimiter(options)).field).toBe('RateLimiter.policies');
  });

  it('readAs gives a policy factory the caller’s field path, for that call only', () => {
    const options = { limit: 2.5, window: '1s' as const, name: 'fixedWindow.x y' };
    const error = configErrorOf(() =>
      readAs(options, '@RateLimit(Cats.list)', () => fixedWindow(options)),
    );
    expect(error.field).toBe('@RateLimit(Cats.list).limit');
    expect(error.message).toMatch(/^@RateLimit\(Cats\.list\)\.limit must be/);
    const named = { limit: 1, window: '1s' as const, name: 'fixedWindow.x y' };
    const nameError = configErrorOf(() => readAs(named, 'Cats', () => fixedWindow(named)));
    expect(nameError.message).toContain('got "fixedWindow.x y"');
    expect(configErrorOf(() => fixedWindow(options)).field).toBe('fixedWindow.limit');
  });
});

describe('option-name lists tied to their options types', () => {
  it('optionNames lists every name of the type, in order', () => {
    expect(optionNames<{ a?: number; b: string }>({ a: true, b: true })).toEqual(['a', 'b']);
  });

  it('does not compile when a name is missing or foreign (tsc checks these lines)', () => {
    // @ts-expect-error `b` is an option of the type and missing from the list
    const missing = optionNames<{ a?: number; b: string }>({ a: true });
    // @ts-expect-error `c` is not an option of the type
    const foreign = optionNames<{ a?: number }>({ a: true, c: true });
    expect([missing, foreign]).toEqual([['a'], ['a', 'c']]);
  });

  it('the RateLimiter list is the one both adapters and the limiter read', () => {
    expect([...RATE_LIMITER_OPTION_NAMES].sort()).toEqual([
      'ban',
      'circuitBreaker',
      'deniedCache',
      'hooks',
      'lease',
      'maxQueueSize',
      'onStoreError',
      'policies',
      'prefix',
      'stateKeys',
      'store',
      'timeout',
    ]);
    const error = configErrorOf(
      () => new RateLimiter({ store: memoryStore(), policies, max: 1 } as never),
    );
    expect(error).toBeInstanceOf(RateLimitConfigError);
    expect(error.message).toContain(`known: ${RATE_LIMITER_OPTION_NAMES.join(', ')}`);
  });
});
