/**
 * The acquire loop: waits until a cost is admitted (Guava `acquire`), or gives up once waiting
 * longer would pass `maxWait` (Guava `tryAcquire(timeout)`). Waiters on one key in this process
 * stand in one line (AcquireLines): only the first asks the store, so they are served in the
 * order they came, and a bounded line refuses newcomers at once.
 */
import type { Decision } from './decision.js';
import { durationMicros } from './duration.js';
import { describeValue, RateLimitArgumentError } from './errors.js';
import { ownValue } from './options.js';
import { ACQUIRE_OPTIONS, type AcquireOptions, readCost } from './rate-limiter-options.js';

/**
 * One attempt at admission: `slack` is what is left of the budget as the store's reserve slack
 * (whole µs; see `RateLimiter.acquire`).
 */
export type AdmissionAttempt = (cost: number, slack: number) => Promise<Decision>;

/** A read of the key (cost `cost`, nothing written), for the answers given without a turn. */
export type AdmissionRead = (cost: number) => Promise<Decision>;

/** One waiter's place in its key's line. */
interface Place {
  /** Resolves when this waiter is first in line. */
  readonly turn: Promise<void>;
  startTurn(): void;
}

/** One key's line: its waiters in order, and the latest denial the first of them received. */
interface Line {
  readonly waiters: Place[];
  lastDenial: Decision | undefined;
}

/**
 * The `acquire` waiters of one limiter, per key, in this process: first come, first served, at
 * most `maxQueueSize` per key. A key's line exists only while someone waits on it.
 */
export class AcquireLines {
  private readonly lines = new Map<string, Line>();

  constructor(private readonly maxQueueSize: number) {}

  /**
   * Waits for `key`'s admission in its line: refused at once with reason 'queue-full'
   * when the line is full; otherwise the first attempt waits for the waiters ahead to finish
   * (admitted, given up or failed). A waiter whose `maxWait` passes while others are ahead
   * resolves with the latest denial of the line's first waiter (or, if there is none, a read
   * of the key), as denied.
   */
  async wait(
    key: string,
    options: AcquireOptions | undefined,
    attempt: AdmissionAttempt,
    read: AdmissionRead,
  ): Promise<Decision> {
    const { cost, budget } = readAcquireOptions(options);
    let line = this.lines.get(key);
    if (line === undefined) {
      line = { waiters: [], lastDenial: undefined };
      this.lines.set(key, line);
    }
    if (line.waiters.length >= this.maxQueueSize) {
      return { ...(await read(cost)), allowed: false, reason: 'queue-full' };
    }
    const place = newPlace();
    line.waiters.push(place);
    if (line.waiters.length === 1) place.startTurn();
    const started = performance.now();
    try {
      if (!(await turnWithin(place.turn, budget))) {
        const denial = line.lastDenial ?? (await read(cost));
        return { ...denial, allowed: false };
      }
      const current = line;
      return await admissionLoop(cost, budget - (performance.now() - started), attempt, (d) => {
        current.lastDenial = d;
        // Admitted: the next waiter may ask the store while this one sleeps its delay.
        if (d.allowed) this.leave(key, current, place);
      });
    } finally {
      this.leave(key, line, place);
    }
  }

  private leave(key: string, line: Line, place: Place): void {
    const at = line.waiters.indexOf(place);
    if (at < 0) return;
    line.waiters.splice(at, 1);
    if (at === 0) {
      line.lastDenial = undefined;
      line.waiters[0]?.startTurn();
    }
    if (line.waiters.length === 0 && this.lines.get(key) === line) this.lines.delete(key);
  }
}

function newPlace(): Place {
  let startTurn!: () => void;
  const turn = new Promise<void>((resolve) => {
    startTurn = resolve;
  });
  return { turn, startTurn };
}

/** Whether `turn` came within `budgetMs`. */
function turnWithin(turn: Promise<void>, budgetMs: number): Promise<boolean> {
  if (budgetMs === Number.POSITIVE_INFINITY) return turn.then(() => true);
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(false), Math.ceil(budgetMs));
  });
  return Promise.race([turn.then(() => true), late]).finally(() => clearTimeout(timer));
}

/** A call's cost and its `maxWait` in ms (Infinity without one). */
function readAcquireOptions(options: AcquireOptions | undefined): {
  cost: number;
  budget: number;
} {
  const cost = readCost(options, ACQUIRE_OPTIONS);
  const maxWait = options === undefined ? undefined : ownValue(options, 'maxWait');
  let budget = Number.POSITIVE_INFINITY;
  if (maxWait !== undefined) {
    const micros = durationMicros(maxWait, true);
    if (typeof micros === 'string') {
      throw new RateLimitArgumentError(
        'maxWait',
        maxWait,
        `maxWait must be ${micros}, got ${describeValue(maxWait)}`,
      );
    }
    budget = micros / 1000;
  }
  return { cost, budget };
}

/**
 * Calls `attempt` until it admits, and resolves with the admitting decision after sleeping its
 * `delay`; resolves with a denial once waiting for its `retryAfter` would pass `budget` ms, or
 * when the cost can never be admitted (retryAfter −1). `seen` hears every decision.
 */
async function admissionLoop(
  cost: number,
  budget: number,
  attempt: AdmissionAttempt,
  seen: (decision: Decision) => void,
): Promise<Decision> {
  const started = performance.now();
  for (;;) {
    const waited = performance.now() - started;
    const decision = await attempt(cost, reserveSlack(budget - waited));
    seen(decision);
    if (decision.allowed) {
      if (decision.delay > 0) await sleep(decision.delay);
      return decision;
    }
    // A block is not waited out: it is a decision about the key, not a rate.
    if (decision.retryAfter < 0 || decision.reason === 'blocked') return decision;
    if (performance.now() - started + decision.retryAfter > budget) return decision;
    await sleep(decision.retryAfter);
  }
}

/** What is left of acquire's budget (ms) as the store's reserve slack: whole µs, rounded down. */
function reserveSlack(leftMs: number): number {
  if (leftMs === Number.POSITIVE_INFINITY) return Number.MAX_SAFE_INTEGER;
  return Math.max(0, Math.floor(leftMs * 1000));
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, Math.ceil(ms)));
}
