/**
 * A limiter's override for every key on Redis (live-global.ts): one record per limiter at its
 * own key (its own slot on a cluster), which this process holds and sends with each decision.
 * A change is announced on a channel of the same name over a second connection (ioredis and
 * node-redis: `duplicate()`; a client that cannot subscribe, valkey-glide among them, polls
 * only), and the record is read every GLOBAL_POLL_MS as well, so a lost message, a dropped
 * subscriber or a process that was down still converge within GLOBAL_BOUND_MS.
 */
import {
  GLOBAL_POLL_MS,
  type GlobalLimits,
  type GlobalReader,
  globalRecordMs,
  globalSpec,
} from '../live-global.js';
import type { LimitChange } from '../live-limits.js';
import type { Policy } from '../policy.js';
import type { ScriptClient } from './script-client.js';

// biome-ignore lint/suspicious/noExplicitAny: the clients' listener types differ
type Listener = (...args: any[]) => void;
interface Subscribable {
  duplicate(): Subscribable;
  on(event: string, listener: Listener): unknown;
  subscribe(channel: string, listener?: Listener): Promise<unknown>;
  connect?(): Promise<unknown>;
  defineCommand?: unknown;
  disconnect?(): unknown;
  quit?(): Promise<unknown>;
  destroy?(): unknown;
  once?(event: string, listener: Listener): unknown;
}

/**
 * One store connection's side of the records: a single subscriber connection for every limiter
 * on it, made on first use, and the end of the watches when the user's client closes (nothing
 * of ours keeps a process alive).
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

  private subscriber: Subscribable | undefined;
  private subscribing: Promise<Subscribable | undefined> | undefined;
  private readonly listeners = new Map<string, Map<GlobalWatch, (spec: string) => void>>();
  private readonly watches = new Set<GlobalWatch>();
  private ended = false;

  private constructor(private readonly connection: object) {
    (connection as Subscribable).once?.('end', () => this.end());
  }

  /** Registers a watch; its channel is subscribed to when the client can subscribe. */
  add(watch: GlobalWatch, key: string, onMessage: (spec: string) => void): void {
    if (this.ended) {
      watch.close();
      return;
    }
    this.watches.add(watch);
    const known = this.listeners.get(key);
    if (known) {
      known.set(watch, onMessage);
      return;
    }
    this.listeners.set(key, new Map([[watch, onMessage]]));
    const deliver = (spec: string) => {
      for (const listener of this.listeners.get(key)?.values() ?? []) listener(spec);
    };
    void this.connect()
      .then((sub) => {
        if (sub === undefined) return;
        // ioredis delivers messages as events (see open()); node-redis to a listener.
        return typeof sub.defineCommand === 'function'
          ? sub.subscribe(key)
          : sub.subscribe(key, deliver);
      })
      .catch(() => undefined);
  }

  /** Forgets a watch (an idle limiter's): it is added again when its limiter is used. */
  remove(watch: GlobalWatch, key: string): void {
    this.watches.delete(watch);
    this.listeners.get(key)?.delete(watch);
  }

  /** Closes every watch and the subscriber connection. */
  end(): void {
    this.ended = true;
    for (const watch of this.watches) watch.close();
    this.watches.clear();
    const sub = this.subscriber;
    this.subscriber = undefined;
    if (sub) void Promise.resolve(sub.disconnect?.() ?? sub.destroy?.()).catch(() => undefined);
  }

  /** A second connection (ioredis and node-redis: `duplicate()`), or undefined when none. */
  private connect(): Promise<Subscribable | undefined> {
    this.subscribing ??= this.open();
    return this.subscribing;
  }

  private async open(): Promise<Subscribable | undefined> {
    const conn = this.connection as Subscribable;
    if (typeof conn.duplicate !== 'function' || typeof conn.subscribe !== 'function') return;
    const sub = conn.duplicate();
    this.subscriber = sub;
    sub.on('error', () => undefined);
    if (typeof conn.defineCommand === 'function') {
      // ioredis: messages come as events, and it subscribes again after a reconnect.
      sub.on('message', (channel, spec) => {
        if (typeof spec !== 'string') return;
        for (const listener of this.listeners.get(String(channel))?.values() ?? []) listener(spec);
      });
    } else {
      await sub.connect?.();
    }
    if (this.ended) {
      this.end();
      return undefined;
    }
    return sub;
  }
}

const CHANNELS = new WeakMap<object, GlobalChannel>();

/** Polls (of GLOBAL_POLL_MS) without a call after which a watch pauses: a minute. */
const IDLE_POLLS = 120;

/** Holds one limiter's global record, kept current by pub/sub and a poll. */
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
  /** Bumped by every message, so a poll sent before one cannot undo it. */
  private heard = 0;
  private closed = false;

  constructor(
    private readonly client: ScriptClient,
    private readonly channel: GlobalChannel,
    private readonly key: string,
    private readonly reader: GlobalReader,
    private readonly onChange: (global: GlobalLimits | undefined) => void,
    /** The store's injected clock (µs), if any: the scripts' `now` then. */
    private readonly clock: (() => number) | undefined,
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

  /** Writes a change of every key (an empty one clears it), announces it and holds it. */
  async change(policies: readonly Policy[], change: LimitChange): Promise<void> {
    await this.ready();
    const now = await this.now();
    const previous = this.reader.readMaybe(await this.get());
    const spec = globalSpec(policies, change, now, previous);
    const global = this.reader.read(spec);
    const ms = globalRecordMs(global, now);
    const set = ['SET', this.key, spec, ...(ms === undefined ? [] : ['PX', String(ms)])];
    await this.client.command(this.key, set);
    await this.client.command(this.key, ['PUBLISH', this.key, spec]);
    this.hold(global);
  }

  /** Stops the poll (the channel stops listening when its client closes). */
  close(): void {
    this.closed = true;
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }

  private async start(): Promise<void> {
    if (!this.closed) {
      this.timer = setInterval(() => void this.tick(), GLOBAL_POLL_MS);
      this.timer.unref?.();
      this.channel.add(this, this.key, (spec) => {
        let global: GlobalLimits;
        try {
          global = this.reader.read(spec);
        } catch {
          return; // Not a record (a message of another kind on the channel): the poll reads it.
        }
        this.heard++;
        this.hold(global);
      });
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
      this.channel.remove(this, this.key);
      this.loaded = false;
      this.first = undefined;
      this.idlePolls = 0;
      return undefined;
    }
    return this.poll();
  }

  private async poll(): Promise<void> {
    const heard = this.heard;
    let global: GlobalLimits | undefined;
    try {
      global = this.reader.readMaybe(await this.get());
    } catch {
      // A failed read, or a reply that is not a record: the next poll tries again; decisions
      // meanwhile run on the record held. A poll runs on a timer, so nothing may escape it.
      return;
    }
    if (heard === this.heard) this.hold(global);
  }

  /** The record's text, or null for none; a reply of any other shape throws. */
  private async get(): Promise<string | null> {
    const value = await this.client.command(this.key, ['GET', this.key]);
    if (value === null || value === undefined) return null;
    if (typeof value === 'string') return value;
    if (Buffer.isBuffer(value)) return value.toString('utf8');
    throw new TypeError(
      `unexpected reply to GET ${this.key}: ${Object.prototype.toString.call(value)}`,
    );
  }

  private hold(global: GlobalLimits | undefined): void {
    if (global?.spec === this.current?.spec) return;
    // Versions are the store's time of each change: an older record never replaces a newer one.
    if (global && this.current && BigInt(global.version) < BigInt(this.current.version)) return;
    this.current = global;
    this.onChange(global);
  }
}
