/**
 * One "app server" of the hot-key bench (hot-key.ts): `node hot-key-worker.js <json args>`,
 * `inFlight` callers on one global key from `startAt` (epoch ms), counted from `startAt +
 * warmupMs` for `durationMs`; prints one JSON line: decisions counted, and admitted units per
 * window (the window a decision was charged in: where its resetAfter ends, rounded; periodic
 * sync: this process's clock, the windows it counts in).
 */
import { fixedWindow, RateLimiter, redisStore } from '@floodgate/core';
import { Redis } from 'ioredis';

export interface WorkerArgs {
  port: number;
  subject: 'batched' | 'leased' | 'periodic-sync';
  limit: number;
  windowMs: number;
  inFlight: number;
  startAt: number;
  warmupMs: number;
  durationMs: number;
  prefix: string;
}

type Consume = () => Promise<{ allowed: boolean; resetAfter: number }>;

/** Kong's `sync_rate` (rate-limiting plugin, redis policy): counts in process, pushes the delta and reads the total every `syncMs`. */
function periodicSync(client: Redis, args: WorkerArgs, syncMs: number): Consume {
  let window = -1;
  let synced = 0; // the total Redis had at the last sync
  let delta = 0; // counted here since
  const key = () => `${args.prefix}:sync:${window}`;
  const timer = setInterval(async () => {
    if (delta === 0 || window < 0) return;
    const push = delta;
    const at = window;
    delta = 0;
    const [[, total]] = (await client
      .multi()
      .incrby(`${args.prefix}:sync:${at}`, push)
      .pexpire(`${args.prefix}:sync:${at}`, args.windowMs * 2)
      .exec()) as [[unknown, number]];
    if (at === window) synced = total;
  }, syncMs);
  timer.unref();
  return async () => {
    const now = Date.now();
    const w = Math.floor(now / args.windowMs);
    if (w !== window) {
      window = w;
      synced = Number((await client.get(key())) ?? 0);
      delta = 0;
    }
    const allowed = synced + delta < args.limit;
    if (allowed) delta++;
    return { allowed, resetAfter: (w + 1) * args.windowMs - now };
  };
}

async function main(): Promise<void> {
  const args = JSON.parse(process.argv[2]!) as WorkerArgs;
  const client = new Redis({ port: args.port, host: '127.0.0.1' });
  let consume: Consume;
  if (args.subject === 'periodic-sync') {
    consume = periodicSync(client, args, 50);
  } else {
    const limiter = new RateLimiter({
      store: redisStore({ client }),
      policies: fixedWindow({ limit: args.limit, window: args.windowMs }),
      prefix: args.prefix,
      onStoreError: 'closed',
      ...(args.subject === 'leased' ? { lease: { units: { min: 64, max: 4096 } } } : {}),
    });
    consume = () => limiter.consume('global');
  }
  await new Promise((resolve) => setTimeout(resolve, Math.max(0, args.startAt - Date.now())));
  const measureFrom = args.startAt + args.warmupMs;
  const end = measureFrom + args.durationMs;
  let decisions = 0;
  const perWindow: Record<number, number> = {};
  const caller = async () => {
    for (;;) {
      const started = Date.now();
      if (started >= end) return;
      const d = await consume();
      if (started >= measureFrom) decisions++;
      if (d.allowed) {
        const w = Math.round((Date.now() + d.resetAfter) / args.windowMs) - 1;
        perWindow[w] = (perWindow[w] ?? 0) + 1;
      }
    }
  };
  await Promise.all(Array.from({ length: args.inFlight }, caller));
  process.stdout.write(`${JSON.stringify({ decisions, perWindow })}\n`);
  client.disconnect();
  process.exit(0);
}

void main();
