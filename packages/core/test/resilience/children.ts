/**
 * Forked decider processes for the multi-process tests: each child runs a fixture from
 * ./fixtures on the core compiled by build-core.ts, says `{ ready: true }` once, then answers
 * each message with one reply.
 */
import { type ChildProcess, fork } from 'node:child_process';
import { join } from 'node:path';
import { testRedisUrl, workerDb } from '../../../../test/harness/redis.js';

/** Forks one child per `env` running `fixtures/<fixture>`, resolved once every child is ready. */
export async function forkChildren(
  fixture: string,
  core: string,
  envs: readonly Record<string, string>[],
): Promise<ChildProcess[]> {
  const children = envs.map((env) =>
    fork(join(__dirname, 'fixtures', fixture), [], {
      env: {
        ...process.env,
        FLOODGATE_CORE: core,
        REDIS_URL: testRedisUrl(),
        REDIS_DB: String(workerDb()),
        ...env,
      },
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    }),
  );
  await Promise.all(
    children.map(
      (child) =>
        new Promise<void>((resolve, reject) => {
          child.once('message', () => resolve());
          child.once('exit', (code) => reject(new Error(`child exited early (${code})`)));
        }),
    ),
  );
  return children;
}

/** Sends `message` to `child` and resolves with its next reply (never its ready signal). */
export function ask<Reply>(child: ChildProcess, message: object): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const onMessage = (reply: Reply & { ready?: boolean }) => {
      if (reply.ready) return;
      child.off('message', onMessage);
      resolve(reply);
    };
    child.on('message', onMessage);
    child.once('exit', (code) => reject(new Error(`child exited (${code})`)));
    child.send(message);
  });
}

/** Disconnects every child, and kills those still running. */
export function stopChildren(children: readonly ChildProcess[]): void {
  for (const child of children) {
    if (child.connected) child.disconnect();
    if (child.exitCode === null) child.kill('SIGKILL');
  }
}
