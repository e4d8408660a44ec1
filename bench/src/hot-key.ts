/**
 * One global key, four processes × 256 in flight on one Redis (`pnpm --filter @floodgate/bench
 * run hot-key`): today's batched decisions, quota leases, and a periodic-sync limiter (Kong's
 * `sync_rate`, written for the bench) side by side in one run, as ratios to the batched figure.
 *   throughput  a limit that never binds: decisions/s, EVALSHA (or MULTI) per decision, and
 *               redis-server CPU per decision
 *   exactness   a limit that binds (5 000 per 500 ms): most units admitted in one window, and
 *               the units admitted past the limit over every window of the run
 * Node's CPU is the bound on a 2-core machine (four workers and redis-server share it).
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { startRedisServer } from '@floodgate/redis-server';
import { Redis } from 'ioredis';
import { procCpuUs } from './core-worker-cpu.js';
import type { WorkerArgs } from './hot-key-worker.js';
import { SCALE } from './measure.js';

const SUBJECTS = ['batched', 'leased', 'periodic-sync'] as const;
const PROCESSES = 4;
const IN_FLIGHT = 256;

interface WorkerResult {
  decisions: number;
  perWindow: Record<string, number>;
}

function worker(args: WorkerArgs): Promise<WorkerResult> {
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      [join(import.meta.dirname, 'hot-key-worker.js'), JSON.stringify(args)],
      { maxBuffer: 16 * 1024 * 1024 },
      (error, stdout) => (error ? reject(error) : resolve(JSON.parse(stdout) as WorkerResult)),
    );
  });
}

/** Client-issued calls (scripts and MULTI transactions) so far. */
async function calls(redis: Redis): Promise<number> {
  const info = await redis.info('commandstats');
  let n = 0;
  for (const cmd of ['evalsha', 'eval', 'multi']) {
    const m = new RegExp(`cmdstat_${cmd}:calls=(\\d+)`).exec(info);
    if (m) n += Number(m[1]);
  }
  return n;
}

interface Row {
  subject: string;
  decisionsPerSec: number;
  callsPerDecision: number;
  redisCpuUs: number;
  maxPerWindow?: number;
  overAdmitted?: number;
}

async function run(
  port: number,
  pid: number,
  redis: Redis,
  subject: (typeof SUBJECTS)[number],
  limit: number,
  windowMs: number,
  durationMs: number,
  rep: number,
): Promise<Row> {
  // Four Node processes starting at once on two cores: loading, the first script (NOSCRIPT,
  // EVAL) and the JIT take a second or two; nothing is counted before they are done.
  const warmupMs = 2000;
  const startAt = Date.now() + 2500;
  const prefix = `hot${rep}${subject}`;
  const args = {
    port,
    subject,
    limit,
    windowMs,
    inFlight: IN_FLIGHT,
    startAt,
    warmupMs,
    durationMs,
    prefix,
  };
  const results = Array.from({ length: PROCESSES }, () => worker(args));
  await new Promise((resolve) => setTimeout(resolve, startAt + warmupMs - Date.now()));
  const cpu0 = procCpuUs(pid);
  const calls0 = await calls(redis);
  await new Promise((resolve) => setTimeout(resolve, durationMs));
  const cpu1 = procCpuUs(pid);
  const calls1 = await calls(redis);
  const done = await Promise.all(results);
  const decisions = done.reduce((s, r) => s + r.decisions, 0);
  const perWindow = new Map<string, number>();
  for (const r of done) {
    for (const [w, n] of Object.entries(r.perWindow)) perWindow.set(w, (perWindow.get(w) ?? 0) + n);
  }
  const counts = [...perWindow.values()];
  return {
    subject,
    decisionsPerSec: (decisions * 1000) / durationMs,
    callsPerDecision: (calls1 - calls0) / decisions,
    redisCpuUs: (cpu1 - cpu0) / decisions,
    maxPerWindow: Math.max(...counts),
    overAdmitted: counts.reduce((s, n) => s + Math.max(0, n - limit), 0),
  };
}

async function main(): Promise<void> {
  const server = await startRedisServer();
  const redis = new Redis({ port: server.port, host: '127.0.0.1' });
  const reps = Math.max(1, Math.round(2 * SCALE));
  console.log(
    `redis-server pid ${server.pid}; ${PROCESSES} processes × ${IN_FLIGHT} in flight on one key; ${reps} repetitions`,
  );
  try {
    const through: Row[] = [];
    const exact: Row[] = [];
    for (let rep = 0; rep < reps; rep++) {
      for (const subject of SUBJECTS) {
        through.push(
          await run(server.port, server.pid, redis, subject, 10_000_000, 3_600_000, 3000, rep),
        );
        exact.push(await run(server.port, server.pid, redis, subject, 5000, 500, 3000, rep + 100));
      }
    }
    const median = (xs: number[]) => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
    const of = (rows: Row[], s: string, f: (r: Row) => number) =>
      median(rows.filter((r) => r.subject === s).map(f));
    const base = {
      dps: of(through, 'batched', (r) => r.decisionsPerSec),
      cpu: of(through, 'batched', (r) => r.redisCpuUs),
    };
    console.log('\nthroughput (limit never binds): median of repetitions');
    console.log(
      'subject        decisions/s  ×batched  calls/decision  redis CPU µs/decision  ×batched',
    );
    for (const s of SUBJECTS) {
      const dps = of(through, s, (r) => r.decisionsPerSec);
      const calls = of(through, s, (r) => r.callsPerDecision);
      const cpu = of(through, s, (r) => r.redisCpuUs);
      console.log(
        `${s.padEnd(14)} ${dps.toFixed(0).padStart(11)}  ${(dps / base.dps).toFixed(2).padStart(8)}  ${calls.toFixed(4).padStart(14)}  ${cpu.toFixed(3).padStart(21)}  ${(cpu / base.cpu).toFixed(3).padStart(8)}`,
      );
    }
    console.log('\nexactness (limit 5000 per 500 ms window): worst repetition');
    console.log(
      'subject        most admitted in a window  units admitted past the limit (all windows)',
    );
    for (const s of SUBJECTS) {
      const rows = exact.filter((r) => r.subject === s);
      const most = Math.max(...rows.map((r) => r.maxPerWindow!));
      const over = Math.max(...rows.map((r) => r.overAdmitted!));
      console.log(`${s.padEnd(14)} ${String(most).padStart(25)}  ${String(over).padStart(10)}`);
    }
  } finally {
    redis.disconnect();
    await server.stop();
  }
}

void main();
