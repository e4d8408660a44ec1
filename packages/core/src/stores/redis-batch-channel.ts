/**
 * When the batcher (redis-batch.ts) sends: the state it keeps per Redis node (per slot, on a
 * cluster), how many round trips it lets be in flight, and when it cuts a queue in two.
 * docs/benchmarks.md ("Batching → When calls are sent") has the measurements behind each number.
 */

/**
 * Round trips a channel keeps in flight before later calls wait for a reply. With one, Node and
 * Redis take turns, each idle while the other reads and writes a batch; with two, each works
 * while the other does; a third lets Node write the next batch while Redis still holds two
 * (256 in flight: 1.12–1.27× the decisions/s of two for one-policy limiters; 16–64 in flight:
 * 0.99–1.06×, docs/benchmarks.md "Three round trips in flight"). Per-key order through NOSCRIPT
 * holds because nothing is sent while a re-send is in progress (`recovering`, Batcher.flush).
 */
export const MAX_IN_FLIGHT = 3;

/**
 * A queue at least this long, sent while nothing is in flight, may go in two halves: Redis
 * decides the first while the second is written, and the callers of the first are answered (and
 * make the next batch) while the second is decided. Below it a round trip's fixed cost (EVALSHA,
 * TIME, the syscalls) would outweigh the overlap.
 */
export const SPLIT_AT = 8;

/**
 * Calls that must be waiting before a second round trip goes beside the one in flight: fewer
 * wait for its reply, since each round trip costs Redis an EVALSHA and a TIME on top of its
 * decisions (with calls arriving one per tick, as HTTP requests do, batches of one beside a
 * batch cost redis-server 20 % more CPU per decision). Half of SPLIT_AT: a split's halves pass.
 */
export const SECOND_AT = SPLIT_AT / 2;

/**
 * Calls that, queued on an idle channel within one tick, go at once rather than at the end of
 * the tick: Redis decides them while Node makes the rest of the tick's calls, which follow as a
 * second round trip. Without it a reply's callers all went in one batch at the end of the tick
 * and Node and Redis took turns (at 16 in flight both were idle half the time on a quiet
 * machine, batched 0.83× `batch: false`); with it each reply's callers make the next batch
 * while the other is in Redis (docs/benchmarks.md, "When calls are sent").
 */
export const SEND_NOW_AT = SPLIT_AT;

/** Idle flushes a split waits at most after splits that did not overlap (1, 3, then 7). */
const MAX_SPLIT_WAIT = 7;

/** The calls bound for one node (or one cluster slot) and its round trips in flight. */
export class Channel<Call> {
  queue: Call[] = [];
  inFlight = 0;
  /** A single-call script is in flight: nothing else is sent beside it (see Batcher.flush). */
  single = false;
  /** Pieces re-sent with EVAL after NOSCRIPT and not yet answered: nothing is sent meanwhile. */
  recovering = 0;
  scheduled = false;
  /** A cluster master's channel (per-node batches), rather than one slot's or one server's. */
  perNode = false;
  /** Idle flushes to send whole before the next split, and what the next split sets it to. */
  private unsplit = 0;
  private splitWait = 0;

  /**
   * SEND_NOW_AT calls went at once this tick: the rest of the tick's calls go at its end
   * whatever their number (they are the other half of one wave of callers, not stragglers).
   */
  sentNow = false;

  /**
   * Whether the queue goes now, before the tick ends: SEND_NOW_AT calls on an idle channel (a
   * single call in flight counts in inFlight). Marks the tick so that its other calls follow.
   */
  takeNow(): boolean {
    if (this.inFlight > 0 || this.queue.length < SEND_NOW_AT) return false;
    this.sentNow = true;
    return true;
  }

  /**
   * One round trip's callbacks: `resend` as it is re-sent with EVAL after NOSCRIPT (the channel
   * then sends nothing until it is answered: Batcher.flush), `done` when it is answered, which
   * then calls `answered`.
   */
  roundTrip(answered: () => void): { done(): void; resend(): void } {
    let resent = false;
    return {
      done: () => {
        if (resent) this.recovering--;
        answered();
      },
      resend: () => {
        resent = true;
        this.recovering++;
      },
    };
  }

  /** Whether a call queued now may go at the end of this tick rather than wait for a reply. */
  get open(): boolean {
    if (this.single || this.recovering > 0 || this.inFlight >= MAX_IN_FLIGHT) return false;
    return this.inFlight === 0 || this.sentNow || this.queue.length >= SECOND_AT;
  }

  /**
   * Calls per piece for a flush of `length` calls, at most `maxDecisions`. A flush that finds a
   * round trip still in flight shows the halves overlap, so the next idle queue splits again at
   * once. A flush that finds the channel idle again shows both halves came back together: Node
   * got no CPU between them (a saturated machine), where a split only adds a round trip, so
   * splits then wait 1, 3, then 7 idle flushes.
   */
  pieceSize(length: number, maxDecisions: number): number {
    if (this.inFlight > 0) {
      this.unsplit = 0;
      this.splitWait = 0;
      return maxDecisions;
    }
    if (length < SPLIT_AT) return maxDecisions;
    if (this.unsplit > 0) {
      this.unsplit--;
      return maxDecisions;
    }
    this.splitWait = Math.min(2 * this.splitWait + 1, MAX_SPLIT_WAIT);
    this.unsplit = this.splitWait;
    return Math.min(maxDecisions, Math.ceil(length / 2));
  }
}
