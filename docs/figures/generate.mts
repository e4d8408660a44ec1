/**
 * Draws docs/figures/<algorithm>.svg: one simulated traffic pattern played against each
 * algorithm through the real memory store on a fake clock, showing admitted, delayed and
 * rejected requests over time and how many were served in any one window.
 *
 *   TS_NODE_TRANSPILE_ONLY=1 node --loader ts-node/esm docs/figures/generate.mts
 *
 * Every policy allows 10 requests per second. The traffic (times from a whole second):
 *   0.95 s  15 requests at once, just before a window edge
 *   1.00 s  15 requests at once, just after it
 *   1.5–4 s one request every 50 ms (20/s, twice the rate)
 *   4–6 s   one request every 200 ms (5/s, half the rate)
 * ConcurrencyLimiter gets the same arrivals with 5 slots (see simulateConcurrency below).
 * Prints a Markdown summary for docs/algorithms.md. No dependency: the SVG is written by hand.
 */
import { writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  ConcurrencyLimiter,
  fixedWindow,
  gcra,
  leakyBucket,
  memoryStore,
  type Policy,
  RateLimiter,
  slidingLog,
  slidingWindow,
  smoothBursty,
  smoothWarmingUp,
  tokenBucket,
} from '../../packages/core/src/index.ts';

const here = dirname(fileURLToPath(import.meta.url));
/** A day boundary, so every window is aligned to whole seconds of the simulation. */
const T0 = 1_699_977_600_000;
const HORIZON_MS = 6000;
const WINDOW_MS = 1000;
const LIMIT = 10;
const BIN_MS = 50;

interface Figure {
  file: string;
  title: string;
  policy: () => Policy;
}

const figures: Figure[] = [
  {
    file: 'fixed-window.svg',
    title: "fixedWindow({ limit: 10, window: '1s' })",
    policy: () => fixedWindow({ limit: LIMIT, window: '1s' }),
  },
  {
    file: 'sliding-log.svg',
    title: "slidingLog({ limit: 10, window: '1s' })",
    policy: () => slidingLog({ limit: LIMIT, window: '1s' }),
  },
  {
    file: 'sliding-window.svg',
    title: "slidingWindow({ limit: 10, window: '1s' }) (10 buckets of 100 ms)",
    policy: () => slidingWindow({ limit: LIMIT, window: '1s' }),
  },
  {
    file: 'token-bucket.svg',
    title: "tokenBucket({ limit: 10, window: '1s' }) (burst 10)",
    policy: () => tokenBucket({ limit: LIMIT, window: '1s' }),
  },
  {
    file: 'gcra.svg',
    title: "gcra({ limit: 10, window: '1s' }) (burst 10)",
    policy: () => gcra({ limit: LIMIT, window: '1s' }),
  },
  {
    file: 'leaky-bucket.svg',
    title: "leakyBucket({ limit: 10, window: '1s', burst: 9, delay: 0 }) (shaping)",
    policy: () => leakyBucket({ limit: LIMIT, window: '1s', burst: 9, delay: 0 }),
  },
  {
    file: 'smooth-bursty.svg',
    title: "smoothBursty({ limit: 10, window: '1s' }) (consume = tryAcquire, no wait)",
    policy: () => smoothBursty({ limit: LIMIT, window: '1s' }),
  },
  {
    file: 'smooth-warming-up.svg',
    title: "smoothWarmingUp({ limit: 10, window: '1s', warmup: '2s' }) (consume = tryAcquire)",
    policy: () => smoothWarmingUp({ limit: LIMIT, window: '1s', warmup: '2s' }),
  },
];

/** Arrival times (ms after T0) of the simulated traffic. */
function traffic(): number[] {
  const times: number[] = [];
  for (let i = 0; i < 15; i++) times.push(950);
  for (let i = 0; i < 15; i++) times.push(1000);
  for (let t = 1500; t < 4000; t += 50) times.push(t);
  for (let t = 4000; t < HORIZON_MS; t += 200) times.push(t);
  return times;
}

interface Outcome {
  at: number;
  allowed: boolean;
  /** When an admitted request goes through: arrival + decision.delay. */
  servedAt: number;
}

async function simulate(policy: Policy): Promise<Outcome[]> {
  let now = T0;
  const limiter = new RateLimiter({ store: memoryStore({ clock: () => now }), policies: [policy] });
  const outcomes: Outcome[] = [];
  for (const at of traffic()) {
    now = T0 + at;
    const d = await limiter.consume('client');
    outcomes.push({ at, allowed: d.allowed, servedAt: at + d.delay });
  }
  return outcomes;
}

/** Requests served in (t − window, t], at every millisecond step where it can change. */
function servedPerWindow(outcomes: Outcome[]): Array<[number, number]> {
  const served = outcomes
    .filter((o) => o.allowed)
    .map((o) => o.servedAt)
    .sort((a, b) => a - b);
  const points: Array<[number, number]> = [];
  let first = 0;
  let last = 0;
  for (let t = 0; t <= HORIZON_MS; t += 5) {
    while (last < served.length && served[last]! <= t) last++;
    while (first < last && served[first]! <= t - WINDOW_MS) first++;
    points.push([t, last - first]);
  }
  return points;
}

/** The most requests served in any interval (t − window, t]: checked at every serve time. */
function peakPerWindow(outcomes: Outcome[]): number {
  const served = outcomes
    .filter((o) => o.allowed)
    .map((o) => o.servedAt)
    .sort((a, b) => a - b);
  let peak = 0;
  let first = 0;
  for (let last = 0; last < served.length; last++) {
    while (served[first]! <= served[last]! - WINDOW_MS) first++;
    peak = Math.max(peak, last - first + 1);
  }
  return peak;
}

// Layout (px).
const WIDTH = 760;
const LEFT = 72;
const RIGHT = 16;
const PLOT_W = WIDTH - LEFT - RIGHT;
const BARS_TOP = 52;
const BAR_UNIT = 5; // px per request in a 50 ms bin
const BAR_MAX = 16;
const BASELINE = BARS_TOP + BAR_MAX * BAR_UNIT;
const LINE_TOP = BASELINE + BAR_MAX * BAR_UNIT + 36;
const LINE_UNIT = 4; // px per request served in a window
const LINE_MAX = 22;
const LINE_BASE = LINE_TOP + LINE_MAX * LINE_UNIT;
const HEIGHT = LINE_BASE + 44;
const COLORS = {
  admitted: '#2e7d32',
  delayed: '#f9a825',
  rejected: '#c62828',
  served: '#1565c0',
  grid: '#d0d0d0',
  text: '#222222',
};

const x = (ms: number): number => LEFT + (ms / HORIZON_MS) * PLOT_W;
const fmt = (n: number): string => (Number.isInteger(n) ? String(n) : n.toFixed(1));
const escapeXml = (s: string): string =>
  s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

/** The lower panel: a count over time against a limit. */
interface LowerPanel {
  /** A word beside the panel. */
  axis: string;
  caption: string;
  legend: string;
  points: Array<[number, number]>;
  limit: number;
  /** Ends the summary line under the title. */
  peak: string;
}

function servedPanel(outcomes: Outcome[]): LowerPanel {
  return {
    axis: 'served',
    caption: 'requests served in the last 1 s (t − 1 s, t]; dashed: limit',
    legend: 'served per window',
    points: servedPerWindow(outcomes),
    limit: LIMIT,
    peak: `Peak served in one 1 s window: ${peakPerWindow(outcomes)} (limit ${LIMIT}).`,
  };
}

function svg(title: string, outcomes: Outcome[], lower: LowerPanel): string {
  const bins = HORIZON_MS / BIN_MS;
  const admitted = new Array<number>(bins).fill(0);
  const delayed = new Array<number>(bins).fill(0);
  const rejected = new Array<number>(bins).fill(0);
  for (const o of outcomes) {
    const b = Math.floor(o.at / BIN_MS);
    if (!o.allowed) rejected[b]!++;
    else if (o.servedAt > o.at) delayed[b]!++;
    else admitted[b]!++;
  }
  const out: string[] = [];
  const text = (px: number, py: number, s: string, extra = ''): void => {
    out.push(`<text x="${fmt(px)}" y="${fmt(py)}" ${extra}>${escapeXml(s)}</text>`);
  };
  out.push(
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${HEIGHT}" viewBox="0 0 ${WIDTH} ${HEIGHT}" font-family="Helvetica, Arial, sans-serif" font-size="11" fill="${COLORS.text}">`,
    `<rect width="${WIDTH}" height="${HEIGHT}" fill="#ffffff"/>`,
  );
  text(LEFT, 18, title, 'font-size="13" font-weight="bold"');
  const total = outcomes.length;
  const ok = outcomes.filter((o) => o.allowed).length;
  const late = outcomes.filter((o) => o.allowed && o.servedAt > o.at).length;
  text(
    LEFT,
    34,
    `${total} requests: ${ok} admitted (${late} of them delayed), ${total - ok} rejected. ${lower.peak}`,
  );
  // Seconds grid and labels.
  for (let s = 0; s <= HORIZON_MS / 1000; s++) {
    const gx = fmt(x(s * 1000));
    out.push(
      `<line x1="${gx}" y1="${BARS_TOP}" x2="${gx}" y2="${LINE_BASE}" stroke="${COLORS.grid}" stroke-width="1"/>`,
    );
    text(x(s * 1000), LINE_BASE + 14, `${s} s`, 'text-anchor="middle"');
  }
  // Panel 1: per 50 ms bin, admitted (and delayed) up, rejected down.
  text(4, BASELINE - (BAR_MAX * BAR_UNIT) / 2, 'admitted');
  text(4, BASELINE + (BAR_MAX * BAR_UNIT) / 2 + 8, 'rejected');
  text(4, LINE_BASE - (LINE_MAX * LINE_UNIT) / 2 + 4, lower.axis);
  const barW = (BIN_MS / HORIZON_MS) * PLOT_W - 1;
  for (let b = 0; b < bins; b++) {
    const bx = fmt(x(b * BIN_MS) + 0.5);
    if (admitted[b]! > 0) {
      const h = admitted[b]! * BAR_UNIT;
      out.push(
        `<rect x="${bx}" y="${fmt(BASELINE - h)}" width="${fmt(barW)}" height="${fmt(h)}" fill="${COLORS.admitted}"/>`,
      );
    }
    if (delayed[b]! > 0) {
      const base = BASELINE - admitted[b]! * BAR_UNIT;
      const h = delayed[b]! * BAR_UNIT;
      out.push(
        `<rect x="${bx}" y="${fmt(base - h)}" width="${fmt(barW)}" height="${fmt(h)}" fill="${COLORS.delayed}"/>`,
      );
    }
    if (rejected[b]! > 0) {
      out.push(
        `<rect x="${bx}" y="${fmt(BASELINE)}" width="${fmt(barW)}" height="${fmt(rejected[b]! * BAR_UNIT)}" fill="${COLORS.rejected}"/>`,
      );
    }
  }
  out.push(
    `<line x1="${LEFT}" y1="${BASELINE}" x2="${LEFT + PLOT_W}" y2="${BASELINE}" stroke="${COLORS.text}" stroke-width="1"/>`,
  );
  for (const n of [5, 10, 15]) {
    text(LEFT - 4, BASELINE - n * BAR_UNIT + 4, String(n), 'text-anchor="end"');
    text(LEFT - 4, BASELINE + n * BAR_UNIT + 4, String(n), 'text-anchor="end"');
  }
  // Panel 2: a count over time (served in the trailing window, leases held) against the limit.
  text(LEFT, LINE_TOP - 8, lower.caption);
  const limitY = fmt(LINE_BASE - lower.limit * LINE_UNIT);
  out.push(
    `<line x1="${LEFT}" y1="${limitY}" x2="${LEFT + PLOT_W}" y2="${limitY}" stroke="${COLORS.rejected}" stroke-dasharray="5,4" stroke-width="1"/>`,
    `<line x1="${LEFT}" y1="${LINE_BASE}" x2="${LEFT + PLOT_W}" y2="${LINE_BASE}" stroke="${COLORS.text}" stroke-width="1"/>`,
  );
  for (const n of [0, 10, 20]) {
    text(LEFT - 4, LINE_BASE - n * LINE_UNIT + 4, String(n), 'text-anchor="end"');
  }
  const points = lower.points
    .map(([t, n]) => `${fmt(x(t))},${fmt(LINE_BASE - Math.min(n, LINE_MAX) * LINE_UNIT)}`)
    .join(' ');
  out.push(
    `<polyline points="${points}" fill="none" stroke="${COLORS.served}" stroke-width="1.5"/>`,
  );
  // Legend.
  const legend: Array<[string, string]> = [
    ['admitted at once', COLORS.admitted],
    ['admitted, delayed', COLORS.delayed],
    ['rejected', COLORS.rejected],
    [lower.legend, COLORS.served],
  ];
  let lx = LEFT;
  for (const [label, color] of legend) {
    out.push(`<rect x="${lx}" y="${HEIGHT - 16}" width="10" height="10" fill="${color}"/>`);
    text(lx + 14, HEIGHT - 7, label);
    lx += 24 + label.length * 6;
  }
  out.push('</svg>');
  return `${out.join('\n')}\n`;
}

/**
 * ConcurrencyLimiter({ limit: 5, leaseTtl: '1s' }) on the same arrivals: each admitted request
 * works 300 ms and releases its lease, except those admitted from 2.0 to 2.5 s, whose holder
 * "crashes" and never releases: their slots come back when the leases expire, 1 s later.
 */
const CONCURRENCY = 5;
const WORK_MS = 300;
const LEASE_TTL_MS = 1000;
const crashes = (at: number): boolean => at >= 2000 && at < 2500;

async function simulateConcurrency(): Promise<{
  outcomes: Outcome[];
  held: LowerPanel;
  peak: number;
}> {
  let now = T0;
  const limiter = new ConcurrencyLimiter({
    store: memoryStore({ clock: () => now }),
    limit: CONCURRENCY,
    leaseTtl: LEASE_TTL_MS,
  });
  const outcomes: Outcome[] = [];
  const releases: Array<{ at: number; release: () => Promise<boolean> }> = [];
  /** [from, to) of every lease, until released or expired. */
  const leases: Array<[number, number]> = [];
  for (const at of traffic()) {
    // Work that finished by now releases first, in time order.
    releases.sort((a, b) => a.at - b.at);
    while (releases.length > 0 && releases[0]!.at <= at) {
      const done = releases.shift()!;
      now = T0 + done.at;
      await done.release();
    }
    now = T0 + at;
    const d = await limiter.acquire('client');
    outcomes.push({ at, allowed: d.allowed, servedAt: at });
    if (!d.allowed || !d.lease) continue;
    const lease = d.lease;
    if (crashes(at)) {
      leases.push([at, at + LEASE_TTL_MS]);
    } else {
      leases.push([at, at + WORK_MS]);
      releases.push({ at: at + WORK_MS, release: () => lease.release() });
    }
  }
  const points: Array<[number, number]> = [];
  let peak = 0;
  for (let t = 0; t <= HORIZON_MS; t += 5) {
    const n = leases.filter(([from, to]) => from <= t && t < to).length;
    peak = Math.max(peak, n);
    points.push([t, n]);
  }
  return {
    outcomes,
    peak,
    held: {
      axis: 'held',
      caption: 'leases held (crashed holders from 2 to 2.5 s never release); dashed: limit',
      legend: 'leases held',
      points,
      limit: CONCURRENCY,
      peak: `Peak leases held: ${peak} (limit ${CONCURRENCY}).`,
    },
  };
}

console.log('| policy | admitted | of which delayed | rejected | peak served in one 1 s window |');
console.log('|---|---|---|---|---|');
for (const figure of figures) {
  const outcomes = await simulate(figure.policy());
  writeFileSync(join(here, figure.file), svg(figure.title, outcomes, servedPanel(outcomes)));
  const ok = outcomes.filter((o) => o.allowed);
  console.log(
    `| \`${figure.title}\` | ${ok.length} | ${ok.filter((o) => o.servedAt > o.at).length} | ${outcomes.length - ok.length} | ${peakPerWindow(outcomes)} |`,
  );
}

const concurrency = await simulateConcurrency();
const concurrencyTitle =
  "new ConcurrencyLimiter({ limit: 5, leaseTtl: '1s' }) (300 ms of work per lease)";
writeFileSync(
  join(here, 'concurrency-limiter.svg'),
  svg(concurrencyTitle, concurrency.outcomes, concurrency.held),
);
const leased = concurrency.outcomes.filter((o) => o.allowed).length;
console.log(
  `| \`${concurrencyTitle}\` | ${leased} | 0 | ${concurrency.outcomes.length - leased} | — (peak leases held: ${concurrency.peak} of ${CONCURRENCY}) |`,
);
