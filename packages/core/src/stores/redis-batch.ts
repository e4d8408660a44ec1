/**
 * Batching for the Redis store: calls issued while an earlier round trip to the same Redis node
 * (the same slot, on a cluster) is in flight wait for its reply, then go out together as one
 * EVALSHA of the script's batch variant (lua/include/batch.lua), which decides them in order
 * exactly as single calls would, with one Redis TIME for all. There is no timer: a queue is
 * sent at the end of the tick in which the last reply arrived (or in which the first call was
 * made, when nothing was in flight), so a lone call goes out in the tick it was made, as a
 * single call. Every call keeps its own promise: the limiter's timeout, circuit breaker and
 * failure policy apply per decision, and a call whose script fails in Redis fails alone.
 */
import type { GeneratedScript } from '../generated/scripts.js';
import {
  NOT_RUN_REPLY,
  notRunError,
  SendTicket,
  TICKET,
  type TicketedPromise,
} from './send-ticket.js';

/** Bounds of one batch. */
export interface BatchLimits {
  /** Calls per batch script. */
  readonly maxDecisions: number;
  /** Characters of keys and arguments per batch script (each call counted in full). */
  readonly maxBytes: number;
}

/**
 * 64 calls: past that a batch costs Redis a few percent less per decision but holds its event
 * loop longer (~1 ms for 64 gcra decisions); 64 KiB keeps a batch within one socket buffer.
 */
export const DEFAULT_BATCH_LIMITS: BatchLimits = Object.freeze({
  maxDecisions: 64,
  maxBytes: 64 * 1024,
});

/** How a call's reply is read, and how its failure is reported; made once per limiter. */
export interface Handlers {
  decode(reply: unknown): unknown;
  /**
   * Turns a failure into the store's answer: rejects with the store's error, or (a full Redis)
   * resolves with the decision a read could still give.
   */
  wrap(error: unknown, keys: readonly string[]): Promise<unknown>;
}

/** One call waiting for its batch: what a single EVALSHA would have sent, and its promise. */
interface Call {
  readonly script: GeneratedScript;
  readonly batchScript: GeneratedScript;
  readonly keys: readonly string[];
  readonly args: readonly string[];
  readonly size: number;
  readonly handlers: Handlers;
  /** Abandoned by the limiter's guard when its timeout answers this call. */
  readonly ticket: SendTicket;
  resolve(value: unknown): void;
  reject(error: unknown): void;
}

/** Runs one script (EVALSHA, with the NOSCRIPT fallback) and answers its raw reply. */
export type ScriptRunner = (
  script: GeneratedScript,
  keys: readonly string[],
  args: readonly string[],
  ticket: SendTicket,
) => Promise<unknown>;

/** The calls bound for one node (or one cluster slot) and its round trips in flight. */
class Channel {
  queue: Call[] = [];
  inFlight = 0;
  scheduled = false;
}

/** Shape numbers as strings ('1', '2', …), made once. */
const SHAPE_IDS: string[] = [];
function shapeId(n: number): string {
  let id = SHAPE_IDS[n];
  if (id === undefined) {
    id = String(n);
    SHAPE_IDS[n] = id;
  }
  return id;
}

export class Batcher {
  private readonly single = new Channel();
  private readonly slots = new Map<number, Channel>();

  constructor(
    private readonly run: ScriptRunner,
    private readonly limits: BatchLimits,
    /** A cluster routes by slot: calls are grouped per slot of their first key. */
    private readonly cluster: boolean,
  ) {}

  /** Queues one call; it resolves with its handlers' decoding of its own reply. */
  send(
    script: GeneratedScript,
    batchScript: GeneratedScript,
    keys: readonly string[],
    args: readonly string[],
    size: number,
    handlers: Handlers,
  ): Promise<unknown> {
    const channel = this.cluster ? this.slotChannel(keys[0] ?? '') : this.single;
    const ticket = new SendTicket();
    const pending: TicketedPromise<unknown> = new Promise((resolve, reject) => {
      channel.queue.push({
        script,
        batchScript,
        keys,
        args,
        size,
        handlers,
        ticket,
        resolve,
        reject,
      });
      if (channel.inFlight === 0) this.schedule(channel);
    });
    pending[TICKET] = ticket;
    return pending;
  }

  private slotChannel(key: string): Channel {
    const slot = keySlot(key);
    let channel = this.slots.get(slot);
    if (channel === undefined) {
      channel = new Channel();
      this.slots.set(slot, channel);
    }
    return channel;
  }

  private schedule(channel: Channel): void {
    if (channel.scheduled) return;
    channel.scheduled = true;
    // The end of this tick: after every promise reaction already queued has run, so the calls
    // they make (the next requests of the callers a reply just answered) join this batch.
    process.nextTick(() => this.flush(channel));
  }

  /**
   * Sends the queue: runs of one script, cut at the limits. A call alone on an idle channel goes
   * as a single call; otherwise every piece uses the batch script, even a piece of one. On
   * NOSCRIPT (SCRIPT FLUSH, restart, failover) every send of that script already in flight
   * fails the same way and is re-sent with EVAL in the order the errors arrive, so calls on a
   * key still run in the order they were made; a single script and its batch variant in flight
   * together could not promise that (one may be cached and the other not).
   */
  private flush(channel: Channel): void {
    channel.scheduled = false;
    // A call its caller stopped waiting for (the timeout answered it) is never sent.
    const queue = channel.queue.some(isAbandoned)
      ? channel.queue.filter((call) => !isAbandoned(call))
      : channel.queue;
    channel.queue = [];
    if (queue.length === 0) return;
    const done = (): void => this.answered(channel);
    if (queue.length === 1 && channel.inFlight === 0) {
      channel.inFlight++;
      this.sendOne(queue[0]!, done);
      return;
    }
    const { maxDecisions, maxBytes } = this.limits;
    let start = 0;
    while (start < queue.length) {
      const script = queue[start]!.script;
      let end = start + 1;
      let bytes = queue[start]!.size;
      while (end < queue.length && end - start < maxDecisions) {
        const next = queue[end]!;
        if (next.script !== script || bytes + next.size > maxBytes) break;
        bytes += next.size;
        end++;
      }
      channel.inFlight++;
      this.sendBatch(start === 0 && end === queue.length ? queue : queue.slice(start, end), done);
      start = end;
    }
  }

  private answered(channel: Channel): void {
    channel.inFlight--;
    if (channel.queue.length > 0) this.schedule(channel);
  }

  private sendOne(call: Call, done: () => void): void {
    settle(call, this.run(call.script, call.keys, call.args, call.ticket), done);
  }

  /**
   * One EVALSHA for `calls`: the distinct ARGV arrays once each (a limiter's cost-1 decisions on
   * Redis TIME share one constant array), then each call's shape number; KEYS in call order.
   */
  private sendBatch(calls: Call[], done: () => void): void {
    const shapes = new Map<readonly string[], string>();
    const head: string[] = [''];
    const entries: string[] = new Array(calls.length);
    const keys: string[] = [];
    for (let i = 0; i < calls.length; i++) {
      const call = calls[i]!;
      let id = shapes.get(call.args);
      if (id === undefined) {
        id = shapeId(shapes.size + 1);
        shapes.set(call.args, id);
        head.push(shapeId(call.keys.length), shapeId(call.args.length), ...call.args);
      }
      entries[i] = id;
      for (const key of call.keys) keys.push(key);
    }
    head[0] = shapeId(shapes.size);
    for (const id of entries) head.push(id);
    const ticket = new SendTicket();
    for (const call of calls) call.ticket.joinBatch(ticket);
    this.run(calls[0]!.batchScript, keys, head, ticket).then(
      (reply) => {
        done();
        if (reply === NOT_RUN_REPLY) {
          const error = notRunError();
          for (const call of calls) fail(call, error);
          return;
        }
        if (!Array.isArray(reply) || reply.length !== calls.length) {
          const error = new Error(`unexpected reply from a batch script: ${JSON.stringify(reply)}`);
          for (const call of calls) fail(call, error);
          return;
        }
        for (let i = 0; i < calls.length; i++) {
          const call = calls[i]!;
          const answer: unknown = reply[i];
          // The batch script answers a call's error as its message (lua/include/batch.lua).
          if (typeof answer === 'string') fail(call, new Error(answer));
          else resolveWith(call, answer);
        }
      },
      (error: unknown) => {
        done();
        for (const call of calls) fail(call, error);
      },
    );
  }
}

function isAbandoned(call: Call): boolean {
  return call.ticket.abandoned;
}

function settle(call: Call, reply: Promise<unknown>, done: () => void): void {
  reply.then(
    (answer) => {
      done();
      resolveWith(call, answer);
    },
    (error: unknown) => {
      done();
      fail(call, error);
    },
  );
}

function resolveWith(call: Call, reply: unknown): void {
  try {
    call.resolve(call.handlers.decode(reply));
  } catch (error) {
    call.reject(error);
  }
}

function fail(call: Call, error: unknown): void {
  call.handlers.wrap(error, call.keys).then(call.resolve, call.reject);
}

/** CRC16-CCITT (XModem), the checksum Redis Cluster maps keys to slots with. */
const CRC16_TABLE = (() => {
  const table = new Uint16Array(256);
  for (let i = 0; i < 256; i++) {
    let crc = i << 8;
    for (let bit = 0; bit < 8; bit++) crc = crc & 0x8000 ? (crc << 1) ^ 0x1021 : crc << 1;
    table[i] = crc & 0xffff;
  }
  return table;
})();

/** The Redis Cluster slot of `key` (its `{hash tag}` when it has a non-empty one). */
export function keySlot(key: string): number {
  const bytes = Buffer.from(key, 'utf8');
  let start = 0;
  let end = bytes.length;
  const open = bytes.indexOf(0x7b);
  if (open !== -1) {
    const close = bytes.indexOf(0x7d, open + 1);
    if (close > open + 1) {
      start = open + 1;
      end = close;
    }
  }
  let crc = 0;
  for (let i = start; i < end; i++) {
    crc = ((crc << 8) & 0xffff) ^ CRC16_TABLE[((crc >> 8) ^ bytes[i]!) & 0xff]!;
  }
  return crc & 16383;
}
