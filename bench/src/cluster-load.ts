/**
 * The Redis Cluster section's child-process side (core-worker.js `cluster`): every subject on one
 * ioredis `Cluster` client (auto-pipelining off, the default), closed loop over 10 000 keys,
 * rotated repetitions, with CPU time per decision of this process and of the masters; and how
 * many decisions each EVALSHA carried (the size of the per-slot batches).
 */
import { Cluster } from 'ioredis';
import rlf from 'rate-limiter-flexible';
import { procCpuUs } from './core-worker-cpu.js';
import { crc16Step } from './engine-scripts.js';
import { closedLoop, keySet, type Operation, rotate, type Sample, SCALE } from './measure.js';
import { floodgateSubjects, NEVER_DENY } from './subjects.js';

const WARMUP_MS = 150 * SCALE;
/** Twice the single-Redis phase: the masters' CPU time is read in 10 ms ticks, three of them. */
const MEASURE_MS = 1000 * SCALE;
const KEY_COUNT = 10_000;

/** What the parent passes: the cluster's nodes, the masters' PIDs, one slot per master. */
export interface ClusterArgs {
  readonly ports: readonly number[];
  readonly masterPids: readonly number[];
  readonly nodeSlots: readonly number[];
  readonly inFlight: number;
  readonly reps: number;
}

/**
 * `spread`: the callers' keys as they come (10 000 over 16 384 slots). `one slot per node`: 10 000
 * keys made to fall in one slot per master, so the per-slot batches are what batches per node
 * would be with spread keys (the same decisions, the same number of nodes and connections).
 */
export type KeySpread = 'spread' | 'one slot per node';

export interface ClusterRow extends Sample {
  subject: string;
  keys: KeySpread;
  inFlight: number;
  rep: number;
  /** CPU time (user + system) per decision, µs: this Node process, and the masters together. */
  nodeCpuUs: number;
  redisCpuUs: number;
}

/** How many decisions one EVALSHA (or EVAL) carried, over one closed-loop run. */
export interface BatchSizeRow {
  subject: string;
  keys: KeySpread;
  inFlight: number;
  /** commands[n] = EVALSHA commands that carried n decisions (n ≥ 1). */
  commands: Record<number, number>;
}

interface ClusterSubject {
  readonly name: string;
  readonly keys: KeySpread;
  readonly op: Operation;
}

function subjects(client: Cluster): ClusterSubject[] {
  const flexible = new rlf.RateLimiterRedis({
    storeClient: client,
    points: NEVER_DENY,
    duration: 60,
    keyPrefix: 'rlf',
  });
  const spread = (list: { name: string; op: Operation }[]) =>
    list.map((s) => ({ ...s, keys: 'spread' as const }));
  const perNode = (list: { name: string; op: Operation }[]) =>
    list
      .filter((s) => !s.name.includes('3 policies'))
      .map((s) => ({ ...s, keys: 'one slot per node' as const }));
  return [
    ...spread([{ name: 'ioredis INCR', op: (key) => client.incr(`incr:${key}`) }]),
    ...spread(floodgateSubjects(client, true)),
    ...spread(floodgateSubjects(client, false)),
    ...spread(floodgateSubjects(client, 'node', 'p')),
    ...spread([{ name: 'rate-limiter-flexible', op: (key) => flexible.consume(key) }]),
    ...perNode(floodgateSubjects(client, true, 'n')),
    ...perNode(floodgateSubjects(client, false, 'n')),
  ];
}

const connect = (ports: readonly number[]) =>
  new Cluster(ports.map((port) => ({ host: '127.0.0.1', port })));

const cpuOf = (pids: readonly number[]) => pids.reduce((sum, pid) => sum + procCpuUs(pid), 0);

/** Every subject at `inFlight`, `reps` rotated repetitions. */
export async function clusterSection(args: ClusterArgs): Promise<ClusterRow[]> {
  const client = connect(args.ports);
  const keys = { spread: keySet(KEY_COUNT), 'one slot per node': slotKeys(args.nodeSlots) };
  const rows: ClusterRow[] = [];
  try {
    const list = subjects(client);
    // Every script loaded on every master (NOSCRIPT, then EVAL) before anything is measured.
    for (const s of list) await closedLoop(s.op, keys[s.keys], args.inFlight, 100, 0);
    for (let rep = 0; rep < args.reps; rep++) {
      for (const s of rotate(list, rep)) {
        let node = process.cpuUsage();
        let redis = cpuOf(args.masterPids);
        const sample = await closedLoop(
          s.op,
          keys[s.keys],
          args.inFlight,
          MEASURE_MS,
          WARMUP_MS,
          () => {
            node = process.cpuUsage();
            redis = cpuOf(args.masterPids);
          },
        );
        const used = process.cpuUsage(node);
        const decisions = (sample.opsPerSec * MEASURE_MS) / 1000;
        rows.push({
          subject: s.name,
          keys: s.keys,
          inFlight: args.inFlight,
          rep,
          ...sample,
          nodeCpuUs: (used.user + used.system) / decisions,
          redisCpuUs: (cpuOf(args.masterPids) - redis) / decisions,
        });
      }
    }
  } finally {
    client.disconnect();
  }
  return rows;
}

/**
 * Decisions per script command for our batched subjects: one untimed run each, counting the
 * EVALSHA/EVAL commands the client sends (keys per command ÷ keys per decision, which a lone
 * call made first shows).
 */
export async function batchSizes(args: ClusterArgs): Promise<BatchSizeRow[]> {
  const client = connect(args.ports);
  const keys = { spread: keySet(KEY_COUNT), 'one slot per node': slotKeys(args.nodeSlots) };
  let sent: number[] = [];
  const send = client.sendCommand.bind(client);
  client.sendCommand = ((command: { name: string; args: unknown[] }, ...rest: unknown[]) => {
    // A per-node batch declares one key and names how many it carries in its ARGV[2].
    const declared = Number(command.args[1]);
    if (command.name === 'evalsha' || command.name === 'eval')
      sent.push(declared === 1 ? Number(command.args[4]) : declared);
    return (send as (...a: unknown[]) => unknown)(command, ...rest);
  }) as typeof client.sendCommand;
  const rows: BatchSizeRow[] = [];
  try {
    for (const s of subjects(client).filter(
      (x) => x.name.startsWith('floodgate') && !x.name.includes('batch: false'),
    )) {
      await closedLoop(s.op, keys[s.keys], args.inFlight, 100, 0); // scripts loaded everywhere
      sent = [];
      await s.op('batch-size-probe');
      const perDecision = sent[sent.length - 1]!;
      sent = [];
      await closedLoop(s.op, keys[s.keys], args.inFlight, MEASURE_MS, 0);
      const commands: Record<number, number> = {};
      for (const n of sent) commands[n / perDecision] = (commands[n / perDecision] ?? 0) + 1;
      rows.push({ subject: s.name, keys: s.keys, inFlight: args.inFlight, commands });
    }
  } finally {
    client.disconnect();
  }
  return rows;
}

/** CRC16-XMODEM, the checksum Redis Cluster maps keys to slots with (core's, one byte at a time). */
const step = crc16Step;
const crcOf = (text: string) => {
  let crc = 0;
  for (let i = 0; i < text.length; i++) crc = step(crc, text.charCodeAt(i));
  return crc;
};

/** Two bytes appended to a prefix reach any CRC: m → crc(0, m) is a bijection (CRC is linear). */
const INVERSE = (() => {
  const inverse = new Int32Array(65_536);
  for (let m = 0; m < 65_536; m++) inverse[step(step(0, m >> 8), m & 255)] = m;
  return inverse;
})();
const alnum = (b: number) => (b >= 48 && b <= 57) || (b >= 65 && b <= 90) || (b >= 97 && b <= 122);

/**
 * 10 000 ASCII keys, `user:<i>:` plus two letters or digits chosen so the key falls in the
 * given slots in turn (the limiter hashes the whole key: its storage keys are `<prefix>:{key}:…`).
 */
export function slotKeys(slots: readonly number[], count = KEY_COUNT): string[] {
  const keys: string[] = [];
  for (let i = 0; keys.length < count; i++) {
    const base = `user:${i}:`;
    const zeros = step(step(crcOf(base), 0), 0);
    const slot = slots[keys.length % slots.length]!;
    for (let high = 0; high < 4; high++) {
      const m = INVERSE[((high << 14) | slot) ^ zeros]!;
      if (alnum(m >> 8) && alnum(m & 255)) {
        keys.push(base + String.fromCharCode(m >> 8, m & 255));
        break;
      }
    }
  }
  return keys;
}
