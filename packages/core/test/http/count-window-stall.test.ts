/**
 * `count: 'failed'` with an event-loop stall across a window edge: the charged window's end is
 * taken from the charging decision (when it was asked), not from when its reply was processed.
 * A success charged just before the edge whose reply is processed after it must not refund the
 * next window (which once admitted 4 failures against a limit of 3).
 */
import { fixedWindow, memoryStore, type Store } from '@floodgate/core';
import { holdRequests, NEWEST_FRAMEWORKS, useTestApp } from '@floodgate/http-test-kit';
import request from 'supertest';

const EDGE = 1_700_000_160_000; // the end of a minute

describe.each(NEWEST_FRAMEWORKS)('%s', (_framework, serve) => {
  const { start } = useTestApp(serve);

  it('a refund whose reply came after the window edge is dropped', async () => {
    let now = EDGE - 100;
    /** The next decision is processed this many ms after the store made it (a stall). */
    let stall = 0;
    const inner = memoryStore({ clock: () => now });
    const store: Store = {
      kind: inner.kind,
      clock: inner.clock,
      leases: () => inner.leases(),
      prepare(policies, options) {
        // Without decideNow: every decision goes through decide, where the stall happens.
        const { decideNow: _, ...prepared } = inner.prepare(policies, options);
        return {
          ...prepared,
          decide: async (keys, cost, peek) => {
            const decided = await prepared.decide(keys, cost, peek);
            now += stall;
            stall = 0;
            return decided;
          },
        };
      },
    } as Store;
    const hold = holdRequests();
    const url = await start({
      onHold: hold.onHold,
      limiters: [{ store, policies: fixedWindow({ limit: 3, window: '1m' }), count: 'failed' }],
    });
    // A success decided 100 ms before the edge, its reply processed 250 ms later.
    stall = 250;
    const held = request(url)
      .get('/hold')
      .then((res) => res.status);
    await hold.reached;
    expect(now).toBe(EDGE + 150);
    // The next window: 3 failures fill it.
    const fail = async () => (await request(url).get('/?status=401')).status;
    expect([await fail(), await fail(), await fail(), await fail()]).toEqual([401, 401, 401, 429]);
    hold.finish();
    expect(await held).toBe(200);
    // The success was charged to the window that ended: its refund must not free a failure.
    expect(await fail()).toBe(429);
  });
});
