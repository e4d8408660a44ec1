/**
 * Redis's own work per command, counted in instructions by valgrind's callgrind: unlike ops/s,
 * the count does not move with whatever else the machine is doing, so it compares scripts
 * exactly on a shared 2-core box. One redis-server runs under callgrind; for each command,
 * redis-benchmark (one connection, pipelined, 1 000 keys) first creates the keys, then the counters are
 * zeroed, `calls` commands run, and the counters are dumped: instructions / calls. That covers
 * everything the server does for the command (reading and parsing it, the script, the reply),
 * user space only. Skipped when valgrind is not installed.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { startRedisServer } from '@floodgate/redis-server';
import { Redis } from 'ioredis';

const run = promisify(execFile);
/** Keys the commands spread over: few enough that a warm-up creates every one of them. */
const KEYS = 1_000;

export interface InstructionRow {
  subject: string;
  instructionsPerCall: number;
}

export interface CommandSubject {
  name: string;
  /** Script text to SCRIPT LOAD first, if the command is an EVALSHA. */
  script?: string;
  command: readonly string[];
  /** Decisions one command makes (a batch script's calls): the count is per decision. */
  perCall?: number;
  /** Writes what the command should find (before its warm-up), on the measured server. */
  setup?: (client: Redis) => Promise<void>;
}

export async function callgrindAvailable(): Promise<boolean> {
  try {
    await run('valgrind', ['--version']);
    await run('callgrind_control', ['--version']);
    return true;
  } catch {
    return false;
  }
}

export async function instructionsPerCall(
  subjects: readonly CommandSubject[],
  calls = 10_000,
): Promise<InstructionRow[]> {
  const dir = mkdtempSync(join(tmpdir(), 'floodgate-bench-callgrind-'));
  const redis = await startRedisServer({
    wrapper: ['valgrind', '--tool=callgrind', `--callgrind-out-file=${join(dir, 'cg.out')}`],
  });
  const client = new Redis({ port: redis.port, host: '127.0.0.1' });
  const pid = String(redis.pid);
  const bench = (n: number, command: readonly string[]) =>
    run(
      'redis-benchmark',
      [
        ...['-h', '127.0.0.1', '-p', String(redis.port), '-c', '1', '-P', '16'],
        ...['-n', String(n), '-r', String(KEYS), '-q', ...command],
      ],
      // redis-benchmark sometimes stalls against a valgrind'ed server on a loaded machine.
      { maxBuffer: 1 << 28, timeout: 90_000 },
    );
  const rows: InstructionRow[] = [];
  try {
    for (const s of subjects) {
      try {
        rows.push(await measureOne(s));
      } catch {
        // Stalled or failed: reported as not measured rather than guessed.
        rows.push({ subject: s.name, instructionsPerCall: Number.NaN });
      }
      await client.flushdb();
    }
  } finally {
    await client.quit();
    await redis.stop();
    rmSync(dir, { recursive: true, force: true });
  }
  return rows;

  async function measureOne(s: CommandSubject): Promise<InstructionRow> {
    {
      if (s.script !== undefined) await client.script('LOAD', s.script);
      await s.setup?.(client);
      // Every key exists before counting starts (the steady state: misses would add first writes).
      await bench(Math.ceil((KEYS * 6) / (s.perCall ?? 1)), s.command);
      await run('callgrind_control', ['-z', pid]);
      await bench(Math.ceil(calls / (s.perCall ?? 1)), s.command);
      const before = new Set(readdirSync(dir));
      await run('callgrind_control', ['-d', pid]);
      const total = await dumpedTotal(dir, before);
      return {
        subject: s.name,
        instructionsPerCall: Math.round(
          total / Math.ceil(calls / (s.perCall ?? 1)) / (s.perCall ?? 1),
        ),
      };
    }
  }
}

/** The instruction total of the dump that appears in `dir` (waiting up to 10 s for it). */
async function dumpedTotal(dir: string, before: Set<string>): Promise<number> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    for (const file of readdirSync(dir)) {
      if (before.has(file)) continue;
      const match = /^(?:summary|totals): (\d+)/m.exec(readFileSync(join(dir, file), 'utf8'));
      if (match) return Number(match[1]);
    }
    if (Date.now() > deadline) throw new Error('callgrind wrote no dump');
    await new Promise((r) => setTimeout(r, 50));
  }
}
