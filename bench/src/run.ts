/**
 * `pnpm bench`: starts its own redis-server, runs every section in child processes, and writes
 * bench/results.md, bench/results.json and bench/results.svg. Every figure is a median over
 * repetitions whose order is rotated; the report quotes ratios measured side by side.
 */
import { execFile, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import * as core from '@floodgate/core';
import { startRedisServer } from '@floodgate/redis-server';
import autocannon from 'autocannon';
import { Redis } from 'ioredis';
import { callgrindAvailable, instructionsPerCall } from './callgrind.js';
import { clusterOnly, measureCluster } from './cluster.js';
import { batchCommand, scriptCommand } from './commands.js';
import { procCpuUs } from './core-worker-cpu.js';
import { ENGINE_SCRIPT } from './engine-scripts.js';
import { floodgateExpress, HTTP_MODES } from './http-server.js';
import { median, rotate, SCALE } from './measure.js';
import { type BenchResults, renderMarkdown, renderSvg } from './report.js';
import { LOAD_TIME_HEADING, sectionOf, withSection } from './results-section.js';
import { NEVER_DENY, onePolicy, threePolicies } from './subjects.js';

const run = promisify(execFile);
const here = dirname(fileURLToPath(import.meta.url));
const benchDir = join(here, '..');
const REPS = Number(process.env.BENCH_REPS ?? 3) || 3;
const HTTP_REPS = REPS + 2;
/** Alternating slices per algorithm for the 1-in-flight latency targets (core-worker `pairs`). */
const PAIRS = Number(process.env.BENCH_PAIRS ?? 10) || 10;

function log(message: string) {
  process.stderr.write(`[bench ${new Date().toISOString().slice(11, 19)}] ${message}\n`);
}

async function worker<T>(section: string, args: object): Promise<T> {
  const { stdout } = await run(
    process.execPath,
    [join(here, 'core-worker.js'), section, JSON.stringify(args)],
    {
      maxBuffer: 64 << 20,
    },
  );
  return JSON.parse(stdout.trim().split('\n').pop()!) as T;
}

/** The commands the ceiling and the instruction counts compare: our scripts, INCR, rlf's. */
function commandSubjects() {
  const BATCH = 32;
  const batchArgs = (policies: core.Policy[]) => batchCommand(policies, BATCH);
  return [
    { name: 'INCR', command: ['INCR', 'bench:incr:__rand_int__'] },
    { name: 'floodgate fixedWindow', ...scriptCommand([onePolicy()]) },
    { name: 'floodgate gcra', ...scriptCommand([core.gcra({ limit: NEVER_DENY, window: '1h' })]) },
    {
      name: 'floodgate tokenBucket',
      ...scriptCommand([core.tokenBucket({ limit: NEVER_DENY, window: '1h' })]),
    },
    { name: 'floodgate 3 policies', ...scriptCommand(threePolicies()) },
    {
      name: `floodgate fixedWindow, per decision in a batch of ${BATCH}`,
      ...batchArgs([onePolicy()]),
    },
    {
      name: `floodgate gcra, per decision in a batch of ${BATCH}`,
      ...batchArgs([core.gcra({ limit: NEVER_DENY, window: '1h' })]),
    },
    {
      name: `floodgate 3 policies, per decision in a batch of ${BATCH}`,
      ...batchArgs(threePolicies()),
    },
    {
      name: 'rate-limiter-flexible script',
      script: { sha1: sha1(flexibleScript()), source: flexibleScript() },
      command: ['EVALSHA', sha1(flexibleScript()), '1', 'rlf:__rand_int__', '1', '60'],
    },
  ];
}

/** Redis instructions per command under callgrind (deterministic; see callgrind.ts). */
async function instructions() {
  if (!(await callgrindAvailable())) return undefined;
  return instructionsPerCall(
    commandSubjects().map((s) => ({
      name: s.name,
      script: 'script' in s ? s.script!.source : undefined,
      command: s.command,
      perCall: 'perCall' in s ? s.perCall : 1,
    })),
    Math.round(10_000 * SCALE),
  );
}

/** redis-benchmark figures: EVALSHA of our scripts against INCR, with and without pipelining. */
async function ceiling(port: number, client: Redis) {
  // Single commands only: a batch's decisions per second are the core section's business.
  const subjects = commandSubjects().filter((s) => !('perCall' in s));
  for (const s of subjects) if ('script' in s) await client.script('LOAD', s.script!.source);
  const rows: { subject: string; pipeline: number; rep: number; opsPerSec: number }[] = [];
  for (let rep = 0; rep < Math.min(REPS, 2); rep++) {
    for (const pipeline of rotate([1, 16], rep)) {
      for (const s of rotate(subjects, rep)) {
        const n = Math.round((pipeline === 1 ? 20_000 : 100_000) * SCALE);
        const { stdout } = await run('redis-benchmark', [
          ...['-h', '127.0.0.1', '-p', String(port), '-c', '50', '-n', String(n)],
          ...['-P', String(pipeline), '-r', '10000', '--csv', ...s.command],
        ]);
        const line = stdout.trim().split('\n').pop()!;
        const opsPerSec = Number(JSON.parse(`[${line}]`)[1]);
        rows.push({ subject: s.name, pipeline, rep, opsPerSec });
      }
    }
    await client.flushdb();
  }
  return {
    rows,
    commands: subjects.map((s) => ({ subject: s.name, command: s.command.join(' ') })),
  };
}

/** rate-limiter-flexible's Lua (not exported: read from its source, as its constructor defines it). */
function flexibleScript(): string {
  const require = createRequire(join(benchDir, 'package.json'));
  const file = join(
    dirname(require.resolve('rate-limiter-flexible')),
    'lib',
    'RateLimiterRedis.js',
  );
  const match = /const incrTtlLuaScript = `([\s\S]*?)`/.exec(readFileSync(file, 'utf8'));
  if (!match) throw new Error(`no incrTtlLuaScript in ${file}`);
  // Inside a template literal a backslash before a newline is a line continuation.
  return match[1]!.replace(/\\\n/g, '\n');
}

const sha1 = (text: string) => createHash('sha1').update(text).digest('hex');

/** MEMORY USAGE of what one decision leaves behind, per subject (alone in the database). */
async function memoryPerKey(client: Redis) {
  const measure = async (subject: string, act: () => Promise<unknown>, note = '') => {
    await client.flushdb();
    await act();
    const keys = await client.keys('*');
    let bytes = 0;
    for (const k of keys) bytes += Number(await client.call('MEMORY', 'USAGE', k, 'SAMPLES', '0'));
    return { subject, keys: keys.length, bytes, names: keys.join(' '), note };
  };
  const store = core.redisStore({ client });
  const ours = (policies: core.Policy | core.Policy[], prefix = 'rl') =>
    new core.RateLimiter({ store, policies, prefix });
  const key = 'user:12345';
  const rows = [];
  const algorithms: [string, core.Policy][] = [
    ['fixedWindow', core.fixedWindow({ limit: 100, window: '1m' })],
    ['gcra', core.gcra({ limit: 100, window: '1m' })],
    ['tokenBucket', core.tokenBucket({ limit: 100, window: '1m' })],
  ];
  // Algorithms other engineers add show up here as soon as core exports them.
  const optional = core as unknown as Record<string, ((o: object) => core.Policy) | undefined>;
  for (const name of ['slidingWindow', 'leakyBucket', 'smoothBursty', 'smoothWarmingUp']) {
    const factory = optional[name];
    if (typeof factory !== 'function') continue;
    const options =
      name === 'smoothWarmingUp'
        ? { limit: 100, window: '1m', warmup: '10s' }
        : { limit: 100, window: '1m' };
    const policy = factory(options);
    if (ENGINE_SCRIPT.algorithms.includes(policy.kind)) algorithms.push([name, policy]);
  }
  for (const [name, policy] of algorithms) {
    rows.push(await measure(`floodgate ${name}`, () => ours(policy).consume(key)));
  }
  const log = core.slidingLog({ limit: 100, window: '1m' });
  rows.push(await measure('floodgate slidingLog', () => ours(log).consume(key), '1 request'));
  rows.push(
    await measure(
      'floodgate slidingLog',
      async () => {
        const l = ours(log);
        for (let i = 0; i < 100; i++) await l.consume(key);
      },
      '100 requests',
    ),
  );
  rows.push(
    await measure(
      'floodgate 3 policies',
      () =>
        ours([
          core.fixedWindow({ limit: 100, window: '1m' }),
          core.fixedWindow({ limit: 1000, window: '1h' }),
          core.gcra({ limit: 100, window: '1m' }),
        ]).consume(key),
      'all 3 keys',
    ),
  );
  const { default: rlf } = await import('rate-limiter-flexible');
  const flexible = new rlf.RateLimiterRedis({ storeClient: client, points: 100, duration: 60 });
  rows.push(await measure('rate-limiter-flexible', () => flexible.consume(key)));
  const { RedisStore } = await import('rate-limit-redis');
  const rlr = new RedisStore({
    sendCommand: (command: string, ...args: string[]) =>
      client.call(command, ...args) as Promise<never>,
  });
  rlr.init({ windowMs: 60_000 } as never);
  rows.push(await measure('rate-limit-redis', () => rlr.increment(key)));
  const { ThrottlerStorageRedisService } = await import('@nest-lab/throttler-storage-redis');
  const nest = new ThrottlerStorageRedisService(client);
  rows.push(
    await measure('@nest-lab/throttler-storage-redis', () =>
      nest.increment(key, 60_000, 100, 60_000, 'default'),
    ),
  );
  rows.push(
    await measure(
      '@nest-lab/throttler-storage-redis',
      async () => {
        for (let i = 0; i < 101; i++) await nest.increment(key, 60_000, 100, 60_000, 'default');
      },
      'blocked (101 requests)',
    ),
  );
  rows.push(
    await measure('ioredis INCR + PEXPIRE', () =>
      client.multi().incr(key).pexpire(key, 60_000).exec(),
    ),
  );
  await client.flushdb();
  return rows;
}

/** One Express app per child process; autocannon runs here, in this process. */
async function http(redisPort: number) {
  const modes = [...HTTP_MODES] as string[];
  const haveAdapter = (await floodgateExpress()) !== undefined;
  const measured = haveAdapter ? modes : modes.filter((m) => !m.startsWith('@floodgate/express'));
  const rows: {
    mode: string;
    rep: number;
    reqPerSec: number;
    p99: number;
    non2xx: number;
    cpuPerRequestUs: number;
  }[] = [];
  // HTTP figures swing most on a shared machine: more, shorter repetitions.
  for (let rep = 0; rep < HTTP_REPS; rep++) {
    for (const mode of rotate(measured, rep)) {
      const child = spawn(
        process.execPath,
        [join(here, 'http-server.js'), mode, String(redisPort)],
        {
          stdio: ['ignore', 'pipe', 'inherit'],
        },
      );
      try {
        const port = await new Promise<number>((resolve, reject) => {
          child.stdout!.once('data', (chunk) => resolve(Number(String(chunk).trim())));
          child.once('exit', (code) => reject(new Error(`${mode} server exited (${code})`)));
        });
        let i = 0;
        const cannon = (seconds: number) =>
          autocannon({
            url: `http://127.0.0.1:${port}/`,
            connections: 50,
            duration: seconds,
            requests: [
              {
                setupRequest: (req) => ({
                  ...req,
                  headers: { ...req.headers, 'x-key': `user:${i++ % 10_000}` },
                }),
              },
            ],
          });
        await cannon(Math.max(1, Math.round(SCALE)));
        // The server's own CPU time per request (user + system, /proc): steadier than req/s
        // when autocannon shares the two cores.
        const cpuBefore = procCpuUs(child.pid!);
        const r = await cannon(Math.max(1, Math.round(2 * SCALE)));
        const cpuPerRequestUs = (procCpuUs(child.pid!) - cpuBefore) / r.requests.total;
        rows.push({
          mode,
          rep,
          reqPerSec: r.requests.average,
          p99: r.latency.p99,
          non2xx: r.non2xx,
          cpuPerRequestUs,
        });
      } finally {
        child.kill('SIGTERM');
      }
    }
  }
  return { rows, notMeasured: haveAdapter ? [] : modes.filter((m) => !measured.includes(m)) };
}

async function versions() {
  const require = createRequire(join(benchDir, 'package.json'));
  const names = [
    'rate-limiter-flexible',
    'rate-limit-redis',
    'express-rate-limit',
    '@nest-lab/throttler-storage-redis',
    'ioredis',
    'express',
    'autocannon',
  ];
  const out: Record<string, string> = {};
  for (const name of names) {
    try {
      const main = require.resolve(`${name}/package.json`);
      out[name] = JSON.parse(readFileSync(main, 'utf8')).version;
    } catch {
      // Packages whose exports hide package.json: read it beside the entry point.
      let dir = dirname(require.resolve(name));
      for (let i = 0; i < 5; i++) {
        try {
          const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));
          if (pkg.name === name) {
            out[name] = pkg.version;
            break;
          }
        } catch {}
        dir = dirname(dir);
      }
    }
  }
  return out;
}

async function main() {
  if (process.env.BENCH_ONLY === 'cluster') {
    log(`Redis Cluster only; BENCH_SCALE=${SCALE}, ${REPS} repetitions`);
    return clusterOnly(worker, log, REPS, join(benchDir, '.work'), await machine());
  }
  if (process.env.BENCH_ONLY)
    throw new Error(`BENCH_ONLY=${process.env.BENCH_ONLY}: only "cluster" is known`);
  const started = Date.now();
  const redis = await startRedisServer();
  log(
    `redis-server pid ${redis.pid} on 127.0.0.1:${redis.port}; BENCH_SCALE=${SCALE}, ${REPS} repetitions`,
  );
  const client = new Redis({ port: redis.port, host: '127.0.0.1' });
  try {
    const { stdout: redisVersion } = await run('redis-server', ['--version']);
    log('ceiling (redis-benchmark)');
    const ceilingResult = await ceiling(redis.port, client);
    log('Redis instructions per command (callgrind)');
    const instructionRows = await instructions();
    const core: unknown[] = [];
    for (const inFlight of [1, 16, 256]) {
      log(`core on Redis, ${inFlight} in flight`);
      core.push(
        ...(await worker<unknown[]>('redis', {
          port: redis.port,
          pid: redis.pid,
          inFlight,
          reps: REPS,
        })),
      );
      await client.flushdb();
    }
    log(`1 in flight, batched and batch: false in ${PAIRS} alternating pairs`);
    const latencyPairs = await worker<unknown[]>('pairs', { port: redis.port, pairs: PAIRS });
    await client.flushdb();
    log('denied flood, local cache off / on');
    const flood = await worker<unknown[]>('flood', { port: redis.port, reps: REPS });
    log('memory store');
    const memory = await worker<unknown[]>('memory', { reps: REPS });
    log('Redis memory per key');
    const perKey = await memoryPerKey(client);
    log('HTTP (autocannon)');
    const httpResult = await http(redis.port);
    log('Redis Cluster (local 6 nodes)');
    const cluster = await measureCluster(worker, log, REPS);
    const results: BenchResults = {
      date: new Date().toISOString(),
      seconds: Math.round((Date.now() - started) / 1000),
      scale: SCALE,
      reps: REPS,
      machine: await machine(),
      node: process.version,
      redis: redisVersion.trim(),
      versions: await versions(),
      ceiling: ceilingResult,
      instructions: instructionRows,
      core: core as BenchResults['core'],
      latencyPairs: latencyPairs as BenchResults['latencyPairs'],
      flood: flood as BenchResults['flood'],
      memory: memory as BenchResults['memory'],
      perKey,
      http: httpResult,
      cluster,
    };
    writeFileSync(join(benchDir, 'results.json'), `${JSON.stringify(results, null, 2)}\n`);
    // load-time.ts's section, carried over from the file this run replaces.
    const previous = readFileSync(join(benchDir, 'results.md'), 'utf8');
    const loadTime = sectionOf(previous, LOAD_TIME_HEADING);
    const markdown = renderMarkdown(results, median);
    writeFileSync(
      join(benchDir, 'results.md'),
      loadTime ? withSection(markdown, loadTime) : markdown,
    );
    writeFileSync(join(benchDir, 'results.svg'), renderSvg(results, median));
    log(`wrote bench/results.md, results.json, results.svg in ${results.seconds}s`);
  } finally {
    await client.quit();
    await redis.stop();
  }
}

async function machine() {
  const os = await import('node:os');
  const cpus = os.cpus();
  const load = os
    .loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');
  return `${cpus.length} × ${cpus[0]?.model ?? 'unknown CPU'}, ${Math.round(os.totalmem() / 2 ** 30)} GiB, ${os.type()} ${os.release()}, load average at start ${load}`;
}

await main();
