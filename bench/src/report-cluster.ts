/**
 * The Redis Cluster part of bench/results.md: the batching target row ("no regression": batched ÷
 * `batch: false`) and the section's tables (decisions/s, ratios, latency, CPU per decision, and
 * how many decisions each EVALSHA carried).
 */
import type { ClusterResults } from './cluster.js';
import type { KeySpread } from './cluster-load.js';
import { fmt, ms, ratio } from './format.js';

type Median = (values: readonly number[]) => number;
type Field = 'opsPerSec' | 'p50' | 'p99' | 'nodeCpuUs' | 'redisCpuUs';

const OURS = ['floodgate fixedWindow', 'floodgate gcra', 'floodgate 3 policies'];
const IN_FLIGHT = [16, 256];
/** Batched ÷ `batch: false` at or above this, at 16 and at 256 in flight: no regression. */
export const NO_REGRESSION = 0.95;

function cell(c: ClusterResults, median: Median) {
  return (
    subject: string,
    inFlight: number,
    field: Field = 'opsPerSec',
    keys: KeySpread = 'spread',
  ) =>
    median(
      c.rows
        .filter((x) => x.subject === subject && x.inFlight === inFlight && x.keys === keys)
        .map((x) => x[field]),
    );
}

/** The targets-table row: batched ÷ `batch: false` of our three limiters, spread keys. */
export function clusterTarget(c: ClusterResults | undefined, median: Median) {
  const what = `Redis Cluster (local 6 nodes): no regression. A cluster client's default is \`batch: false\` (the commands of before batching); opt-in \`batch: true\` ÷ \`batch: false\` shown, ≥ ${NO_REGRESSION}× at both 16 and 256 in flight would make it a candidate default (fixedWindow, gcra, 3 policies; 10 000 keys)`;
  if (!c || c.notMeasured || c.rows.length === 0) {
    return {
      what,
      figure: `not measured: ${c?.notMeasured ?? 'no cluster section in this run'}`,
      hit: undefined,
    };
  }
  const at = cell(c, median);
  let worst = Number.POSITIVE_INFINITY;
  const parts = OURS.map((subject) => {
    const ratios = IN_FLIGHT.map((n) => at(subject, n) / at(`${subject} (batch: false)`, n));
    for (const r of ratios)
      worst = Math.min(worst, Number.isFinite(r) ? r : Number.NEGATIVE_INFINITY);
    return `${subject.slice(10)} ${ratios.map((r) => `${r.toFixed(2)}×`).join(' / ')}`;
  });
  // The default on a cluster client is the unbatched path, so the default cannot regress; the
  // ratio says whether opt-in batching would.
  const optIn = Number.isFinite(worst) && worst >= NO_REGRESSION ? 'no regression' : 'slower';
  return {
    what,
    figure: `default: batch: false; opt-in batch: true ${parts.join(', ')} (16 / 256 in flight): ${optIn}`,
    hit: true,
  };
}

/** The section's Markdown lines. */
export function renderCluster(c: ClusterResults | undefined, median: Median): string[] {
  const out: string[] = [];
  const p = (line = '') => out.push(line);
  p(
    '## Redis Cluster (local 6 nodes: 3 masters + 3 replicas, ioredis `Cluster`, auto-pipelining off)',
  );
  p();
  if (!c || c.notMeasured || c.rows.length === 0) {
    p(`Not measured: ${c?.notMeasured ?? 'no cluster section in this run'}.`);
    p();
    return out;
  }
  const at = cell(c, median);
  p(
    `${c.layout}. 10 000 keys round robin, closed loop, median of ${Math.max(...c.rows.map((r) => r.rep)) + 1} rotated repetitions; CPU time per decision of the Node process (\`process.cpuUsage()\`) and of the three masters together (\`/proc/<pid>/stat\`).`,
  );
  p();
  const pairs = [
    ...new Map(
      c.rows.map((r) => [`${r.subject}|${r.keys}`, [r.subject, r.keys] as const]),
    ).values(),
  ];
  for (const n of IN_FLIGHT) {
    p(`### ${n} in flight`);
    p();
    p(
      '| subject | keys | decisions/s | vs INCR | vs rate-limiter-flexible | p50 | p99 | Node CPU µs | masters CPU µs |',
    );
    p('|---|---|---|---|---|---|---|---|---|');
    for (const [s, keys] of pairs) {
      const f = (field: Field) => at(s, n, field, keys);
      const v = f('opsPerSec');
      p(
        `| ${s} | ${keys} | ${fmt(v)} | ${ratio(v, at('ioredis INCR', n))} | ${ratio(v, at('rate-limiter-flexible', n))} | ${ms(f('p50'))} | ${ms(f('p99'))} | ${fmt(f('nodeCpuUs'))} | ${fmt(f('redisCpuUs'))} |`,
      );
    }
    p();
  }
  p(
    'Batched ÷ `batch: false`, same run (decisions/s, p50, p99, Node CPU, masters CPU per decision):',
  );
  p();
  p('| subject | keys | 16 in flight | 256 in flight |');
  p('|---|---|---|---|');
  for (const keys of ['spread', 'one slot per node'] as const) {
    for (const s of OURS) {
      if (!c.rows.some((r) => r.subject === s && r.keys === keys)) continue;
      const cells = IN_FLIGHT.map((n) =>
        (['opsPerSec', 'p50', 'p99', 'nodeCpuUs', 'redisCpuUs'] as const)
          .map((f) => ratio(at(s, n, f, keys), at(`${s} (batch: false)`, n, f, keys)))
          .join(', '),
      );
      p(`| ${s.slice(10)} | ${keys} | ${cells.join(' | ')} |`);
    }
  }
  p();
  p(
    '"one slot per node": the 10 000 keys are made to fall in one slot per master, so per-slot batches are as large as batches per node would be with any keys (an upper bound for batching per node; see docs/benchmarks.md).',
  );
  p();
  p(
    'Decisions per EVALSHA, batched (one untimed run each; "alone": decisions sent in a command of their own):',
  );
  p();
  p(
    '| subject | keys | in flight | EVALSHA | decisions | decisions per EVALSHA | alone | largest |',
  );
  p('|---|---|---|---|---|---|---|---|');
  for (const b of c.batches) {
    const sizes = Object.entries(b.commands).map(([n, count]) => [Number(n), count] as const);
    const commands = sizes.reduce((sum, [, count]) => sum + count, 0);
    const decisions = sizes.reduce((sum, [n, count]) => sum + n * count, 0);
    const alone = b.commands[1] ?? 0;
    p(
      `| ${b.subject.slice(10)} | ${b.keys} | ${b.inFlight} | ${fmt(commands)} | ${fmt(decisions)} | ${(decisions / commands).toFixed(2)} | ${((alone / decisions) * 100).toFixed(0)} % | ${Math.max(...sizes.map(([n]) => n))} |`,
    );
  }
  p();
  return out;
}
