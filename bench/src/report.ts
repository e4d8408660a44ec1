import type { ClusterResults } from './cluster.js';
import { fmt, ms, ratio } from './format.js';
import { clusterTarget, renderCluster } from './report-cluster.js';

/**
 * Turns a run's raw rows into bench/results.md (tables of medians and same-run ratios, and the
 * targets with hit / missed) and bench/results.svg (the chart docs/benchmarks.md shows).
 */

export interface BenchResults {
  date: string;
  seconds: number;
  scale: number;
  reps: number;
  machine: string;
  node: string;
  redis: string;
  versions: Record<string, string>;
  ceiling: {
    rows: { subject: string; pipeline: number; rep: number; opsPerSec: number }[];
    commands: { subject: string; command: string }[];
  };
  /** Redis instructions per command under callgrind; absent when valgrind is not installed. */
  instructions?: { subject: string; instructionsPerCall: number }[];
  core: {
    subject: string;
    inFlight: number;
    autoPipelining: boolean;
    rep: number;
    opsPerSec: number;
    p50: number;
    p99: number;
    errors: number;
    /** CPU time per decision (µs): the Node process, and redis-server (/proc). */
    nodeCpuUs?: number;
    redisCpuUs?: number;
  }[];
  /**
   * 1 in flight, batched and `batch: false` in alternating slices (core-worker `pairs`); absent
   * in runs made before it existed.
   */
  latencyPairs?: {
    algorithm: string;
    pair: number;
    batched: { p50: number; p99: number; opsPerSec: number };
    single: { p50: number; p99: number; opsPerSec: number };
  }[];
  flood: {
    cache: boolean;
    rep: number;
    opsPerSec: number;
    redisCalls: number;
    firstWaveCalls: number;
    decisions: number;
  }[];
  memory: { subject: string; rep: number; opsPerSec: number }[];
  perKey: { subject: string; keys: number; bytes: number; names: string; note: string }[];
  http: {
    rows: {
      mode: string;
      rep: number;
      reqPerSec: number;
      p99: number;
      non2xx: number;
      /** The server process's CPU time per request (µs, /proc). */
      cpuPerRequestUs?: number;
    }[];
    notMeasured: string[];
  };
  /** The Redis Cluster section (absent in runs made before it existed). */
  cluster?: ClusterResults;
}

type Median = (values: readonly number[]) => number;

function unique<T>(values: T[]): T[] {
  return [...new Set(values)];
}

export function summarize(r: BenchResults, median: Median) {
  const core = (
    subject: string,
    inFlight: number,
    ap: boolean,
    field: 'opsPerSec' | 'p50' | 'p99' | 'nodeCpuUs' | 'redisCpuUs' = 'opsPerSec',
  ) =>
    median(
      r.core
        .filter((x) => x.subject === subject && x.inFlight === inFlight && x.autoPipelining === ap)
        .map((x) => x[field] ?? Number.NaN),
    );
  const ceiling = (subject: string, pipeline: number) =>
    median(
      r.ceiling.rows
        .filter((x) => x.subject === subject && x.pipeline === pipeline)
        .map((x) => x.opsPerSec),
    );
  const memory = (subject: string) =>
    median(r.memory.filter((x) => x.subject === subject).map((x) => x.opsPerSec));
  const http = (mode: string, field: 'reqPerSec' | 'p99' | 'cpuPerRequestUs' = 'reqPerSec') =>
    median(r.http.rows.filter((x) => x.mode === mode).map((x) => x[field] ?? Number.NaN));
  const flood = (
    cache: boolean,
    field: 'opsPerSec' | 'redisCalls' | 'firstWaveCalls' | 'decisions' = 'opsPerSec',
  ) => median(r.flood.filter((x) => x.cache === cache).map((x) => x[field]));
  return { core, ceiling, memory, http, flood };
}

interface Target {
  what: string;
  figure: string;
  hit: boolean | undefined;
}

export function targets(r: BenchResults, median: Median): Target[] {
  const s = summarize(r, median);
  const t: Target[] = [];
  const add = (what: string, value: number, goal: number, figure: string, atMost = false) =>
    t.push({
      what,
      figure,
      hit: Number.isFinite(value) ? (atMost ? value <= goal : value >= goal) : undefined,
    });
  for (const ap of [false, true]) {
    const tag = ap ? 'auto-pipelining on' : 'auto-pipelining off';
    const fg = s.core('floodgate fixedWindow', 256, ap);
    const incr = s.core('ioredis INCR', 256, ap);
    const flex = s.core('rate-limiter-flexible', 256, ap);
    add(
      `consume() 1 policy, 256 in flight ≥ 0.9× ioredis INCR (${tag})`,
      fg / incr,
      0.9,
      ratio(fg, incr),
    );
    add(
      `consume() 1 policy, 256 in flight ≥ 1.2× rate-limiter-flexible (${tag})`,
      fg / flex,
      1.2,
      ratio(fg, flex),
    );
    const three = s.core('floodgate 3 policies', 256, ap);
    add(`3 policies ≥ 0.8× 1 policy, 256 in flight (${tag})`, three / fg, 0.8, ratio(three, fg));
  }
  for (const subject of ['floodgate fixedWindow', 'floodgate gcra']) {
    const v = s.ceiling(subject, 16);
    add(
      `${subject}: ≥ 200 000 EVALSHA/s (redis-benchmark -c 50 -P 16)`,
      v,
      200_000,
      `${fmt(v)}/s = ${ratio(v, s.ceiling('rate-limiter-flexible script', 16))} rate-limiter-flexible's script, ${ratio(v, s.ceiling('INCR', 16))} INCR (same run)`,
    );
  }
  const rlm = s.memory('RateLimiterMemory');
  const erl = s.memory('express-rate-limit MemoryStore');
  for (const subject of ['floodgate fixedWindow', 'floodgate gcra']) {
    const v = s.memory(subject);
    add(`memory store ${subject.slice(10)} ≥ 2× RateLimiterMemory`, v / rlm, 2, ratio(v, rlm));
    add(
      `memory store ${subject.slice(10)} ≥ 0.8× express-rate-limit MemoryStore`,
      v / erl,
      0.8,
      ratio(v, erl),
    );
  }
  for (const subject of ['floodgate fixedWindow', 'floodgate gcra']) {
    const row = r.perKey.find((x) => x.subject === subject);
    add(
      `${subject}: ≤ 80 bytes per key (MEMORY USAGE)`,
      row?.bytes ?? Number.NaN,
      80,
      `${row?.bytes ?? 'n/a'} B`,
      true,
    );
  }
  const none = s.http('no limiter');
  const fgRedis = s.http('@floodgate/express redis');
  add(
    'Express + @floodgate/express on Redis ≥ 0.95× no limiter (req/s)',
    fgRedis / none,
    0.95,
    r.http.notMeasured.length
      ? 'not measured: @floodgate/express has no rateLimit() yet'
      : ratio(fgRedis, none),
  );
  const on = s.flood(true);
  const off = s.flood(false);
  add('denied flood, local cache on ≥ 5× off (decisions/s)', on / off, 5, ratio(on, off));
  const calls = s.flood(true, 'redisCalls');
  add(
    'denied flood with cache: ≤ 1 Redis call per key per retry window',
    calls,
    1,
    `${fmt(calls)} EVALSHA during ${fmt(s.flood(true, 'decisions'))} decisions, after a first wave of ${fmt(s.flood(true, 'firstWaveCalls'))} (the requests in flight before the first denial came back)`,
    true,
  );
  return t;
}

/** The batching targets: batching, scripts per decision, HTTP CPU (ratios of one run). */
export function batchingTargets(r: BenchResults, median: Median): Target[] {
  const s = summarize(r, median);
  const t: Target[] = [];
  const add = (what: string, value: number, goal: number, figure: string, atMost = false) =>
    t.push({
      what,
      figure,
      hit: Number.isFinite(value) ? (atMost ? value <= goal : value >= goal) : undefined,
    });
  const incr = s.core('ioredis INCR', 256, false);
  const flex = s.core('rate-limiter-flexible', 256, false);
  for (const subject of ['floodgate fixedWindow', 'floodgate gcra']) {
    const v = s.core(subject, 256, false);
    add(`${subject.slice(10)}, 256 in flight ≥ 1.0× ioredis INCR`, v / incr, 1, ratio(v, incr));
    add(
      `${subject.slice(10)}, 256 in flight ≥ 2.0× rate-limiter-flexible`,
      v / flex,
      2,
      ratio(v, flex),
    );
  }
  const three = s.core('floodgate 3 policies', 256, false);
  const gcra = s.core('floodgate gcra', 256, false);
  add('3 policies ≥ 0.75× 1 policy (gcra), 256 in flight', three / gcra, 0.75, ratio(three, gcra));
  const of = (subject: string) =>
    r.instructions?.find((x) => x.subject === subject)?.instructionsPerCall ?? Number.NaN;
  for (const [subject, goal] of [
    ['fixedWindow', 15_000],
    ['gcra', 30_000],
  ] as const) {
    const v = of(`floodgate ${subject}, per decision in a batch of 32`);
    add(
      `${subject}: ≤ ${fmt(goal)} Redis instructions per decision in a batch of 32`,
      v,
      goal,
      `${fmt(v)} (single call: ${fmt(of(`floodgate ${subject}`))})`,
      true,
    );
  }
  for (const subject of ['floodgate fixedWindow', 'floodgate gcra']) {
    for (const field of ['p50', 'p99'] as const) {
      const pairs = (r.latencyPairs ?? []).filter((x) => `floodgate ${x.algorithm}` === subject);
      if (pairs.length > 0) {
        // Each pair's ratio, two slices run back to back; the median of them is the figure.
        const ratios = pairs.map((x) => x.batched[field] / x.single[field]).sort((a, b) => a - b);
        const v = median(ratios);
        add(
          `${subject.slice(10)}, 1 in flight: ${field} latency batched within 5 % of batch: false`,
          v,
          1.05,
          `${ratio(v, 1)} (median of ${ratios.length} alternating pairs, ${ratio(ratios[0]!, 1).slice(0, -1)}–${ratio(ratios[ratios.length - 1]!, 1)}; ${ms(median(pairs.map((x) => x.batched[field])))} vs ${ms(median(pairs.map((x) => x.single[field])))})`,
          true,
        );
        continue;
      }
      const batched = s.core(subject, 1, false, field);
      const single = s.core(`${subject} (batch: false)`, 1, false, field);
      add(
        `${subject.slice(10)}, 1 in flight: ${field} latency batched within 5 % of batch: false`,
        batched / single,
        1.05,
        `${ratio(batched, single)} (${ms(batched)} vs ${ms(single)})`,
        true,
      );
    }
  }
  const none = s.http('no limiter', 'cpuPerRequestUs');
  const added = (mode: string) => s.http(mode, 'cpuPerRequestUs') - none;
  const ours = added('@floodgate/express redis');
  for (const peer of [
    'express-rate-limit + rate-limit-redis',
    'rate-limiter-flexible middleware',
  ]) {
    const theirs = added(peer);
    add(
      `Express on Redis: server CPU per request added by the limiter < ${peer}`,
      theirs - ours,
      Number.MIN_VALUE,
      `${fmt(ours)} µs vs ${fmt(theirs)} µs (${ratio(ours, theirs)}; no limiter ${fmt(none)} µs)`,
    );
  }
  t.push(clusterTarget(r.cluster, median));
  return t;
}

export function renderMarkdown(r: BenchResults, median: Median): string {
  const s = summarize(r, median);
  const out: string[] = [];
  const p = (line = '') => out.push(line);
  p('# Floodgate benchmark results');
  p();
  p(
    'Written by `pnpm bench` (bench/src/run.ts). **Read the ratios, not the absolute figures**: every',
  );
  p(
    'number comes from one run on a shared 2-core machine (other engineers were building and testing',
  );
  p(
    `on it at the same time), as the median of ${r.reps} repetitions whose order was rotated, and every`,
  );
  p(
    'comparison is between subjects measured side by side in that same run against the same Redis.',
  );
  p();
  p(`- date: ${r.date} (run took ${r.seconds} s, BENCH_SCALE=${r.scale})`);
  p(`- machine: ${r.machine}`);
  p(`- Node ${r.node}; ${r.redis}`);
  p(
    `- peers: ${Object.entries(r.versions)
      .map(([k, v]) => `${k} ${v}`)
      .join(', ')}`,
  );
  p();
  p('## Targets (batching)');
  p();
  p('| target | measured | |');
  p('|---|---|---|');
  for (const t of batchingTargets(r, median))
    p(
      `| ${t.what} | ${t.figure} | ${t.hit === undefined ? 'not measured' : t.hit ? 'hit' : '**missed**'} |`,
    );
  p();
  p('## Batching: batched (the default) ÷ `batch: false`, same run, auto-pipelining off');
  p();
  const inFlights = unique(r.core.map((x) => x.inFlight));
  p(`| subject | ${inFlights.map((n) => `${n} in flight: decisions/s, p50, p99`).join(' | ')} |`);
  p(`|---|${inFlights.map(() => '---').join('|')}|`);
  for (const subject of ['floodgate fixedWindow', 'floodgate gcra', 'floodgate 3 policies']) {
    const cells = inFlights.map((n) =>
      (['opsPerSec', 'p50', 'p99'] as const)
        .map((f) =>
          ratio(s.core(subject, n, false, f), s.core(`${subject} (batch: false)`, n, false, f)),
        )
        .join(', '),
    );
    p(`| ${subject.slice(10)} | ${cells.join(' | ')} |`);
  }
  p();
  p(
    'CPU time per decision at 256 in flight (µs; the Node process and redis-server, from `process.cpuUsage()` and `/proc/<pid>/stat`):',
  );
  p();
  p('| subject | Node | redis-server | Node vs INCR | redis-server vs INCR |');
  p('|---|---|---|---|---|');
  for (const subject of unique(r.core.map((x) => x.subject))) {
    const node = s.core(subject, 256, false, 'nodeCpuUs');
    const redis = s.core(subject, 256, false, 'redisCpuUs');
    p(
      `| ${subject} | ${fmt(node)} | ${fmt(redis)} | ${ratio(node, s.core('ioredis INCR', 256, false, 'nodeCpuUs'))} | ${ratio(redis, s.core('ioredis INCR', 256, false, 'redisCpuUs'))} |`,
    );
  }
  p();
  for (const line of renderCluster(r.cluster, median)) p(line);
  p('## Earlier targets');
  p();
  p('| target | measured | |');
  p('|---|---|---|');
  for (const t of targets(r, median))
    p(
      `| ${t.what} | ${t.figure} | ${t.hit === undefined ? 'not measured' : t.hit ? 'hit' : '**missed**'} |`,
    );
  p();
  p('## Redis ceiling (redis-benchmark -c 50, keys over 10 000, median of runs)');
  p();
  p('| script | ops/s -P 1 | ops/s -P 16 | -P 16 vs INCR |');
  p('|---|---|---|---|');
  for (const { subject } of r.ceiling.commands) {
    p(
      `| ${subject} | ${fmt(s.ceiling(subject, 1))} | ${fmt(s.ceiling(subject, 16))} | ${ratio(s.ceiling(subject, 16), s.ceiling('INCR', 16))} |`,
    );
  }
  p();
  p("Commands (`__rand_int__` is redis-benchmark's key randomiser):");
  p();
  for (const c of r.ceiling.commands) p(`- ${c.subject}: \`${c.command}\``);
  p();
  p('## Redis work per command (callgrind: instructions, the same whatever the machine is doing)');
  p();
  if (r.instructions === undefined) {
    p('Not measured: valgrind is not installed (`apt-get install valgrind`).');
  } else {
    const of = (subject: string) =>
      r.instructions!.find((x) => x.subject === subject)?.instructionsPerCall ?? Number.NaN;
    p(
      'redis-server under valgrind --tool=callgrind, one pipelined connection (redis-benchmark -c 1 -P 16), the same commands as above over 1 000 keys that all exist before counting starts; everything the server does per command (parse, run, reply), user space only.',
    );
    p();
    p('| command | instructions per call | vs rate-limiter-flexible script | vs INCR |');
    p('|---|---|---|---|');
    for (const { subject, instructionsPerCall } of r.instructions) {
      p(
        `| ${subject} | ${fmt(instructionsPerCall)} | ${ratio(instructionsPerCall, of('rate-limiter-flexible script'))} | ${ratio(instructionsPerCall, of('INCR'))} |`,
      );
    }
  }
  p();
  p('## Core decisions on Redis (ioredis, one connection, 10 000 keys, closed loop)');
  p();
  const subjects = unique(r.core.map((x) => x.subject));
  for (const inFlight of unique(r.core.map((x) => x.inFlight))) {
    p(`### ${inFlight} in flight`);
    p();
    p(
      '| subject | auto-pipelining | decisions/s | vs INCR | vs rate-limiter-flexible | p50 | p99 |',
    );
    p('|---|---|---|---|---|---|---|');
    for (const ap of [false, true]) {
      for (const subject of subjects) {
        const v = s.core(subject, inFlight, ap);
        p(
          `| ${subject} | ${ap ? 'on' : 'off'} | ${fmt(v)} | ${ratio(v, s.core('ioredis INCR', inFlight, ap))} | ${ratio(v, s.core('rate-limiter-flexible', inFlight, ap))} | ${ms(s.core(subject, inFlight, ap, 'p50'))} | ${ms(s.core(subject, inFlight, ap, 'p99'))} |`,
        );
      }
    }
    p();
  }
  p('Auto-pipelining on ÷ off, same subject and in-flight count:');
  p();
  p(
    `| subject | ${unique(r.core.map((x) => x.inFlight))
      .map((n) => `${n} in flight`)
      .join(' | ')} |`,
  );
  p(
    `|---|${unique(r.core.map((x) => x.inFlight))
      .map(() => '---')
      .join('|')}|`,
  );
  for (const subject of subjects) {
    p(
      `| ${subject} | ${unique(r.core.map((x) => x.inFlight))
        .map((n) => ratio(s.core(subject, n, true), s.core(subject, n, false)))
        .join(' | ')} |`,
    );
  }
  p();
  p('## A flood of denied requests from one key (fixedWindow 10 per minute, 256 in flight)');
  p();
  p('| local denied cache | decisions/s | first wave: EVALSHA | then: decisions | then: EVALSHA |');
  p('|---|---|---|---|---|');
  for (const cache of [false, true]) {
    p(
      `| ${cache ? 'on' : 'off'} | ${fmt(s.flood(cache))} | ${fmt(s.flood(cache, 'firstWaveCalls'))} | ${fmt(s.flood(cache, 'decisions'))} | ${fmt(s.flood(cache, 'redisCalls'))} |`,
    );
  }
  p();
  p(`Cache on ÷ off: ${ratio(s.flood(true), s.flood(false))}.`);
  p();
  p('## Memory store (one caller, back-to-back awaited calls, 10 000 keys)');
  p();
  p('| subject | decisions/s | vs RateLimiterMemory | vs express-rate-limit MemoryStore |');
  p('|---|---|---|---|');
  for (const subject of unique(r.memory.map((x) => x.subject))) {
    const v = s.memory(subject);
    p(
      `| ${subject} | ${fmt(v)} | ${ratio(v, s.memory('RateLimiterMemory'))} | ${ratio(v, s.memory('express-rate-limit MemoryStore'))} |`,
    );
  }
  p();
  p(
    `## HTTP: Express under autocannon (50 connections, separate processes, 10 000 keys, median of ${r.reps + 2})`,
  );
  p();
  p(
    '| app | req/s | vs no limiter | p99 | non-2xx | server CPU per request | added by the limiter |',
  );
  p('|---|---|---|---|---|---|---|');
  for (const mode of unique(r.http.rows.map((x) => x.mode))) {
    const v = s.http(mode);
    const cpu = s.http(mode, 'cpuPerRequestUs');
    p(
      `| ${mode} | ${fmt(v)} | ${ratio(v, s.http('no limiter'))} | ${ms(s.http(mode, 'p99'))} | ${median(r.http.rows.filter((x) => x.mode === mode).map((x) => x.non2xx))} | ${fmt(cpu)} µs | ${fmt(cpu - s.http('no limiter', 'cpuPerRequestUs'))} µs |`,
    );
  }
  for (const mode of r.http.notMeasured) p(`| ${mode} | not measured | | | |`);
  if (r.http.notMeasured.length) {
    p();
    p('Not measured: `@floodgate/express` did not export `rateLimit()` when this ran.');
  }
  p();
  p('## Redis memory per key (MEMORY USAGE … SAMPLES 0 after one request for `user:12345`)');
  p();
  p('| subject | keys | bytes | key names | note |');
  p('|---|---|---|---|---|');
  for (const k of r.perKey)
    p(`| ${k.subject} | ${k.keys} | ${k.bytes} | \`${k.names}\` | ${k.note} |`);
  p();
  return `${out.join('\n')}\n`;
}

/** Two panels of horizontal bars: Redis decisions/s at 256 in flight, HTTP req/s vs no limiter. */
export function renderSvg(r: BenchResults, median: Median): string {
  const s = summarize(r, median);
  const subjects = unique(r.core.map((x) => x.subject));
  const panel1 = subjects.flatMap((subject) => [
    { label: subject, tag: 'off', value: s.core(subject, 256, false) },
    { label: '', tag: 'on', value: s.core(subject, 256, true) },
  ]);
  const modes = unique(r.http.rows.map((x) => x.mode));
  const none = s.http('no limiter');
  const panel2 = modes.map((mode) => ({ label: mode, tag: '', value: s.http(mode) / none }));
  const width = 900;
  const left = 250;
  const barArea = width - left - 200;
  const row = 18;
  let y = 30;
  const parts: string[] = [];
  const text = (x: number, yy: number, t: string, extra = '') =>
    parts.push(
      `<text x="${x}" y="${yy}" ${extra}>${t.replace(/&/g, '&amp;').replace(/</g, '&lt;')}</text>`,
    );
  const drawPanel = (
    title: string,
    bars: { label: string; tag: string; value: number }[],
    unit: (v: number) => string,
  ) => {
    text(10, y, title, 'font-weight="bold"');
    y += 12;
    const max = Math.max(...bars.map((b) => (Number.isFinite(b.value) ? b.value : 0)));
    for (const b of bars) {
      const w = max > 0 && Number.isFinite(b.value) ? (b.value / max) * barArea : 0;
      const color =
        b.tag === 'on'
          ? '#9ecae1'
          : b.label.startsWith('floodgate') || b.label.startsWith('@floodgate')
            ? '#2b8cbe'
            : '#bdbdbd';
      const fill = b.tag === 'on' ? '#9ecae1' : color;
      if (b.label) text(left - 8, y + 13, b.label, 'text-anchor="end"');
      parts.push(
        `<rect x="${left}" y="${y + 2}" width="${w.toFixed(1)}" height="${row - 4}" fill="${fill}"/>`,
      );
      text(
        Math.round(left + w + 4),
        y + 13,
        `${unit(b.value)}${b.tag ? ` (auto-pipelining ${b.tag})` : ''}`,
      );
      y += row;
    }
    y += 24;
  };
  drawPanel('Decisions/s on Redis, 256 in flight, 10 000 keys (median; same run)', panel1, (v) =>
    fmt(v),
  );
  drawPanel('Express req/s under autocannon, as a ratio to no limiter', panel2, (v) =>
    Number.isFinite(v) ? `${v.toFixed(2)}×` : 'n/a',
  );
  text(
    10,
    y,
    `pnpm bench, ${r.date.slice(0, 10)}; ${r.machine.split(',')[0]}; shared machine — compare bars within a panel only`,
    'fill="#555"',
  );
  y += 10;
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${y}" font-family="sans-serif" font-size="12">
<rect width="100%" height="100%" fill="white"/>
${parts.join('\n')}
</svg>
`;
}
