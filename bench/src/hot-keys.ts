/**
 * The hot-key sketches (`hotKeys` option, limiter.hotKeys() / deniedKeys()), measured with the
 * process clock:
 *  - cost: decisions per second and Node CPU per decision with the sketches on and off, side by
 *    side in one run (memoryStore tight loop; redisStore with 64 in flight, batched), one key
 *    and 100,000 keys; quoted as ratios (on / off);
 *  - detection: paced traffic over 100,000 keys, then one key at 6 %: milliseconds until
 *    hotKeys() flags it (`hot`: guaranteed share ≥ 5 %), and whether anything else was flagged;
 *  - memory: heap (after a full GC) of 50 limiters whose two sketches (128 and 64 counters) are
 *    full of 10,000-char keys (one-byte and two-byte characters), minus the same limiters with
 *    `hotKeys: false`.
 * Writes bench/hot-keys-results.json and prints the table docs/benchmarks.md quotes.
 *
 *   pnpm --filter '@floodgate/bench...' run build && pnpm --filter @floodgate/bench run hot-keys
 */
import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import {
  fixedWindow,
  type HotKeysOptions,
  memoryStore,
  RateLimiter,
  redisStore,
} from '@floodgate/core';
import { startRedisServer } from '@floodgate/redis-server';
import { Redis } from 'ioredis';
import { closedLoop, keySet, median, rotate, SCALE, tightLoop } from './measure.js';

const HERE = dirname(fileURLToPath(import.meta.url));
const REPS = Number(process.env.BENCH_REPS ?? 9) || 9;
const MEASURE_MS = 600 * SCALE;
const WARMUP_MS = 200 * SCALE;
const NEVER_DENY = 1_000_000_000;

function log(message: string) {
  process.stderr.write(`[hot-keys ${new Date().toISOString().slice(11, 19)}] ${message}\n`);
}

interface CostRow {
  store: string;
  keys: string;
  onPerSec: number;
  offPerSec: number;
  /** Node CPU µs per decision. */
  onCpuUs: number;
  offCpuUs: number;
}

/** ops/s and Node CPU µs per op of one subject over one measured phase. */
async function sample(
  store: 'memory' | 'redis',
  op: (key: string) => Promise<unknown>,
  keys: readonly string[],
): Promise<{ perSec: number; cpuUs: number }> {
  if (store === 'memory') {
    await tightLoop(op, keys, WARMUP_MS, 0);
    const cpu = process.cpuUsage();
    const t0 = performance.now();
    const perSec = await tightLoop(op, keys, MEASURE_MS, 0);
    const used = process.cpuUsage(cpu);
    const seconds = (performance.now() - t0) / 1000;
    return { perSec, cpuUs: (used.user + used.system) / (perSec * seconds) };
  }
  let cpu = process.cpuUsage();
  let t0 = 0;
  const s = await closedLoop(op, keys, 64, MEASURE_MS, WARMUP_MS, () => {
    cpu = process.cpuUsage();
    t0 = performance.now();
  });
  const used = process.cpuUsage(cpu);
  const seconds = (performance.now() - t0) / 1000;
  return { perSec: s.opsPerSec, cpuUs: (used.user + used.system) / (s.opsPerSec * seconds) };
}

async function measureCost(client: Redis): Promise<CostRow[]> {
  const rows: CostRow[] = [];
  const workloads = { '1 key': keySet(1, 'hot'), '100,000 keys': keySet(100_000) };
  for (const store of ['memory', 'redis'] as const) {
    for (const [name, keys] of Object.entries(workloads)) {
      const limiter = (hotKeys: boolean) =>
        new RateLimiter({
          store: store === 'memory' ? memoryStore({ maxKeys: 200_000 }) : redisStore({ client }),
          policies: fixedWindow({ limit: NEVER_DENY, window: '1h' }),
          prefix: `bench-hk-${hotKeys}`,
          hotKeys,
        });
      const subjects = [
        { on: true, limiter: limiter(true) },
        { on: false, limiter: limiter(false) },
      ];
      const results: Record<'on' | 'off', { perSec: number; cpuUs: number }[]> = {
        on: [],
        off: [],
      };
      for (let r = 0; r < REPS; r++) {
        for (const s of rotate(subjects, r)) {
          const result = await sample(store, (key) => s.limiter.consume(key), keys);
          (s.on ? results.on : results.off).push(result);
        }
      }
      rows.push({
        store,
        keys: name,
        onPerSec: median(results.on.map((x) => x.perSec)),
        offPerSec: median(results.off.map((x) => x.perSec)),
        onCpuUs: median(results.on.map((x) => x.cpuUs)),
        offCpuUs: median(results.off.map((x) => x.cpuUs)),
      });
      log(`cost ${store} ${name}: ${JSON.stringify(rows.at(-1))}`);
      if (store === 'redis') await client.flushdb();
    }
  }
  return rows;
}

interface DetectionRow {
  decisionsPerSec: number;
  /** Milliseconds from the hot key's first decision until it was flagged; NaN if never (3 s). */
  flaggedAfterMs: number;
  /** Other keys ever flagged (guaranteed share ≥ 5 %) during the run. */
  falseFlags: number;
}

/** Paced traffic at `rate` decisions/s on the process clock, 100,000 keys, then a 6 % key. */
async function detect(rate: number, hotShare = 0.06): Promise<DetectionRow> {
  const limiter = new RateLimiter({
    store: memoryStore({ maxKeys: 200_000 }),
    policies: fixedWindow({ limit: NEVER_DENY, window: '1h' }),
  });
  let seed = 42;
  const random = () => {
    seed ^= seed << 13;
    seed ^= seed >>> 17;
    seed ^= seed << 5;
    return (seed >>> 0) / 2 ** 32;
  };
  const coldMs = 1000;
  const endMs = coldMs + 3000;
  const start = performance.now();
  let sent = 0;
  let hotFrom = Number.NaN;
  let flaggedAt = Number.NaN;
  const falseFlags = new Set<string>();
  for (;;) {
    const elapsed = performance.now() - start;
    if (elapsed >= endMs || !Number.isNaN(flaggedAt)) break;
    const due = Math.floor((elapsed * rate) / 1000);
    for (; sent < due; sent++) {
      const hot = elapsed >= coldMs && random() < hotShare;
      if (hot && Number.isNaN(hotFrom)) hotFrom = performance.now();
      await limiter.consume(hot ? 'tenant-42' : `user-${Math.floor(random() * 100_000)}`);
    }
    // What a reader (a dashboard, lease: 'auto') sees, checked once a millisecond.
    for (const k of limiter.hotKeys(3)) {
      if (!k.hot) continue;
      if (k.key === 'tenant-42') flaggedAt = performance.now();
      else falseFlags.add(k.key);
    }
    await new Promise<void>((resolve) => setImmediate(resolve));
  }
  return {
    decisionsPerSec: rate,
    flaggedAfterMs: flaggedAt - hotFrom,
    falseFlags: falseFlags.size,
  };
}

interface MemoryRow {
  characters: string;
  /** Bytes per limiter: both sketches full (128 + 64 counters). */
  perLimiter: number;
  /** Bytes per 128-counter sketch: 2/3 of the limiter's 192 counters. */
  perSketch: number;
}

/** Runs in a child with --expose-gc: heap of full sketches, 10,000-character keys. */
async function memoryChild(): Promise<MemoryRow[]> {
  const gc = (globalThis as { gc?: () => void }).gc!;
  const N = 50;
  const CAPACITY = 128;
  const rows: MemoryRow[] = [];
  for (const [characters, filler] of [
    ['one-byte (Latin-1)', 'k'],
    ['two-byte (e.g. Cyrillic)', 'ж'],
  ] as const) {
    const heapOf = async (hotKeys: boolean | HotKeysOptions) => {
      gc();
      const before = process.memoryUsage().heapUsed;
      const limiters: RateLimiter[] = [];
      for (let i = 0; i < N; i++) {
        const limiter = new RateLimiter({
          store: memoryStore(),
          policies: fixedWindow({ limit: 1, window: '1h' }),
          hotKeys,
        });
        for (let j = 0; j < CAPACITY; j++) {
          const key = `${i}:${j}:`.padEnd(10_000, filler);
          await limiter.consume(key);
          await limiter.consume(key); // denied: fills the denied sketch too
        }
        limiters.push(limiter);
      }
      gc();
      const used = process.memoryUsage().heapUsed - before;
      for (const limiter of hotKeys === false ? [] : limiters) {
        if (limiter.hotKeys(1000).length !== CAPACITY) throw new Error('a sketch is not full');
        if (limiter.deniedKeys(1000).length !== CAPACITY / 2) throw new Error('not full');
      }
      return used;
    };
    const off = median([await heapOf(false), await heapOf(false), await heapOf(false)]);
    // A long half-life: nothing decays (or is forgotten) while the heap is measured.
    const full: HotKeysOptions = { halfLife: '1h' };
    const on = median([await heapOf(full), await heapOf(full), await heapOf(full)]);
    const perLimiter = (on - off) / N;
    rows.push({ characters, perLimiter, perSketch: (perLimiter * 2) / 3 });
  }
  return rows;
}

async function measureMemory(): Promise<MemoryRow[]> {
  const { stdout } = await promisify(execFile)(
    process.execPath,
    ['--expose-gc', fileURLToPath(import.meta.url), 'memory'],
    { maxBuffer: 1 << 20 },
  );
  return JSON.parse(stdout.trim().split('\n').pop()!) as MemoryRow[];
}

function table(cost: CostRow[], detection: DetectionRow[], memory: MemoryRow[]): string {
  const kib = (bytes: number) => `${(bytes / 1024).toFixed(1)} KiB`;
  const lines = [
    '| store | keys | decisions/s on / off | Node CPU per decision on / off |',
    '|---|---|---|---|',
    ...cost.map(
      (r) =>
        `| ${r.store} | ${r.keys} | ${(r.onPerSec / r.offPerSec).toFixed(2)} (${Math.round(r.onPerSec)} / ${Math.round(r.offPerSec)}) | ${(r.onCpuUs / r.offCpuUs).toFixed(2)} (${r.onCpuUs.toFixed(2)} / ${r.offCpuUs.toFixed(2)} µs) |`,
    ),
    '',
    '| decisions/s | a 6 % key flagged after | other keys flagged |',
    '|---|---|---|',
    ...detection.map(
      (d) =>
        `| ${d.decisionsPerSec} | ${Number.isNaN(d.flaggedAfterMs) ? 'not within 3 s' : `${Math.round(d.flaggedAfterMs)} ms`} | ${d.falseFlags} |`,
    ),
    '',
    '| keys (10,000 characters, stored as 128) | per 128-counter sketch | per limiter (128 + 64 counters) |',
    '|---|---|---|',
    ...memory.map((m) => `| ${m.characters} | ${kib(m.perSketch)} | ${kib(m.perLimiter)} |`),
  ];
  return lines.join('\n');
}

async function main() {
  if (process.argv[2] === 'memory') {
    process.stdout.write(`${JSON.stringify(await memoryChild())}\n`);
    return;
  }
  log('memory');
  const memory = await measureMemory();
  log(`memory: ${JSON.stringify(memory)}`);
  const detection: DetectionRow[] = [];
  for (const rate of [2_000, 20_000, 50_000]) {
    detection.push(await detect(rate));
    log(`detection: ${JSON.stringify(detection.at(-1))}`);
  }
  const redis = await startRedisServer();
  const client = new Redis({ port: redis.port, host: '127.0.0.1' });
  let cost: CostRow[];
  try {
    cost = await measureCost(client);
  } finally {
    client.disconnect();
    await redis.stop();
  }
  const results = { when: new Date().toISOString(), reps: REPS, cost, detection, memory };
  writeFileSync(join(HERE, '..', 'hot-keys-results.json'), `${JSON.stringify(results, null, 2)}\n`);
  process.stdout.write(`${table(cost, detection, memory)}\n`);
}

main().catch((error) => {
  process.stderr.write(`${(error as Error).stack ?? error}\n`);
  process.exit(1);
});
