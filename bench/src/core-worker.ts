/**
 * Child process for the core sections (one per call, so JIT and GC state never leak between
 * sections): `node core-worker.js <section> <json args>`, prints one JSON line of results.
 *   redis   { port, pid, inFlight, reps } — every Redis subject, auto-pipelining off and on, with
 *           CPU time per decision of this process and of redis-server (/proc/<pid>/stat)
 *   pairs   { port, pairs }           — 1 in flight, batched and `batch: false` in alternating
 *                                       slices (the latency targets' paired ratios)
 *   memory  { reps }                  — in-process stores
 *   flood   { port, reps }            — one key denied over and over, denied cache off / on
 *   cluster, cluster-batches { ports, masterPids, nodeSlots, inFlight, reps } — the Redis Cluster
 *           section (cluster-load.ts): decisions/s, and decisions per EVALSHA
 */
import { fixedWindow, RateLimiter, redisStore } from '@floodgate/core';
import { Redis } from 'ioredis';
import { batchSizes, type ClusterArgs, clusterSection } from './cluster-load.js';
import { procCpuUs } from './core-worker-cpu.js';
import { closedLoop, keySet, rotate, type Sample, SCALE, tightLoop } from './measure.js';
import { memorySubjects, redisSubjects } from './subjects.js';

const KEYS = keySet(10_000);
const WARMUP_MS = 150 * SCALE;
const MEASURE_MS = 500 * SCALE;
const PAIR_MS = 300 * SCALE;
const PAIR_WARMUP_MS = 50 * SCALE;

export interface RedisRow extends Sample {
  subject: string;
  inFlight: number;
  autoPipelining: boolean;
  rep: number;
  /** CPU time (user + system) per decision, µs: this Node process, and redis-server. */
  nodeCpuUs: number;
  redisCpuUs: number;
}

async function redisSection(
  port: number,
  pid: number,
  inFlight: number,
  reps: number,
): Promise<RedisRow[]> {
  const modes = [false, true];
  const clients = modes.map(
    (on) => new Redis({ port, host: '127.0.0.1', enableAutoPipelining: on }),
  );
  const subjects = await Promise.all(clients.map((c) => redisSubjects(c)));
  const rows: RedisRow[] = [];
  for (let rep = 0; rep < reps; rep++) {
    for (const m of rotate([0, 1], rep)) {
      for (const s of rotate(subjects[m]!, rep)) {
        let node = process.cpuUsage();
        let redis = procCpuUs(pid);
        const sample = await closedLoop(s.op, KEYS, inFlight, MEASURE_MS, WARMUP_MS, () => {
          node = process.cpuUsage();
          redis = procCpuUs(pid);
        });
        const used = process.cpuUsage(node);
        const decisions = (sample.opsPerSec * MEASURE_MS) / 1000;
        rows.push({
          subject: s.name,
          inFlight,
          autoPipelining: modes[m]!,
          rep,
          ...sample,
          nodeCpuUs: (used.user + used.system) / decisions,
          redisCpuUs: (procCpuUs(pid) - redis) / decisions,
        });
      }
    }
  }
  await Promise.all(clients.map((c) => c.quit()));
  return rows;
}

async function memorySection(reps: number) {
  const subjects = memorySubjects();
  const rows: { subject: string; rep: number; opsPerSec: number }[] = [];
  for (let rep = 0; rep < reps; rep++) {
    for (const s of rotate(subjects, rep)) {
      rows.push({
        subject: s.name,
        rep,
        opsPerSec: await tightLoop(s.op, KEYS, MEASURE_MS, WARMUP_MS),
      });
    }
  }
  return rows;
}

/** One key, limit 10 per minute: after 10 admissions every call is a denial. */
async function floodSection(port: number, reps: number) {
  const client = new Redis({ port, host: '127.0.0.1' });
  const evalshaCalls = async () => {
    const info = await client.info('commandstats');
    return Number(/cmdstat_evalsha:calls=(\d+)/.exec(info)?.[1] ?? 0);
  };
  const rows: {
    cache: boolean;
    rep: number;
    opsPerSec: number;
    redisCalls: number;
    firstWaveCalls: number;
    decisions: number;
  }[] = [];
  const limiters = [false, true].map(
    (cache) =>
      [
        cache,
        new RateLimiter({
          store: redisStore({ client }),
          policies: fixedWindow({ limit: 10, window: '1m' }),
          prefix: cache ? 'flood-cached' : 'flood',
          deniedCache: cache,
        }),
      ] as const,
  );
  const oneKey = ['flooder'];
  for (let rep = 0; rep < reps; rep++) {
    for (const [cache, limiter] of rotate(limiters, rep)) {
      await limiter.reset('flooder');
      // The first wave (all 256 in flight before any denial is back) reaches Redis either way;
      // then count what the flood costs.
      const first = await evalshaCalls();
      await closedLoop((key) => limiter.consume(key), oneKey, 256, 100, 0);
      const before = await evalshaCalls();
      let decisions = 0;
      const sample = await closedLoop(
        (key) => {
          decisions++;
          return limiter.consume(key);
        },
        oneKey,
        256,
        MEASURE_MS,
        0,
      );
      const redisCalls = (await evalshaCalls()) - before;
      rows.push({
        cache,
        rep,
        opsPerSec: sample.opsPerSec,
        redisCalls,
        firstWaveCalls: before - first,
        decisions,
      });
    }
  }
  await client.quit();
  return rows;
}

export interface PairRow {
  algorithm: string;
  pair: number;
  batched: Sample;
  single: Sample;
}

/**
 * 1 in flight, where a batched store sends each decision alone as a single call: fixedWindow and
 * gcra, batched and with `batch: false`, in back-to-back slices of PAIR_MS whose order alternates,
 * so each pair's ratio compares two runs a few hundred ms apart rather than two runs a section
 * apart (the machine's load moves p50 and p99 more than the batcher's bookkeeping does).
 */
async function pairsSection(port: number, pairs: number): Promise<PairRow[]> {
  const client = new Redis({ port, host: '127.0.0.1' });
  const subjects = await redisSubjects(client);
  const op = (name: string) => subjects.find((x) => x.name === name)!.op;
  const rows: PairRow[] = [];
  for (const algorithm of ['fixedWindow', 'gcra']) {
    const batched = op(`floodgate ${algorithm}`);
    const single = op(`floodgate ${algorithm} (batch: false)`);
    // Untimed first: the scripts loaded (NOSCRIPT once), the code paths compiled.
    for (const o of [batched, single]) await closedLoop(o, KEYS, 1, PAIR_MS, PAIR_WARMUP_MS);
    for (let pair = 0; pair < pairs; pair++) {
      const order = pair % 2 === 0 ? [batched, single] : [single, batched];
      const samples: Sample[] = [];
      for (const o of order) samples.push(await closedLoop(o, KEYS, 1, PAIR_MS, PAIR_WARMUP_MS));
      const [b, u] = pair % 2 === 0 ? samples : [samples[1]!, samples[0]!];
      rows.push({ algorithm, pair, batched: b!, single: u! });
    }
  }
  await client.quit();
  return rows;
}

const [section, json] = process.argv.slice(2);
const args = JSON.parse(json ?? '{}') as {
  port: number;
  pid: number;
  inFlight: number;
  reps: number;
  pairs: number;
};
const result =
  section === 'redis'
    ? await redisSection(args.port, args.pid, args.inFlight, args.reps)
    : section === 'pairs'
      ? await pairsSection(args.port, args.pairs)
      : section === 'memory'
        ? await memorySection(args.reps)
        : section === 'flood'
          ? await floodSection(args.port, args.reps)
          : section === 'cluster'
            ? await clusterSection(args as unknown as ClusterArgs)
            : section === 'cluster-batches'
              ? await batchSizes(args as unknown as ClusterArgs)
              : undefined;
if (result === undefined) throw new Error(`unknown section ${section}`);
process.stdout.write(`${JSON.stringify(result)}\n`);
