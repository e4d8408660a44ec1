/**
 * Batching for the Redis store: calls bound for one Redis node (one slot, on a cluster; one
 * master with `batch: 'node'`, whose script checks each slot is still local first) go out
 * together as one EVALSHA of the script's batch variant (lua/include/batch.lua), which decides
 * them in order exactly as single calls would, with one Redis TIME for all. There is no timer:
 * a call is sent at the end of the tick it was made in (a lone call as the single-call script),
 * or at once when it is the 8th waiting on an idle node, unless a round trip is in flight (a
 * second goes once a few calls wait: redis-batch-channel.ts); then it waits for a reply and goes
 * with the calls made meanwhile. Every call keeps its own promise (timeout, breaker and failure
 * policy apply per decision), and a call whose script fails in Redis fails alone.
 */

import { keySlot } from './key-slot.js';
import { batchArguments, nodeBatchArguments } from './redis-batch-arguments.js';
import { Channel } from './redis-batch-channel.js';
import { splitBatchReply } from './redis-reply.js';
import { type GeneratedScript, withSourceLine } from './scripts.js';
import {
  NOT_RUN_REPLY,
  notRunError,
  SendTicket,
  TICKET,
  type TicketedPromise,
} from './send-ticket.js';

// Cluster routing reads the slot from here too (cluster-refresh.ts).
export { keySlot };

/** Bounds of one batch. */
export interface BatchLimits {
  /** Calls per batch script. */
  readonly maxDecisions: number;
  /** Characters of keys and arguments per batch script (each call counted in full). */
  readonly maxBytes: number;
  /**
   * On a cluster: a batch holds the calls bound for one master, whatever their slots (the per-node
   * batch script), rather than one slot's.
   */
  readonly perNode?: boolean;
}

/**
 * 128 calls: with two round trips in flight, 256 callers then make two batches, each decided
 * while the other is read and written (64 made four, and Redis ran dry whenever a queue waited
 * for the last of them); one holds Redis's event loop ~0.3–0.5 ms (2.3–3.8 µs per decision).
 * 64 KiB keeps a batch within one socket buffer.
 */
export const DEFAULT_BATCH_LIMITS: BatchLimits = Object.freeze({
  maxDecisions: 128,
  maxBytes: 64 * 1024,
});

/** How a call's reply is read, and how its failure is reported; made once per limiter. */
export interface Handlers {
  decode(reply: unknown): unknown;
  /**
   * The limiter's number of policies, when it is 2 or more and the call decides (not a reset or
   * a block): a batch script then answers its decision inline (lua/include/batch.lua), and
   * `decode` gets those elements as the array a single script would have answered.
   */
  readonly flat?: number | undefined;
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
  /** The cluster slot of its keys (-1 off a cluster): a per-node batch groups its calls by it. */
  readonly slot: number;
  /** Abandoned by the limiter's guard when its timeout answers this call. */
  readonly ticket: SendTicket;
  resolve(value: unknown): void;
  reject(error: unknown): void;
}

/**
 * Runs one script (EVALSHA, with the NOSCRIPT fallback) and answers its raw reply; `onResend`
 * is called as it re-sends with EVAL.
 */
export type ScriptRunner = (
  script: GeneratedScript,
  keys: readonly string[],
  args: readonly string[],
  ticket: SendTicket,
  onResend?: () => void,
) => Promise<unknown>;

/**
 * What batching per node needs of a cluster client: the master a key's slot maps to now, and the
 * per-node variant of a batch script.
 */
export interface PerNode {
  /** The master that serves this key's slot as the client knows it (undefined: not known yet). */
  nodeOf(key: string): string | undefined;
  nodeScript(batchScript: GeneratedScript): GeneratedScript;
}

/** A per-node batch call's reply prefix for a call it did not run (lua/include/batch.lua). */
export const REDIRECT_REPLY = 'FLOODGATE-REDIRECT ';

export class Batcher {
  private readonly single = new Channel<Call>();
  private readonly slots = new Map<number, Channel<Call>>();
  private readonly nodes = new Map<string, Channel<Call>>();

  constructor(
    private readonly run: ScriptRunner,
    private readonly limits: BatchLimits,
    /** A cluster routes by slot: calls are grouped per slot of their first key. */
    private readonly cluster: boolean,
    /** With `limits.perNode` on a cluster: calls are grouped per master instead. */
    private readonly perNode?: PerNode,
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
    const slot = this.cluster ? keySlot(keys[0] ?? '') : -1;
    const channel = this.cluster ? this.channelOf(slot, keys[0] ?? '') : this.single;
    const ticket = new SendTicket();
    const pending: TicketedPromise<unknown> = new Promise((resolve, reject) => {
      const call = {
        script,
        batchScript,
        keys,
        args,
        size,
        handlers,
        slot,
        ticket,
        resolve,
        reject,
      };
      channel.queue.push(call);
      // SEND_NOW_AT calls on an idle node go now, whole: Redis starts on them while Node makes
      // the rest of this tick's calls (which then go beside them, at the end of the tick).
      if (channel.takeNow()) this.drain(channel, false);
      else if (channel.open) this.schedule(channel);
    });
    pending[TICKET] = ticket;
    return pending;
  }

  /** A cluster call's channel: its master's with per-node batches (once the client knows it). */
  private channelOf(slot: number, key: string): Channel<Call> {
    const node = this.limits.perNode ? this.perNode?.nodeOf(key) : undefined;
    if (node === undefined) return this.slotChannel(slot);
    let channel = this.nodes.get(node);
    if (channel === undefined) {
      channel = new Channel<Call>();
      channel.perNode = true;
      this.nodes.set(node, channel);
    }
    return channel;
  }

  private slotChannel(slot: number): Channel<Call> {
    let channel = this.slots.get(slot);
    if (channel === undefined) {
      channel = new Channel<Call>();
      this.slots.set(slot, channel);
    }
    return channel;
  }

  private schedule(channel: Channel<Call>): void {
    if (channel.scheduled) return;
    channel.scheduled = true;
    // The end of this tick: after every promise reaction already queued has run, so the calls
    // they make (the next requests of the callers a reply just answered) join this batch.
    process.nextTick(() => this.flush(channel));
  }

  /**
   * Sends the queue in call order: runs of one script, cut at the limits (and maybe in halves,
   * see Channel.pieceSize). A lone call on an idle channel goes as the single-call script and
   * nothing is sent beside it; any other piece uses the batch script, since a single script and
   * its batch variant in flight together could run out of order (one cached, the other not).
   * On NOSCRIPT each piece is re-sent with EVAL as its error arrives, in order. A piece written
   * after one such EVAL but before an earlier piece's NOSCRIPT arrived could overtake it (the
   * script cached again by the EVAL, it runs first), so the channel sends nothing while a re-sent
   * piece is unanswered (`recovering`): every piece in flight was written before the first EVAL,
   * met NOSCRIPT too, and is re-sent in order before anything new goes.
   */
  private flush(channel: Channel<Call>): void {
    channel.scheduled = false;
    this.drain(channel, true);
    channel.sentNow = false;
  }

  /** Sends what the channel allows now; `split`: an idle queue may go in halves (pieceSize). */
  private drain(channel: Channel<Call>, split: boolean): void {
    if (!channel.open) return;
    // A call its caller stopped waiting for (the timeout answered it) is never sent.
    const queue = channel.queue.some(isAbandoned)
      ? channel.queue.filter((call) => !isAbandoned(call))
      : channel.queue;
    channel.queue = [];
    if (queue.length === 0) return;
    if (queue.length === 1 && channel.inFlight === 0) {
      channel.inFlight++;
      channel.single = true;
      this.sendOne(queue[0]!, () => {
        channel.single = false;
        this.answered(channel);
      });
      return;
    }
    const answered = (): void => this.answered(channel);
    const { maxBytes } = this.limits;
    const maxDecisions = split
      ? channel.pieceSize(queue.length, this.limits.maxDecisions)
      : this.limits.maxDecisions;
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
      const { done, resend } = channel.roundTrip(answered);
      const calls = start === 0 && end === queue.length ? queue : queue.slice(start, end);
      this.sendBatch(calls, done, resend, channel.perNode);
      start = end;
    }
  }

  private answered(channel: Channel<Call>): void {
    channel.inFlight--;
    if (channel.queue.length > 0 && channel.open) this.schedule(channel);
  }

  private sendOne(call: Call, done: () => void): void {
    settle(call, this.run(call.script, call.keys, call.args, call.ticket), done);
  }

  /**
   * Sends a per-node batch's calls that it did not run, each alone as its single script through
   * the cluster client (which follows MOVED, ASK and TRYAGAIN), one after another so that calls
   * on one key keep their order.
   */
  private resendAlone(calls: readonly Call[]): void {
    let at = 0;
    const next = (): void => {
      const call = calls[at++];
      if (call !== undefined) this.sendOne(call, next);
    };
    next();
  }

  /**
   * One EVALSHA for `calls`: the distinct ARGV arrays once each (a limiter's cost-1 decisions on
   * Redis TIME share one constant array), then each call's shape number, unless there is one
   * shape (then every call is of it: an ARGV element per call costs Redis ~1 000 instructions,
   * docs/benchmarks.md); KEYS in call order.
   */
  private sendBatch(sent: Call[], done: () => void, resend: () => void, perNode = false): void {
    // A per-node batch: its calls sorted by slot (a stable sort keeps each key's calls in order).
    let calls = perNode ? sortBySlot(sent) : sent;
    const keys: string[] = [];
    const head: string[] = [];
    const script = calls[0]!.batchScript;
    const fill = (some: readonly Call[]): void =>
      perNode ? nodeBatchArguments(some, keys, head) : batchArguments(some, keys, head);
    fill(calls);
    const ticket = new SendTicket();
    for (const call of calls) call.ticket.joinBatch(ticket);
    // Re-sent after NOSCRIPT: without the calls whose own timeout has passed meanwhile (they
    // must never run; the others still may). The arrays are rebuilt in place, as the runner
    // re-sends the ones it was given.
    const onResend = (): void => {
      if (calls.some(isAbandoned)) {
        for (const call of calls) if (isAbandoned(call)) fail(call, notRunError());
        calls = calls.filter((call) => !isAbandoned(call));
        if (calls.length > 0) fill(calls);
      }
      resend();
    };
    const batchScript = perNode && this.perNode ? this.perNode.nodeScript(script) : script;
    this.run(batchScript, keys, head, ticket, onResend).then(
      (reply) => {
        done();
        if (reply === NOT_RUN_REPLY) {
          const error = notRunError();
          for (const call of calls) fail(call, error);
          return;
        }
        const answers = Array.isArray(reply)
          ? splitBatchReply(
              reply,
              calls.map((call) => call.handlers.flat),
            )
          : undefined;
        if (answers === undefined) {
          // Not the reply itself: it can be long, and an error text inside it (OOM) would make
          // the failure read as that error (redis-memory.ts isOutOfMemory).
          const what = Array.isArray(reply) ? `${reply.length} elements` : typeof reply;
          const error = new Error(
            `unexpected reply from a batch script: ${what} for ${calls.length} calls`,
          );
          for (const call of calls) fail(call, error);
          return;
        }
        const redirected: Call[] = [];
        for (let i = 0; i < calls.length; i++) {
          const call = calls[i]!;
          const answer: unknown = answers[i];
          // The batch script answers a call's error as its message (lua/include/batch.lua), and
          // a per-node batch a call it did not run (its slot is not this node's now) with
          // REDIRECT_REPLY: that call goes alone through the cluster client, which follows the
          // redirection (resendAlone).
          if (typeof answer === 'string' && perNode && answer.startsWith(REDIRECT_REPLY))
            redirected.push(call);
          else if (typeof answer === 'string')
            fail(call, new Error(withSourceLine(batchScript, answer)));
          else resolveWith(call, answer);
        }
        if (redirected.length > 0) this.resendAlone(redirected);
      },
      (error: unknown) => {
        done();
        for (const call of calls) fail(call, error);
      },
    );
  }
}

/** `calls` in slot order; calls of one slot keep their order. */
function sortBySlot(calls: Call[]): Call[] {
  for (let i = 1; i < calls.length; i++) {
    if (calls[i]!.slot < calls[i - 1]!.slot) {
      return calls
        .map((call, at) => ({ call, at }))
        .sort((a, b) => a.call.slot - b.call.slot || a.at - b.at)
        .map((entry) => entry.call);
    }
  }
  return calls;
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
