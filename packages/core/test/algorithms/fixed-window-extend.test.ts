/**
 * fixedWindow `extendWindow` outside the conformance table: its options (implies anchor
 * 'first-request', refuses 'clock'), distinct ids, and a limiter that keeps no denied cache for
 * it (each denial moves its own retryAfter, so a cached one would end the window too early).
 */

import { configErrorOf } from '@floodgate/http-test-kit';
import { fixedWindow, memoryStore, RateLimiter } from '../../src/index';

describe('fixedWindow extendWindow', () => {
  it('implies anchor first-request; refuses anchor clock and unknown values', () => {
    const policy = fixedWindow({ limit: 2, window: '1s', extendWindow: 'on-denial' });
    expect(policy.options).toMatchObject({ anchor: 'first-request', extendWindow: 'on-denial' });
    expect(policy.name).toBe('fixed-2-per-1s-first-request-extend-on-denial');
    const ids = new Set(
      [undefined, 'on-denial', 'on-hit'].map(
        (extendWindow) =>
          fixedWindow({
            limit: 2,
            window: '1s',
            anchor: 'first-request',
            ...(extendWindow ? { extendWindow } : {}),
          } as never).id,
      ),
    );
    expect(ids.size).toBe(3);
    expect(
      configErrorOf(() =>
        fixedWindow({ limit: 2, window: '1s', anchor: 'clock', extendWindow: 'on-hit' }),
      ).field,
    ).toBe('fixedWindow.anchor');
    expect(
      configErrorOf(() => fixedWindow({ limit: 2, window: '1s', extendWindow: true as never }))
        .field,
    ).toBe('fixedWindow.extendWindow');
  });

  it('a denied cache never answers for it: every denial reaches the store and extends', async () => {
    let now = 1_700_000_000_000;
    const limiter = new RateLimiter({
      store: memoryStore({ clock: () => now }),
      policies: fixedWindow({ limit: 1, window: 100, extendWindow: 'on-denial' }),
      deniedCache: { clock: () => now },
    });
    expect((await limiter.consume('k')).allowed).toBe(true);
    now += 50;
    expect(await limiter.consume('k')).toMatchObject({ allowed: false, retryAfter: 100 });
    now += 60;
    // Reached the store: the window now ends at +210, not at +150.
    expect(await limiter.consume('k')).toMatchObject({ allowed: false, retryAfter: 100 });
    now += 40;
    expect(await limiter.consume('k')).toMatchObject({ allowed: false, retryAfter: 100 });
  });
});
