/**
 * `pnpm --filter @floodgate/bench run load-time`: how long `require` and `import` take, in a
 * fresh Node process each time, for @floodgate/core (its Redis store, a limiter made and its
 * first script assembled) against express-rate-limit + rate-limit-redis loaded the same way,
 * side by side in alternating rounds, and the size of core's packed tarball (kB of 1000 bytes,
 * as npm counts). Prints a markdown table with the medians and the ratios.
 * FLOODGATE_CORE_BEFORE=<another build's dist/index.js> times that build in the same rounds.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { LOAD_TIME_HEADING, withSection } from './results-section.js';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 30);
const require = createRequire(import.meta.url);
const resolved = (name: string) => JSON.stringify(require.resolve(name));
/** The file `import` loads (the `import` condition of the package's exports), as a URL. */
const imported = (name: string) => JSON.stringify(import.meta.resolve(name));

const PEERS_REQUIRE = 'express-rate-limit + rate-limit-redis (require)';
const PEERS_IMPORT = 'express-rate-limit + rate-limit-redis (import)';

/**
 * Each subject: the code a fresh process times (ms from before its first require or import to
 * after), and the peers it is compared with (loaded the same way).
 */
const subjects: Record<string, { code: string; peers: string }> = {
  '@floodgate/core (require)': {
    code: `require(${resolved('@floodgate/core')});`,
    peers: PEERS_REQUIRE,
  },
  // Through the public API (the build has no file per module): a limiter on a Redis store whose
  // client never answers, and one consume, which assembles its script and its batch script.
  '@floodgate/core (require, then its fixedWindow script and batch script assembled)': {
    code: `
    const core = require(${resolved('@floodgate/core')});
    const never = () => new Promise(() => {});
    const client = { evalSha: never, eval: never, sendCommand: never };
    const limiter = new core.RateLimiter({
      store: core.redisStore({ client }),
      policies: core.fixedWindow({ limit: 5, window: '1m' }),
    });
    void limiter.consume('k');
    await new Promise((resolve) => process.nextTick(resolve));`,
    peers: PEERS_REQUIRE,
  },
  // The ESM entry: a wrapper re-exporting the CommonJS build by name.
  '@floodgate/core (import)': {
    code: `await import(${imported('@floodgate/core')});`,
    peers: PEERS_IMPORT,
  },
  [PEERS_REQUIRE]: {
    code: `require(${resolved('express-rate-limit')}); require(${resolved('rate-limit-redis')});`,
    peers: PEERS_REQUIRE,
  },
  [PEERS_IMPORT]: {
    code: `await import(${imported('express-rate-limit')}); await import(${imported('rate-limit-redis')});`,
    peers: PEERS_IMPORT,
  },
};

// Another build of core to compare in the same rounds (e.g. an older commit's dist/index.js).
const before = process.env.FLOODGATE_CORE_BEFORE;
if (before) {
  subjects[`@floodgate/core (require) from ${before}`] = {
    code: `require(${JSON.stringify(before)});`,
    peers: PEERS_REQUIRE,
  };
}

function timeOnce(code: string): number {
  const script = `const t = performance.now(); (async () => { ${code}; })().then(() => { process.stdout.write(String(performance.now() - t)); process.exit(0); });`;
  return Number(execFileSync(process.execPath, ['-e', script], { encoding: 'utf8' }));
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
};

const samples = new Map<string, number[]>(Object.keys(subjects).map((k) => [k, []]));
for (let round = 0; round < ROUNDS; round++) {
  for (const [name, { code }] of Object.entries(subjects)) samples.get(name)!.push(timeOnce(code));
}
const lines = [
  '| subject | median ms | × express-rate-limit + rate-limit-redis, loaded the same way |',
  '|---|---|---|',
];
let slowest = 0;
for (const [name, xs] of samples) {
  const m = median(xs);
  const ratio = m / median(samples.get(subjects[name]!.peers)!);
  if (name.startsWith('@floodgate/core (')) slowest = Math.max(slowest, ratio);
  lines.push(`| ${name} | ${m.toFixed(1)} | ${ratio.toFixed(2)}× |`);
}
const hit = (ok: boolean) => (ok ? 'hit' : '**missed**');

// The packed tarball of core, as npm would publish it: packed and unpacked bytes.
const coreDir = dirname(require.resolve('@floodgate/core/package.json'));
const out = mkdtempSync(join(tmpdir(), 'floodgate-pack-'));
try {
  const json = execFileSync('npm', ['pack', '--json', '--pack-destination', out], {
    cwd: coreDir,
    encoding: 'utf8',
  });
  const [info] = JSON.parse(json) as { size: number; unpackedSize: number }[];
  const file = readdirSync(out)[0]!;
  const unpacked = info!.unpackedSize;
  lines.push(
    '',
    `@floodgate/core tarball: ${(statSync(join(out, file)).size / 1000).toFixed(0)} KB packed, ${(unpacked / 1000).toFixed(0)} KB unpacked (${unpacked} bytes)`,
    '',
    `Targets: load time within 1.5× of express-rate-limit + rate-limit-redis (the slowest row of core: ${slowest.toFixed(2)}×): ${hit(slowest <= 1.5)}; ≤ 300 KB unpacked: ${hit(unpacked <= 300_000)}.`,
  );
} finally {
  rmSync(out, { recursive: true, force: true });
}
process.stdout.write(`${lines.join('\n')}\n`);

// The same table in bench/results.md, under its own heading (`pnpm bench` keeps it).
const results = join(dirname(fileURLToPath(import.meta.url)), '..', 'results.md');
const section = [
  LOAD_TIME_HEADING,
  '',
  `Written by \`pnpm --filter @floodgate/bench run load-time\` (bench/src/load-time.ts), ${new Date().toISOString()}:`,
  `${ROUNDS} rounds, each subject in a fresh Node ${process.version} process per round, the subjects in`,
  `alternating order; medians; load average ${loadavg()
    .map((x) => x.toFixed(2))
    .join(' ')} at the end (only the ratios within one run mean anything).`,
  '',
  ...lines,
];
writeFileSync(results, withSection(readFileSync(results, 'utf8'), section.join('\n')));
process.stdout.write('wrote the "Load time and weight" section of bench/results.md\n');
