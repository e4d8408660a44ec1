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
 * Runs `task` when `response.end(...)` is called, alongside every other task registered on that
 * response, and sends the end once all of them settled or RELEASE_WAIT_MAX_MS passed. `task`
 * should not reject (a rejection is ignored). Call it before the response can have ended.
 */
export function beforeEnd(response: ServerResponse, task: () => Promise<unknown>): void {
  const pending = gates.get(response);
  if (pending !== undefined) {
    pending.push(task);
    return;
  }
  const tasks = [task];
  gates.set(response, tasks);
  const end = response.end;
  response.end = function endAfterTasks(...args: unknown[]) {
    response.end = end;
    gates.delete(response);
    let timer: NodeJS.Timeout | undefined;
    const waited = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, RELEASE_WAIT_MAX_MS);
      timer.unref();
    });
    const settled = Promise.allSettled(tasks.map((run) => run()));
    void Promise.race([settled, waited]).then(() => {
      clearTimeout(timer);
      (end as (...a: unknown[]) => unknown).apply(response, args);
    });
    return response;
  } as ServerResponse['end'];
}
