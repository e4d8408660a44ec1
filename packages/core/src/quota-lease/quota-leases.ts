/**
 * Quota leases in this process (docs/algorithms.md#quota-leases): a key's decisions answered
 * from a block of its units, taken from the store in one atomic call (a lease take, Lua mode
 * '9') and spent here with no store call. One take in flight per key: callers that find the
 * block short wait for it. A block is spent only while it is valid (until the window it was
 * charged in ends, and at most `ttl`), so units never outlive what charged them; unused units
 * are given back (a refund) where a refund cannot land in a later window than the charge.
 */
import type { Decision } from '../decision.js';
import { SpaceSaving } from '../hot-keys/space-saving.js';
import type { Policy } from '../policy.js';
import type { LeaseTaken } from '../stores/lease-take.js';
import type { LeaseConfig } from './lease-options.js';

/** What a limiter gives its leases: guarded store calls and its clock. */
export interface LeaseSeam {
  /** The store's lease take under the limiter's guard, or the failure policy's answer. */
  take(key: string, want: number): Promise<{ taken: LeaseTaken } | { failed: Decision }>;
  /** Gives `units` back to `key` (a refund under the guard); a failure leaves them charged. */
  giveBack(key: string, units: number): Promise<void>;
  /** A plain store decision (what the limiter answers without leases). */
  plain(key: string, cost: number): Promise<Decision>;
  /** The take's answer as a Decision. */
  decision(taken: LeaseTaken): Decision;
  /** The store's time, µs (its injected clock, else this process's). */
  now(): number;
}

/** A key's block and what adapts its size. */
interface Held {
  /** Units left to spend. */
  left: number;
  /** Units the block was granted. */
  granted: number;
  /** When the take was sent (µs): validity counts from here, never from the answer. */
  takenAt: number;
  /** Spent only before this (µs). */
  expiresAt: number;
  /** Units the next take asks for. */
  size: number;
  /** Units of the calls waiting for the take in flight. */
  waiting: number;
  /** The take in flight: resolves with a denial for its waiters, or undefined (a block). */
  flight: Promise<Decision | undefined> | undefined;
  /** The take's decision, what local decisions are made from. */
  base: Decision | undefined;
}

/** Blocks are checked for expiry this often at most (ms); the timer is unref'd. */
const SWEEP_MS = 250;

/** Whether `p`'s units, given back later, can land in a later window than they were charged in. */
function refundCrossesWindows(p: Policy): boolean {
  return p.kind === 'fixed-window';
}

/**
 * The leased blocks of one limiter. `consume` answers from a block, or undefined when the call
 * is not leased (the limiter decides it as usual).
 */
export class QuotaLeases {
  private readonly held = new Map<string, Held>();
  private readonly sketch: SpaceSaving | undefined;
  /** A block may be given back before it expires (no fixedWindow policy). */
  private readonly refundable: boolean;
  /** Expired blocks are given back too (only bucket policies: no window ends them). */
  private readonly refundOnExpiry: boolean;
  private sweeper: NodeJS.Timeout | undefined;
  private closed = false;

  constructor(
    private readonly config: LeaseConfig,
    private readonly policies: readonly Policy[],
    private readonly seam: LeaseSeam,
  ) {
    this.sketch = config.hotOnly ? new SpaceSaving({ now: () => seam.now() / 1000 }) : undefined;
    this.refundable = !policies.some(refundCrossesWindows);
    this.refundOnExpiry = policies.every((p) => p.kind === 'token-bucket' || p.kind === 'gcra');
  }

  /** Answers `consume(key, { cost })` from the key's block, or undefined: not leased. */
  consume(key: string, cost: number): Promise<Decision> | undefined {
    if (cost === 0 || cost > this.config.max || this.closed) return undefined;
    let h = this.held.get(key);
    if (h === undefined) {
      if (this.sketch !== undefined && !this.sketch.observe(key)) return undefined;
      h = {
        left: 0,
        granted: 0,
        takenAt: 0,
        expiresAt: 0,
        size: this.config.min,
        waiting: 0,
        flight: undefined,
        base: undefined,
      };
      this.held.set(key, h);
      this.startSweeper();
    } else if (this.sketch !== undefined) {
      this.sketch.observe(key);
    }
    if (h.flight === undefined) {
      const now = this.seam.now();
      if (h.left >= cost && now < h.expiresAt) return Promise.resolve(this.spend(h, cost, now));
    }
    return this.wait(key, h, cost);
  }

  /**
   * Waits for the key's take in flight (starting one if none), then spends from its block. A
   * block the waiters before this one spent leads to the next take, which asks for at least
   * what is still waiting; each take either grants units that a waiter spends or answers every
   * waiter with its denial, so this ends. A grant smaller than the cost (little room left)
   * leaves the cost to the store, decided plainly (taking and giving back would loop).
   */
  private wait(key: string, h: Held, cost: number): Promise<Decision> {
    h.waiting += cost;
    if (h.flight === undefined) h.flight = this.takeBlock(key, h, cost);
    return h.flight.then((denial) => {
      h.waiting -= cost;
      if (denial !== undefined) return denial;
      const now = this.seam.now();
      if (h.flight === undefined && h.left >= cost && now < h.expiresAt) {
        return this.spend(h, cost, now);
      }
      if (h.flight === undefined && cost > h.granted) return this.seam.plain(key, cost);
      return this.wait(key, h, cost);
    });
  }

  private spend(h: Held, cost: number, now: number): Decision {
    h.left -= cost;
    const base = h.base!;
    const elapsed = (now - h.takenAt) / 1000;
    return {
      ...base,
      remaining: base.remaining + h.left,
      resetAfter: Math.max(0, base.resetAfter - elapsed),
    };
  }

  private async takeBlock(key: string, h: Held, cost: number): Promise<Decision | undefined> {
    try {
      this.retire(key, h, this.seam.now());
      const takenAt = this.seam.now();
      // What waits on this take, when more than a block's size (RLQS: demand sizes the grant).
      const want = Math.min(this.config.max, Math.max(h.size, cost, h.waiting));
      const answer = await this.seam.take(key, want);
      if ('failed' in answer) return answer.failed;
      const taken = answer.taken;
      if (taken.granted === 0) return this.seam.decision(taken);
      h.left = h.granted = taken.granted;
      h.takenAt = takenAt;
      h.expiresAt = takenAt + Math.min(this.config.ttl, this.validity(taken));
      h.base = this.seam.decision(taken);
      return undefined;
    } finally {
      h.flight = undefined;
    }
  }

  /**
   * How long the units just charged may be spent (µs from the take): until the window they were
   * charged in ends (fixedWindow: its window; slidingWindow: its current sub-window, since a
   * unit charged in one sub-window and spent in the next would count in windows that did not
   * charge it); bucket policies bound nothing (ttl does).
   */
  private validity(taken: LeaseTaken): number {
    let validity = Number.POSITIVE_INFINITY;
    this.policies.forEach((p, i) => {
      const reset = taken.results[i]!.resetAfter;
      if (p.kind === 'fixed-window') validity = Math.min(validity, reset);
      if (p.kind === 'sliding-window') {
        const [, size, buckets] = p.params as readonly [number, number, number];
        validity = Math.min(validity, reset - (buckets - 1) * size);
      }
    });
    return validity;
  }

  /**
   * Ends the key's block before a new take: its size adapts (doubled when spent within a
   * quarter of the ttl, halved when it expired half unused) and what is left is given back
   * while it is still valid.
   */
  private retire(key: string, h: Held, now: number): void {
    if (h.granted > 0) {
      const { min, max, ttl } = this.config;
      if (now < h.expiresAt && now - h.takenAt < ttl / 4) h.size = Math.min(max, h.size * 2);
      else if (now >= h.expiresAt && h.left * 2 > h.granted) {
        h.size = Math.max(min, Math.floor(h.size / 2));
      }
      const valid = now < h.expiresAt ? this.refundable : this.refundOnExpiry;
      if (h.left > 0 && valid) void this.seam.giveBack(key, h.left);
    }
    h.left = 0;
    h.granted = 0;
  }

  /** Gives back every block's units that may be (see `retire`) and stops leasing. */
  async close(): Promise<void> {
    this.closed = true;
    if (this.sweeper !== undefined) clearInterval(this.sweeper);
    this.sweeper = undefined;
    const back: Promise<void>[] = [];
    for (const [key, h] of this.held) {
      await h.flight;
      const now = this.seam.now();
      const valid = now < h.expiresAt ? this.refundable : this.refundOnExpiry;
      if (h.left > 0 && valid) back.push(this.seam.giveBack(key, h.left));
      h.left = 0;
    }
    this.held.clear();
    await Promise.all(back);
  }

  /** Expired blocks: given back where that is safe (`retire`); keys idle for a ttl dropped. */
  private sweep(): void {
    const now = this.seam.now();
    for (const [key, h] of this.held) {
      if (h.flight !== undefined || now < h.expiresAt) continue;
      if (h.granted > 0) this.retire(key, h, now);
      else if (now - h.expiresAt >= this.config.ttl) this.held.delete(key);
    }
    if (this.held.size === 0 && this.sweeper !== undefined) {
      clearInterval(this.sweeper);
      this.sweeper = undefined;
    }
  }

  private startSweeper(): void {
    if (this.sweeper !== undefined) return;
    this.sweeper = setInterval(() => this.sweep(), SWEEP_MS);
    this.sweeper.unref();
  }

  /** Keys holding a block or a take in flight (for tests and metrics). */
  get size(): number {
    return this.held.size;
  }
}
