/**
 * A response waits for its limiters' settlements (count refunds, concurrency releases) before it
 * goes out, and a stalled store must hold it for one `timeout` at most, not one per limiter:
 * every settlement of one response starts when its `end` is called, all at once. Checked by order
 * (how many stalled store calls had started when the first one timed out), never by a clock.
 */
import { fixedWindow, memoryStore, type Store } from '@floodgate/core';
import { NEWEST_FRAMEWORKS, useTestApp } from '@floodgate/http-test-kit';
import request from 'supertest';

/** A memory store whose refunds and lease releases never answer once `stall.on` is set. */
function stallingStore(stall: { on: boolean }, started: string[]): Store {
  const store = memoryStore();
  const hang = (what: string) => {
    started.push(what);
    return new Promise<never>(() => undefined);
  };
  return new Proxy(store, {
    get(target, name, receiver) {
      if (name === 'prepare') {
        return (...args: Parameters<Store['prepare']>) =>
          new Proxy(target.prepare(...args), {
            get(prepared, member, r) {
              const value = Reflect.get(prepared, member, r);
              if (member !== 'refund') return value;
              return (...a: unknown[]) =>
                stall.on ? hang('refund') : (value as (...x: unknown[]) => unknown)(...a);
            },
          });
      }
      if (name === 'leases') {
        return () =>
          new Proxy(target.leases!(), {
            get(leases, member, r) {
              const value = Reflect.get(leases, member, r);
              if (member !== 'release') return value;
              return (...a: unknown[]) =>
                stall.on ? hang('release') : (value as (...x: unknown[]) => unknown)(...a);
            },
          });
      }
      return Reflect.get(target, name, receiver);
    },
  });
}

describe.each(NEWEST_FRAMEWORKS)('%s', (_framework, serve) => {
  const { start } = useTestApp(serve);

  it('stacked count refunds and a lease release wait together: one timeout, not one each', async () => {
    const stall = { on: false };
    const started: string[] = [];
    const store = stallingStore(stall, started);
    // How many stalled calls had started when each limiter's call timed out.
    const atTimeout: number[] = [];
    const hooks = { onStoreError: () => void atTimeout.push(started.length) };
    const limiter = (name: string, extra: object = {}) => ({
      store,
      prefix: name,
      timeout: 50,
      hooks,
      count: 'failed',
      policies: fixedWindow({ name, limit: 10, window: '1m' }),
      ...extra,
    });
    const url = await start({
      limiters: [limiter('a', { concurrency: { limit: 5 } }), limiter('b'), limiter('c')],
      onHandler: () => {
        stall.on = true;
      },
    });
    // The stalled store is reported (FLOODGATE_STORE_UNAVAILABLE): expected here.
    const warn = jest.spyOn(process, 'emitWarning').mockImplementation(() => undefined);
    let ok: request.Response;
    try {
      ok = await request(url).get('/');
    } finally {
      warn.mockRestore();
    }
    expect(ok.status).toBe(200);
    expect(started.sort()).toEqual(['refund', 'refund', 'refund', 'release']);
    // Every settlement had started before the first one gave up.
    expect(atTimeout[0]).toBe(4);
  });
});
