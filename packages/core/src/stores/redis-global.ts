/**
 * A limiter's override for every key on Redis (live-global.ts): one record per limiter at its
 * own key (its own slot on a cluster), which this process holds and sends with each decision.
 * Every process reads the record every GLOBAL_POLL_MS (and before its first decision), so a
 * change, a process that was down or a dropped connection converge within GLOBAL_BOUND_MS.
 */

import { RateLimitStoreError } from '../errors.js';
import {
  GLOBAL_POLL_MS,
  type GlobalLimits,
  type GlobalReader,
  globalActive,
  globalRecordMs,
  globalSpec,
} from '../live-global.js';
import type { LimitChange } from '../live-limits.js';
import type { Policy } from '../policy.js';
import { isNoScript } from './redis-errors.js';
import type { ScriptClient } from './script-client.js';
import { globalChangeScript } from './scripts.js';
import { NOT_RUN_REPLY, notRunError, SendTicket } from './send-ticket.js';

/** What the records need of the user's connection: its 'end' event, where the client has one. */
interface Closable {
  once?(event: string, listener: () => void): unknown;
}

/**
 * One store connection's side of the records: the watches of every limiter on it, ended when the
 * user's client closes (nothing of ours keeps a process alive). A change is not announced on a
 * channel: every process reads the record every GLOBAL_POLL_MS, which alone keeps the bound. No
 * subscriber connection is opened: with ioredis a subscriber closing with the user's client can
 * reject a command where no caller can catch it, an unhandled rejection that ends a process
 * under Node's default settings.
 */
export class GlobalChannel {
  /** One per connection object, whatever the number of stores made on it. */
  static of(connection: object): GlobalChannel {
    let channel = CHANNELS.get(connection);
    if (channel === undefined || channel.ended) {
      channel = new GlobalChannel(connection);
      CHANNELS.set(connection, channel);
    }
    return channel;
  }

  private readonly watches = new Set<GlobalWatch>();
  private ended = false;

  private constructor(connection: object) {
    (connection as Closable).once?.('end', () => this.end());
  }

  /** Registers a watch, closed when the client closes. */
  add(watch: GlobalWatch): void {
    if (this.ended) {
      watch.close();
      return;
    }
    this.watches.add(watch);
  }

  /** Forgets a watch (an idle limiter's): it is added again when its limiter is used. */
  remove(watch: GlobalWatch): void {
    this.watches.delete(watch);
  }

  /** Closes every watch. */
  end(): void {
    this.ended = true;
    for (const watch of this.watches) watch.close();
    this.watches.clear();
  }
}

const CHANNELS = new WeakMap<object, GlobalChannel>();

/**
 * How many times a change of every key is made again on a record another process replaced
 * meanwhile before it fails: each failed attempt means another change landed, so only as many
 * changes at once as this would exhaust it.
 */
export const GLOBAL_CHANGE_ATTEMPTS = 16;

/** A record as Redis answered it (a string or a Buffer); a reply of any other shape throws. */
function recordText(value: unknown, key: string): string {
  if (typeof value === 'string') return value;
  if (Buffer.isBuffer(value)) return value.toString('utf8');
  throw new TypeError(`unexpected record at ${key}: ${Object.prototype.toString.call(value)}`);
}

/** Polls (of GLOBAL_POLL_MS) without a call after which a watch pauses: a minute. */
const IDLE_POLLS = 120;

/** Holds one limiter's global record, kept current by a poll. */
export class GlobalWatch {
  /** The record as last read (undefined: none). */
  current: GlobalLimits | undefined;
  private first: Promise<void> | undefined;
  private loaded = false;
  private timer: ReturnType<typeof setInterval> | undefined;
  /** Calls made through this watch, and as the last poll saw them: an idle watch pauses. */
  private used = 0;
  private usedAtPoll = 0;
  private idlePolls = 0;
  private closed = false;

  constructor(
    private readonly client: ScriptClient,
    private readonly channel: GlobalChannel,
    private readonly key: string,
    private readonly reader: GlobalReader,
    private readonly onChange: (global: GlobalLimits | undefined) => void,
    /** The store's injected clock (µs), if any: the scripts' `now` then. */
    private readonly clock: (() => number) | undefined,
    /** Added to the record's PX (ms): Redis expires it on its own clock, not the injected one. */
    private readonly ttlSlackMs = 0,
  ) {}

  /** The time the scripts decide at (µs): Redis TIME, or the injected clock. */
  private async now(): Promise<number> {
    if (this.clock) return this.clock();
    const [s, us] = (await this.client.command(this.key, ['TIME'])) as [string, string];
    return Number(s) * 1_000_000 + Number(us);
  }

  /** undefined once the record was read; else the first read (started on first use). */
  ready(): Promise<void> | undefined {
    this.used++;
    if (this.loaded) return undefined;
    if (this.first === undefined) this.first = this.start();
    return this.first;
  }

  /** The record held, while in force (none once cleared or lapsed, at the scripts' time). */
  async inForce(): Promise<GlobalLimits | undefined> {
    await this.ready();
    const held = this.current;
    // Only a record with a ttl needs the time.
    const now = held && held.expiresAt > 0 ? await this.now() : 0;
    return globalActive(held, now) ? held : undefined;
  }

  /**
   * Writes a change of every key (an empty one clears it), and holds it. The write is a
   * compare-and-set (lua/global/change.lua): when another process replaced the record since it
   * was read, the change is made again on the record found, up to GLOBAL_CHANGE_ATTEMPTS times.
   * So concurrent changes all land, one after the other, and each version is above the last.
   */
  async change(policies: readonly Policy[], change: LimitChange): Promise<void> {
    await this.ready();
    const now = await this.now();
    let found = await this.get();
    for (let attempt = 1; attempt <= GLOBAL_CHANGE_ATTEMPTS; attempt++) {
      const spec = globalSpec(policies, change, now, this.reader.readMaybe(found));
      const global = this.reader.read(spec);
      const ms = globalRecordMs(global, now);
      const px = ms === undefined ? '' : String(ms + this.ttlSlackMs);
      const written = await this.compareAndSet(found, spec, px);
      if (written === true) {
        this.hold(global);
        return;
      }
      found = written;
    }
    throw new RateLimitStoreError(
      `${this.client.description}: the live limits for every key (${this.key}) were changed by others ${GLOBAL_CHANGE_ATTEMPTS} times while this change was made; it was not written`,
    );
  }

  /** Writes `spec` if the record is still `expected`: true, else the record found. */
  private async compareAndSet(
    expected: string | null,
    spec: string,
    px: string,
  ): Promise<true | string | null> {
    const script = globalChangeScript();
    const keys = [this.key];
    const args = [expected ?? '', spec, px];
    const reply = await this.client
      .evalsha(script.sha1, keys, args, new SendTicket())
      .catch((error: unknown) => {
        if (!isNoScript(error)) throw error;
        return this.client.eval(script.source, keys, args, new SendTicket());
      });
    if (Array.isArray(reply) && Number(reply[0]) === 1) return true;
    if (Array.isArray(reply) && Number(reply[0]) === 0) {
      const found = recordText(reply[1], this.key);
      return found === '' ? null : found;
    }
    if (reply === NOT_RUN_REPLY) throw notRunError();
    throw new TypeError(`unexpected reply to ${script.name} on ${this.key}: ${String(reply)}`);
  }

  /** Deletes the record (resetAll) and holds none: how many keys went (0 or 1). */
  async remove(): Promise<number> {
    const removed = Number(await this.client.command(this.key, ['UNLINK', this.key]));
    this.hold(undefined);
    return removed;
  }

  /** Stops the poll. */
  close(): void {
    this.closed = true;
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }

  private async start(): Promise<void> {
    if (!this.closed) {
      this.timer = setInterval(() => void this.tick(), GLOBAL_POLL_MS);
      this.timer.unref?.();
      this.channel.add(this);
    }
    try {
      await this.poll();
    } finally {
      this.loaded = true;
    }
  }

  /**
   * A poll, unless the limiter went unused for IDLE_POLLS of them: then the watch pauses (no
   * timer, not on the channel, so a dropped limiter is not kept alive) and its next call reads
   * the record again before deciding.
   */
  private tick(): Promise<void> | undefined {
    if (this.used !== this.usedAtPoll) {
      this.usedAtPoll = this.used;
      this.idlePolls = 0;
    } else if (++this.idlePolls >= IDLE_POLLS) {
      clearInterval(this.timer);
      this.timer = undefined;
      this.channel.remove(this);
      this.loaded = false;
      this.first = undefined;
      this.idlePolls = 0;
      return undefined;
    }
    return this.poll();
  }

  private async poll(): Promise<void> {
    let global: GlobalLimits | undefined;
    try {
      global = this.reader.readMaybe(await this.get());
    } catch {
      // A failed read, or a reply that is not a record: the next poll tries again; decisions
      // meanwhile run on the record held. A poll runs on a timer, so nothing may escape it.
      return;
    }
    this.hold(global);
  }

  /** The record's text, or null for none; a reply of any other shape throws. */
  private async get(): Promise<string | null> {
    const value = await this.client.command(this.key, ['GET', this.key]);
    return value === null || value === undefined ? null : recordText(value, this.key);
  }

  private hold(global: GlobalLimits | undefined): void {
    if (global?.spec === this.current?.spec) return;
    // Versions are the store's time of each change: an older record never replaces a newer one.
    if (global && this.current && BigInt(global.version) < BigInt(this.current.version)) return;
    this.current = global;
    this.onChange(global);
  }
}
