/**
 * The shared layer of every adapter's `loadShedder(...)`: option parsing (errors named under the
 * adapter's field), admission by the request's class, and the 503 answer of a shed request.
 * Each adapter runs load-shedder-table.ts through a real server in its own package.
 */

import http from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  type AdaptiveDecision,
  adaptiveConcurrency,
  ConcurrencyLimiter,
  memoryStore,
} from '@floodgate/core';
import {
  OVERLOADED_TYPE,
  overloadedAnswer,
  parseLoadShedderOptions,
  releaseWhenFinished,
  shedRequest,
} from '@floodgate/core/http';
import { configErrorOf } from '@floodgate/http-test-kit';

type Req = { criticality?: string };

/** The decision of a limiter without a fleet pool: answered at once, never a promise. */
const now = (decision: AdaptiveDecision | Promise<AdaptiveDecision> | undefined) => {
  expect(decision).not.toBeInstanceOf(Promise);
  return decision as AdaptiveDecision | undefined;
};

describe('parseLoadShedderOptions', () => {
  it('builds a Gradient2 limit with the defaults when given none', () => {
    expect(parseLoadShedderOptions({}, 'loadShedder').limiter.algorithm).toBe('gradient2');
  });

  it('names fields of inline limiter options under the adapter', () => {
    const error = configErrorOf(() =>
      parseLoadShedderOptions({ limiter: { algorithm: 'aimd', smoothing: 1 } }, 'loadShedder'),
    );
    expect([error.field, error.code]).toEqual([
      'loadShedder.limiter.smoothing',
      'FLOODGATE_UNKNOWN_OPTION',
    ]);
  });

  it.each([
    [{ criticality: 'urgent' }, 'loadShedder.criticality'],
    [{ limiter: 5 }, 'loadShedder.limiter'],
    [{ skip: true }, 'loadShedder.skip'],
    [{ priority: () => 'critical' }, 'loadShedder.priority'],
  ])('refuses %j at construction', (options, field) => {
    expect(configErrorOf(() => parseLoadShedderOptions(options, 'loadShedder')).field).toBe(field);
  });
});

describe('shedRequest', () => {
  const limiter = () =>
    adaptiveConcurrency({ algorithm: 'aimd', initialLimit: 1, minLimit: 1, maxLimit: 1 });

  it('admits by the class the function gives, and lets skipped requests pass without a slot', () => {
    const config = parseLoadShedderOptions<Req>(
      {
        limiter: limiter(),
        criticality: (req: Req) => req.criticality as never,
        skip: (req: Req) => req.criticality === 'health',
      },
      'loadShedder',
    );
    expect(shedRequest(config, { criticality: 'health' })).toBeUndefined();
    expect(now(shedRequest(config, {}))?.allowed).toBe(false); // 'default' may fill 1 × 0.8 = 0 slots
    expect(now(shedRequest(config, { criticality: 'critical' }))?.allowed).toBe(true);
    expect(() => shedRequest(config, { criticality: 'urgent' })).toThrow(/criticality must be/);
  });

  it('answers with a promise when the limit has a fleet-wide pool (its store is asked)', async () => {
    const pool = new ConcurrencyLimiter({ store: memoryStore(), limit: 2, leaseTtl: '1m' });
    const config = parseLoadShedderOptions<Req>(
      {
        limiter: {
          algorithm: 'aimd',
          fleet: { limiter: pool, criticalReserve: 0.5, defaultReserve: 0 },
        },
      },
      'loadShedder',
    );
    const pending = shedRequest(config, {});
    expect(pending).toBeInstanceOf(Promise);
    expect(await pending).toMatchObject({
      allowed: true,
      policies: [{}, { name: 'concurrency-2' }],
    });
    expect(await shedRequest(config, {})).toMatchObject({
      allowed: false,
      policy: 'concurrency-2',
    });
  });

  it('answers a shed request with 503, Retry-After in whole seconds and a problem body', () => {
    const config = parseLoadShedderOptions<Req>(
      { limiter: limiter(), criticality: 'sheddable' },
      'loadShedder',
    );
    const decision = now(shedRequest(config, {}));
    expect(decision?.allowed).toBe(false);
    const answer = overloadedAnswer(decision!);
    expect(answer).toMatchObject({
      status: 503,
      headers: { 'Retry-After': '1', 'Content-Type': 'application/problem+json' },
      problem: { type: OVERLOADED_TYPE, status: 503, criticality: 'sheddable' },
    });
  });
});

describe('releaseWhenFinished', () => {
  /** A real server: each request takes a slot, answered after `x-wait` ms (never, if absent). */
  const serve = async (limiter: ReturnType<typeof adaptiveConcurrency>) => {
    const server = http.createServer((req, res) => {
      const decision = now(limiter.tryAcquire({ criticality: 'critical' }));
      releaseWhenFinished(res, decision!.lease!);
      const wait = req.headers['x-wait'];
      if (wait !== undefined) setTimeout(() => res.end('ok'), Number(wait));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/` };
  };

  it('teaches the limit the latency of a finished response, and nothing from a client that went away', async () => {
    // AIMD with timeout 1 ms: every latency that is learnt is a drop and cuts the limit by half.
    const limiter = adaptiveConcurrency({
      algorithm: 'aimd',
      initialLimit: 8,
      minLimit: 1,
      backoffRatio: 0.5,
      timeout: '1ms',
    });
    const { server, url } = await serve(limiter);
    try {
      // A client that gives up before the answer: the slot frees, the limit is untouched.
      const aborted = http.get(url);
      aborted.on('error', () => undefined);
      for (let i = 0; i < 100 && limiter.inFlight === 0; i++) {
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      expect(limiter.inFlight).toBe(1);
      aborted.destroy();
      for (let i = 0; i < 100 && limiter.inFlight > 0; i++) {
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      expect([limiter.inFlight, limiter.limit]).toEqual([0, 8]);
      // A finished response is learnt: 20 ms is over the 1 ms timeout, the limit halves.
      const status = await new Promise<number | undefined>((resolve, reject) => {
        http
          .get(url, { headers: { 'x-wait': '20' } }, (res) => {
            res.resume();
            res.on('end', () => resolve(res.statusCode));
          })
          .on('error', reject);
      });
      expect(status).toBe(200);
      for (let i = 0; i < 100 && limiter.inFlight > 0; i++) {
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      expect([limiter.inFlight, limiter.limit]).toEqual([0, 4]);
    } finally {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
