/**
 * Work a response waits for before it goes out: a concurrency lease's release, a `count`
 * refund. Each is a store call, and a client that sends its next request as soon as it has this
 * answer must find its slot free and its refund made. One gate per response runs every such task
 * of every limiter on it (stacked middlewares) at once when `end` is called, and waits for them
 * together, at most RELEASE_WAIT_MAX_MS: a stalled store holds a response for one `timeout`, not
 * one per limiter.
 */
import type { ServerResponse } from 'node:http';

/**
 * Longest a response waits for the work registered with `beforeEnd` (a store that does not
 * answer must not hold responses; a lease then expires after its `leaseTtl`, a refund is lost).
 */
export const RELEASE_WAIT_MAX_MS = 1000;

/** The tasks of responses whose `end` has not been called yet. */
const gates = new WeakMap<ServerResponse, (() => Promise<unknown>)[]>();

/**
 * Runs `task` when the response starts going out — its first `write(...)` or its `end(...)` —
 * alongside every other task registered on that response, and sends what was written once all
 * of them settled or RELEASE_WAIT_MAX_MS passed. Writes count too: Fastify 5.0 writes the
 * whole body with `write` (Content-Length set) and only then calls `end` (later 5.x releases
 * send it with `end`), so a client had its complete answer before a gate on `end` had run.
 * `task` should not reject (a rejection is ignored). Call it before the response can have started.
 */
export function beforeEnd(response: ServerResponse, task: () => Promise<unknown>): void {
  const pending = gates.get(response);
  if (pending !== undefined) {
    pending.push(task);
    return;
  }
  const tasks = [task];
  gates.set(response, tasks);
  const { write, end } = response;
  // The writes and the end called while the tasks run, sent in order once they settled.
  let held: { send: (...a: unknown[]) => unknown; args: unknown[] }[] | undefined;
  const hold = (send: (...a: unknown[]) => unknown, args: unknown[]) => {
    if (held !== undefined) {
      held.push({ send, args });
      return;
    }
    held = [{ send, args }];
    gates.delete(response);
    let timer: NodeJS.Timeout | undefined;
    const waited = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, RELEASE_WAIT_MAX_MS);
      timer.unref();
    });
    const settled = Promise.allSettled(tasks.map((run) => run()));
    void Promise.race([settled, waited]).then(() => {
      clearTimeout(timer);
      const calls = held!;
      flushed = true;
      // Put the originals back unless a later middleware (compression) wrapped ours: its wrapper
      // still calls through them, which now pass straight on.
      if (response.write === writeAfterTasks) response.write = write;
      if (response.end === endAfterTasks) response.end = end;
      for (const call of calls) call.send.apply(response, call.args);
    });
  };
  let flushed = false;
  const writeAfterTasks = function writeAfterTasks(this: unknown, ...args: unknown[]) {
    if (flushed) return (write as (...a: unknown[]) => boolean).apply(response, args);
    hold(write as (...a: unknown[]) => unknown, args);
    return true;
  } as ServerResponse['write'];
  const endAfterTasks = function endAfterTasks(this: unknown, ...args: unknown[]) {
    if (flushed) return (end as (...a: unknown[]) => ServerResponse).apply(response, args);
    hold(end as (...a: unknown[]) => unknown, args);
    return response;
  } as ServerResponse['end'];
  response.write = writeAfterTasks;
  response.end = endAfterTasks;
}
