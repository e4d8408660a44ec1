/**
 * Starts and stops throwaway `redis-server` processes, for the test suites (test/harness/) and
 * the benchmarks (bench/): one launcher for both. Every server is a child of this process,
 * bound to 127.0.0.1 on a free port, keeps nothing on disk, and is ended by its PID (never by
 * name) when stopped or when this process exits.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface RedisServerHandle {
  readonly port: number;
  readonly url: string;
  readonly pid: number;
  readonly dir: string;
  /** Stops the server (SIGTERM, then SIGKILL after a grace period). */
  stop(): Promise<void>;
  /** Kills the server abruptly (SIGKILL), as a crash would. */
  kill(): Promise<void>;
  /** Starts the server again on the same port, with empty memory (nothing is persisted). */
  restart(): Promise<void>;
}

export interface StartRedisOptions {
  /** Fixed port; a free one is picked when omitted. */
  port?: number;
  /** Extra `redis-server` arguments, e.g. `['--cluster-enabled', 'yes']`. */
  args?: string[];
  /**
   * A configuration file, passed first (a sentinel needs one it can rewrite:
   * `{ configFile, args: ['--sentinel'] }`).
   */
  configFile?: string;
  /**
   * Runs the server under another program, e.g. `['valgrind', '--tool=callgrind', …]` (the
   * bench's instruction counts); the PID is then the wrapper's, which for valgrind is the
   * server's own process.
   */
  wrapper?: readonly string[];
  /**
   * How long the server may take to answer PING (ms).
   * @default 10 000, or 60 000 with a wrapper (valgrind starts slowly)
   */
  startTimeoutMs?: number;
}

const started = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of started) child.kill('SIGKILL');
});

/** The `redis-server` binary, or an error telling how to install it. */
export function redisServerBinary(): string {
  const bin = process.env.REDIS_SERVER_BIN ?? 'redis-server';
  const probe = spawnSync(bin, ['--version'], { encoding: 'utf8' });
  if (probe.error || probe.status !== 0) {
    throw new Error(
      `redis-server not found (tried "${bin}"). Install it (Debian/Ubuntu: apt-get install redis-server; ` +
        'macOS: brew install redis), set REDIS_SERVER_BIN, or set REDIS_URL to an existing server.',
    );
  }
  return bin;
}

/** A port nothing listens on at the moment (it can be taken before it is used: retry). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => {
        if (address && typeof address === 'object') resolve(address.port);
        else reject(new Error('could not pick a free port'));
      });
    });
  });
}

/** Resolves once the server answers PING with PONG, or rejects after `timeoutMs`. */
export async function waitForPong(port: number, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const ok = await new Promise<boolean>((resolve) => {
      const socket = net.connect({ host: '127.0.0.1', port });
      let reply = '';
      socket.setTimeout(500);
      socket.on('connect', () => socket.write('PING\r\n'));
      socket.on('data', (chunk) => {
        reply += chunk.toString();
        if (reply.includes('\r\n')) {
          socket.destroy();
          resolve(reply.startsWith('+PONG'));
        }
      });
      socket.on('error', () => resolve(false));
      socket.on('timeout', () => {
        socket.destroy();
        resolve(false);
      });
    });
    if (ok) return;
    if (Date.now() > deadline) throw new Error(`redis-server on port ${port} did not answer PING`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

function waitForExit(child: ChildProcess, ms: number): Promise<boolean> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(true);
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(false), ms);
    child.once('exit', () => {
      clearTimeout(timer);
      resolve(true);
    });
  });
}

/** Starts a throwaway redis-server and resolves once it answers PING. */
export async function startRedisServer(
  options: StartRedisOptions = {},
): Promise<RedisServerHandle> {
  const bin = redisServerBinary();
  const dir = mkdtempSync(join(tmpdir(), 'floodgate-redis-'));
  let port = options.port ?? (await freePort());
  let child: ChildProcess | undefined;

  const launch = async (): Promise<void> => {
    const args = [
      ...(options.configFile ? [options.configFile] : []),
      '--port',
      String(port),
      '--bind',
      '127.0.0.1',
      '--save',
      '',
      '--appendonly',
      'no',
      '--dir',
      dir,
      '--daemonize',
      'no',
      '--loglevel',
      'warning',
      '--logfile',
      join(dir, 'redis.log'),
      ...(options.args ?? []),
    ];
    const [program, ...before] = [...(options.wrapper ?? []), bin];
    const proc = spawn(program!, [...before, ...args], { stdio: 'ignore' });
    started.add(proc);
    proc.once('exit', () => started.delete(proc));
    const exited = new Promise<never>((_, reject) =>
      proc.once('exit', (code) => reject(new Error(`redis-server exited early (code ${code})`))),
    );
    exited.catch(() => undefined);
    const timeout = options.startTimeoutMs ?? (options.wrapper?.length ? 60_000 : 10_000);
    await Promise.race([waitForPong(port, timeout), exited]);
    child = proc;
  };

  // A port picked as free can be taken before redis binds it; try a few.
  for (let attempt = 0; ; attempt++) {
    try {
      await launch();
      break;
    } catch (error) {
      if (attempt >= 3 || options.port !== undefined) throw error;
      port = await freePort();
    }
  }

  const end = async (signal: NodeJS.Signals): Promise<void> => {
    const proc = child;
    if (!proc) return;
    child = undefined;
    proc.kill(signal);
    if (!(await waitForExit(proc, 5_000))) {
      proc.kill('SIGKILL');
      await waitForExit(proc, 5_000);
    }
  };

  return {
    port,
    url: `redis://127.0.0.1:${port}`,
    get pid() {
      return child?.pid ?? -1;
    },
    dir,
    stop: async () => {
      await end('SIGTERM');
      rmSync(dir, { recursive: true, force: true });
    },
    kill: () => end('SIGKILL'),
    restart: async () => {
      await end('SIGTERM');
      await launch();
    },
  };
}
