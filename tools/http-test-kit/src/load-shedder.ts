/**
 * The scenarios every adapter's `loadShedder(...)` must pass, through a real server: admission
 * under the adaptive limit, the 503 problem with `Retry-After`, criticality from a function of
 * the request, the slot released and its latency (acquire to response finish, or to the client's
 * abort) fed to the limit. Each adapter serves an app with `serve(limiter)`: `GET /hold` waits
 * until the test finishes it (`held`), `GET /fast` answers at once, and the class comes from the
 * `x-criticality` header through `criticalityOf` (`boom` throws).
 */
import http, { type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  type AdaptiveConcurrency,
  adaptiveConcurrency,
  ConcurrencyLimiter,
  type Criticality,
  memoryStore,
} from '@floodgate/core';
import { OVERLOADED_TYPE, PROBLEM_CONTENT_TYPE } from '@floodgate/core/http';
import request from 'supertest';

/** Handlers of `/hold` requests waiting to be finished, oldest first. */
export const held: (() => void)[] = [];

/** Reads the class from `x-criticality`; `boom` throws. */
export function criticalityOf(header: string | string[] | undefined): Criticality | undefined {
  if (header === 'boom') throw new Error('criticality failed');
  return header as Criticality | undefined;
}

/** A server under test. */
export interface Running {
  readonly server: Server;
  close(): Promise<void>;
}

/** Serves an app whose load shedder admits under `limiter`. */
export type ServeShedder = (limiter: AdaptiveConcurrency) => Promise<Running>;

/** Serves a plain Node request listener on 127.0.0.1 (Express, Koa). */
export const listen = async (handler: http.RequestListener): Promise<Running> => {
  const server = http.createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, close: () => new Promise((resolve) => server.close(() => resolve())) };
};

/** Polls (bounded, about 2 s) until `probe()` is true. */
async function until(probe: () => boolean): Promise<void> {
  for (let i = 0; i < 100 && !probe(); i++) await new Promise((resolve) => setTimeout(resolve, 20));
  expect(probe()).toBe(true);
}

/** Runs the table against one adapter. */
export function describeLoadShedder(name: string, serve: ServeShedder): void {
  describe(`loadShedder on ${name}`, () => {
    let now = 1_000_000;
    let running: Running | undefined;
    let url = '';
    /** AIMD between 1 and `max`: a drop (latency over 100 ms) halves it. */
    const start = async (initial: number) => {
      const limiter = adaptiveConcurrency({
        algorithm: 'aimd',
        initialLimit: initial,
        minLimit: 1,
        maxLimit: initial,
        backoffRatio: 0.5,
        timeout: '100ms',
        clock: () => now,
      });
      running = await serve(limiter);
      url = `http://127.0.0.1:${(running.server.address() as AddressInfo).port}`;
      return limiter;
    };
    /** Starts a `/hold` request and resolves, once its handler holds it, with its response to come. */
    const hold = async (criticality: Criticality) => {
      const before = held.length;
      const response = request(url).get('/hold').set('x-criticality', criticality);
      const done = response.then((r) => r);
      await until(() => held.length > before);
      return { response: done };
    };

    afterEach(async () => {
      for (const finish of held.splice(0)) finish();
      await running?.close();
      running = undefined;
    });

    it('admits under the limit and releases the slot when the response finishes', async () => {
      const limiter = await start(4);
      const response = await request(url).get('/fast').set('x-criticality', 'critical');
      expect([response.status, response.text]).toEqual([200, 'ok']);
      await until(() => limiter.inFlight === 0);
    });

    it('answers 503 with Retry-After and a problem body once the class has no room', async () => {
      const limiter = await start(2);
      const first = await hold('critical');
      const second = await hold('critical');
      expect(limiter.inFlight).toBe(2);
      const shed = await request(url).get('/fast').set('x-criticality', 'critical');
      expect(shed.status).toBe(503);
      expect(Number(shed.headers['retry-after'])).toBeGreaterThanOrEqual(1);
      expect(shed.headers['content-type']).toMatch(PROBLEM_CONTENT_TYPE);
      expect(JSON.parse(shed.text)).toMatchObject({
        type: OVERLOADED_TYPE,
        status: 503,
        criticality: 'critical',
      });
      for (const finish of held.splice(0)) finish();
      expect([(await first.response).status, (await second.response).status]).toEqual([200, 200]);
    });

    it('sheds by the class the criticality function gives, keeping the reserve for critical', async () => {
      // limit 2: default requests may fill 2 × 0.8 = 1 slot, critical both
      await start(2);
      const holding = await hold('default');
      expect((await request(url).get('/fast').set('x-criticality', 'default')).status).toBe(503);
      expect((await request(url).get('/fast').set('x-criticality', 'critical')).status).toBe(200);
      for (const finish of held.splice(0)) finish();
      expect((await holding.response).status).toBe(200);
    });

    it('feeds the latency from admission to response finish to the limit', async () => {
      const limiter = await start(4);
      const slow = await hold('critical');
      now += 150; // over the 100 ms timeout: a drop halves the limit when the response finishes
      for (const finish of held.splice(0)) finish();
      expect((await slow.response).status).toBe(200);
      await until(() => limiter.inFlight === 0);
      expect(limiter.limit).toBe(2);
    });

    it('frees the slot when the client aborts, teaching the limit nothing', async () => {
      const limiter = await start(4);
      const before = held.length;
      const req = http.get(`${url}/hold`, { headers: { 'x-criticality': 'critical' } });
      req.on('error', () => undefined);
      await until(() => held.length > before);
      expect(limiter.inFlight).toBe(1);
      // past the 100 ms timeout: had the abort been taken as a sample, the limit would halve
      now += 150;
      req.destroy();
      await until(() => limiter.inFlight === 0);
      expect(limiter.limit).toBe(4);
    });

    it('keeps the fleet-wide reserve: a pool filled by another process sheds non-critical requests only', async () => {
      // a pool of 2 shared with "another process", half of it reserved: one non-critical lease
      const pool = new ConcurrencyLimiter({ store: memoryStore(), limit: 2, leaseTtl: '1m' });
      const limiter = adaptiveConcurrency({
        algorithm: 'aimd',
        initialLimit: 4,
        minLimit: 4,
        maxLimit: 4,
        criticalReserve: 0.5,
        defaultReserve: 0,
        fleet: { limiter: pool, key: 'api' },
      });
      running = await serve(limiter);
      url = `http://127.0.0.1:${(running.server.address() as AddressInfo).port}`;
      const elsewhere = await pool.acquire('api', { limit: 1 });
      const shed = await request(url).get('/fast').set('x-criticality', 'default');
      expect(shed.status).toBe(503);
      expect(JSON.parse(shed.text)).toMatchObject({
        type: OVERLOADED_TYPE,
        criticality: 'default',
      });
      expect((await request(url).get('/fast').set('x-criticality', 'critical')).status).toBe(200);
      await elsewhere.lease!.release();
      expect((await request(url).get('/fast').set('x-criticality', 'default')).status).toBe(200);
      // the response finished: this process's lease of the pool is free again
      await until(() => limiter.inFlight === 0);
      let free = false;
      for (let i = 0; i < 50 && !free; i++) {
        const probe = await pool.acquire('api', { limit: 1 });
        free = probe.allowed;
        await probe.lease?.release();
        if (!free) await new Promise((resolve) => setTimeout(resolve, 10));
      }
      expect(free).toBe(true);
    });

    it('sends a throwing criticality function to the error path (500), taking no slot', async () => {
      const limiter = await start(4);
      const response = await request(url).get('/fast').set('x-criticality', 'boom');
      expect(response.status).toBe(500);
      expect(limiter.inFlight).toBe(0);
    });
  });
}
