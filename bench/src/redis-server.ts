/**
 * A throwaway redis-server for one bench run: 127.0.0.1 on a free port, nothing on disk, ended
 * by its PID (never by name) when the run ends or this process exits.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface BenchRedis {
  readonly port: number;
  readonly pid: number;
  stop(): Promise<void>;
}

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

/** Resolves once something accepts connections on `port`. */
export async function waitForPort(port: number, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const ok = await new Promise<boolean>((resolve) => {
      const socket = net.connect({ host: '127.0.0.1', port });
      socket.once('connect', () => {
        socket.destroy();
        resolve(true);
      });
      socket.once('error', () => resolve(false));
    });
    if (ok) return;
    if (Date.now() > deadline) throw new Error(`nothing listens on 127.0.0.1:${port}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

/**
 * `wrapper` runs the server under another program (e.g. valgrind and its options); the PID is
 * then the wrapper's, which for valgrind is the server's own process.
 */
export async function startRedis(wrapper: readonly string[] = []): Promise<BenchRedis> {
  const bin = process.env.REDIS_SERVER_BIN ?? 'redis-server';
  const dir = mkdtempSync(join(tmpdir(), 'floodgate-bench-redis-'));
  const port = await freePort();
  const command = [...wrapper, bin];
  const child: ChildProcess = spawn(
    command[0]!,
    [
      ...command.slice(1),
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
      '--loglevel',
      'warning',
    ],
    { stdio: 'ignore' },
  );
  const killOnExit = () => child.kill('SIGKILL');
  process.once('exit', killOnExit);
  await new Promise<void>((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (code) => reject(new Error(`redis-server exited early (code ${code})`)));
    waitForPort(port, wrapper.length > 0 ? 60_000 : 10_000).then(resolve, reject);
  });
  return {
    port,
    pid: child.pid!,
    stop: async () => {
      process.off('exit', killOnExit);
      if (child.exitCode === null && child.signalCode === null) {
        const exited = new Promise((r) => child.once('exit', r));
        child.kill('SIGTERM');
        await exited;
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
