/**
 * Batching A/B, outside `pnpm bench`: builds of @floodgate/core side by side in one process, on
 * a redis-server you started (its pid for its CPU time), with the bench's closed loop and CPU
 * counters, beside `batch: false`, an ioredis INCR loop and rate-limiter-flexible. Each build is a
 * directory holding a built `dist` (e.g. a copy of packages/core from before a change). Prints
 * medians and every repetition's ratio; also per subject the decisions per script command, the
 * commands outstanding when one is written, and how busy Node, redis-server and the machine were.
 * Needs `pnpm --filter '@floodgate/bench...' run build` first.
 *
 *   node bench/src/batch-ab.mjs '{"port":P,"pid":PID,"inFlight":[1,16,64,256],"reps":9,
 *     "ms":300,"builds":{"old":"/tmp/core-old","new":"packages/core"}}'
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const BENCH = dirname(dirname(fileURLToPath(import.meta.url)));
const require = createRequire(`${BENCH}/package.json`);
const { Redis } = require('ioredis');
const rlf = require('rate-limiter-flexible');
const { closedLoop, keySet, rotate, median } = await import(`${BENCH}/dist/measure.js`);
const { procCpuUs } = await import(`${BENCH}/dist/core-worker-cpu.js`);

const machine = () => {
  const f = readFileSync('/proc/stat', 'utf8')
    .split('\n')[0]
    .trim()
    .split(/\s+/)
    .slice(1)
    .map(Number);
  return { idle: f[3] + f[4], total: f.reduce((a, b) => a + b, 0) };
};
const opts = JSON.parse(process.argv[2]);
const { port, pid, reps = 5, ms = 500, warm = 150 } = opts;
const inFlights = opts.inFlight ?? [1, 16, 64, 256];
const algos = opts.algos ?? ['fixedWindow', 'gcra']; // or 'three'
const NEVER = 10_000_000;
const KEYS = keySet(10_000);

const client = new Redis({ port, host: '127.0.0.1' });
// Instrumentation: commands sent, and how many were outstanding when each was sent.
const stats = { sent: 0, outstanding: 0, outstandingSum: 0, maxOutstanding: 0 };
const origSend = client.sendCommand.bind(client);
client.sendCommand = (cmd, ...rest) => {
  stats.sent++;
  stats.outstandingSum += stats.outstanding;
  stats.outstanding++;
  if (stats.outstanding > stats.maxOutstanding) stats.maxOutstanding = stats.outstanding;
  const p = origSend(cmd, ...rest);
  const done = () => {
    stats.outstanding--;
  };
  cmd.promise.then(done, done);
  return p;
};

// 'three': the bench's 3 policies (bench/src/subjects.ts threePolicies).
const policy = (core, algo) =>
  algo === 'three'
    ? [
        core.fixedWindow({ limit: NEVER, window: '1m' }),
        core.fixedWindow({ limit: NEVER, window: '1h' }),
        core.gcra({ limit: NEVER, window: '1h' }),
      ]
    : algo === 'gcra'
      ? core.gcra({ limit: NEVER, window: '1h' })
      : core.fixedWindow({ limit: NEVER, window: '1m' });

const subjects = [{ name: 'INCR', op: (k) => client.incr(`incr:${k}`) }];
const flexible = new rlf.RateLimiterRedis({
  storeClient: client,
  points: NEVER,
  duration: 60,
  keyPrefix: 'rlf',
});
if (!opts.noPeers) subjects.push({ name: 'rlf', op: (k) => flexible.consume(k) });
let first = true;
for (const [bname, dir] of Object.entries(opts.builds)) {
  const core = require(`${resolve(dir)}/dist/index.js`);
  const store = core.redisStore({ client });
  for (const algo of algos) {
    const lim = new core.RateLimiter({
      store,
      policies: policy(core, algo),
      prefix: `${bname}${algo}`,
    });
    subjects.push({ name: `${algo} ${bname}`, op: (k) => lim.consume(k) });
  }
  if (first) {
    first = false;
    const off = core.redisStore({ client, batch: false });
    for (const algo of algos) {
      const lim = new core.RateLimiter({
        store: off,
        policies: policy(core, algo),
        prefix: `off${algo}`,
      });
      subjects.push({ name: `${algo} off`, op: (k) => lim.consume(k) });
    }
  }
}

const out = {};
for (const inFlight of inFlights) {
  const rows = {};
  for (let rep = 0; rep < reps; rep++) {
    for (const s of rotate(subjects, rep + inFlight)) {
      let node;
      let redis;
      let t0;
      let st;
      let m0;
      const sample = await closedLoop(s.op, KEYS, inFlight, ms, warm, () => {
        node = process.cpuUsage();
        redis = procCpuUs(pid);
        t0 = performance.now();
        st = { ...stats };
        m0 = machine();
      });
      const m1 = machine();
      if (st === undefined) continue;
      const used = process.cpuUsage(node);
      const wall = performance.now() - t0;
      const decisions = (sample.opsPerSec * ms) / 1000;
      const sent = stats.sent - st.sent;
      rows[s.name] ??= [];
      rows[s.name].push({
        ops: sample.opsPerSec,
        p50: sample.p50,
        p99: sample.p99,
        nodeUs: (used.user + used.system) / decisions,
        redisUs: (procCpuUs(pid) - redis) / decisions,
        nodeUtil: (used.user + used.system) / 1000 / wall,
        redisUtil: (procCpuUs(pid) - redis) / 1000 / wall,
        perCmd: decisions / sent,
        outAtSend: (stats.outstandingSum - st.outstandingSum) / sent,
        errors: sample.errors,
        idle: (m1.idle - m0.idle) / (m1.total - m0.total),
      });
    }
  }
  out[inFlight] = rows;
  const f = (x, d = 2) => (Number.isFinite(x) ? x.toFixed(d) : String(x));
  console.log(`\n== ${inFlight} in flight, ${reps} reps of ${ms} ms`);
  console.log(
    'subject | ops/s | p50 ms | p99 ms | node µs | redis µs | node util | redis util | decisions/cmd | outstanding at send | machine idle',
  );
  for (const [name, rs] of Object.entries(rows)) {
    const m = (k) => median(rs.map((r) => r[k]));
    console.log(
      `${name} | ${Math.round(m('ops'))} | ${f(m('p50'), 3)} | ${f(m('p99'), 3)} | ${f(m('nodeUs'))} | ${f(m('redisUs'))} | ${f(m('nodeUtil'))} | ${f(m('redisUtil'))} | ${f(m('perCmd'), 1)} | ${f(m('outAtSend'), 1)} | ${f(m('idle'))}`,
    );
  }
  const ratio = (a, b, k = 'ops') => {
    if (!rows[a] || !rows[b]) return;
    const rs = rows[a].map((r, i) => r[k] / rows[b][i][k]);
    const s = [...rs].sort((x, y) => x - y);
    console.log(`${a} ÷ ${b} (${k}): median ${f(median(rs))} [${s.map((x) => f(x)).join(' ')}]`);
  };
  for (const algo of algos) {
    for (const b of Object.keys(opts.builds)) {
      ratio(`${algo} ${b}`, `${algo} off`);
      ratio(`${algo} ${b}`, 'INCR');
      ratio(`${algo} ${b}`, 'rlf');
      if (inFlight === 1) {
        ratio(`${algo} ${b}`, `${algo} off`, 'p50');
        ratio(`${algo} ${b}`, `${algo} off`, 'p99');
      }
    }
    const bs = Object.keys(opts.builds);
    for (let i = 1; i < bs.length; i++) ratio(`${algo} ${bs[i]}`, `${algo} ${bs[0]}`);
  }
}
if (opts.json) (await import('node:fs')).writeFileSync(opts.json, JSON.stringify(out));
await client.quit();
