/**
 * One Express app per process: `node http-server.js <mode> <redis port>` listens on a free
 * port and prints it. Every mode serves the same handler; only the limiter in front differs.
 * Requests carry their key in `x-key` (autocannon rotates it over 10 000 keys).
 */
import type { AddressInfo } from 'node:net';
import { memoryStore, RateLimiter, redisStore } from '@floodgate/core';
import express, { type Request, type RequestHandler } from 'express';
import { rateLimit as expressRateLimit } from 'express-rate-limit';
import { Redis } from 'ioredis';
import { RedisStore as RateLimitRedisStore } from 'rate-limit-redis';
import rlf from 'rate-limiter-flexible';
import { NEVER_DENY, onePolicy } from './subjects.js';

export const HTTP_MODES = [
  'no limiter',
  '@floodgate/express memory',
  '@floodgate/express redis',
  'express-rate-limit + rate-limit-redis',
  'rate-limiter-flexible middleware',
] as const;
export type HttpMode = (typeof HTTP_MODES)[number];

const keyOf = (req: Request): string => (req.headers['x-key'] as string | undefined) ?? 'anon';

/** The @floodgate/express middleware factory, when that package provides one. */
export async function floodgateExpress(): Promise<
  ((options: object) => RequestHandler) | undefined
> {
  const mod = (await import('@floodgate/express')) as Record<string, unknown>;
  return typeof mod.rateLimit === 'function'
    ? (mod.rateLimit as (options: object) => RequestHandler)
    : undefined;
}

async function limiterFor(mode: HttpMode, redisPort: number): Promise<RequestHandler | undefined> {
  const client = () => new Redis({ port: redisPort, host: '127.0.0.1' });
  switch (mode) {
    case 'no limiter':
      return undefined;
    case '@floodgate/express memory':
    case '@floodgate/express redis': {
      const rateLimit = await floodgateExpress();
      if (!rateLimit) throw new Error('@floodgate/express has no rateLimit()');
      const store = mode.endsWith('memory') ? memoryStore() : redisStore({ client: client() });
      const limiter = new RateLimiter({ store, policies: onePolicy(), prefix: 'http' });
      return rateLimit({ limiter, key: keyOf });
    }
    case 'express-rate-limit + rate-limit-redis': {
      const c = client();
      return expressRateLimit({
        windowMs: 60_000,
        limit: NEVER_DENY,
        standardHeaders: 'draft-8',
        legacyHeaders: true,
        keyGenerator: keyOf,
        store: new RateLimitRedisStore({
          sendCommand: (command: string, ...args: string[]) =>
            c.call(command, ...args) as Promise<never>,
        }),
      });
    }
    case 'rate-limiter-flexible middleware': {
      const limiter = new rlf.RateLimiterRedis({
        storeClient: client(),
        points: NEVER_DENY,
        duration: 60,
      });
      // The middleware rate-limiter-flexible's README shows, with its headers.
      return (req, res, next) => {
        limiter.consume(keyOf(req)).then(
          (r) => {
            res.set({
              'X-RateLimit-Limit': String(NEVER_DENY),
              'X-RateLimit-Remaining': String(r.remainingPoints),
              'X-RateLimit-Reset': String(Math.ceil(r.msBeforeNext / 1000)),
            });
            next();
          },
          () => res.status(429).send('Too Many Requests'),
        );
      };
    }
  }
}

async function main() {
  const [mode, port] = process.argv.slice(2) as [HttpMode, string];
  if (!HTTP_MODES.includes(mode)) throw new Error(`unknown mode ${mode}`);
  const app = express();
  app.set('etag', false);
  const limiter = await limiterFor(mode, Number(port));
  if (limiter) app.use(limiter);
  app.get('/', (_req, res) => {
    res.send('ok');
  });
  // Exit on signal so that `node --cpu-prof dist/http-server.js …` writes its profile.
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => process.exit(0));
  const server = app.listen(0, '127.0.0.1', () => {
    process.stdout.write(`${(server.address() as AddressInfo).port}\n`);
  });
}

if (process.argv[1]?.endsWith('http-server.js')) await main();
