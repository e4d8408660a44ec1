/**
 * A command sent to Redis must run at most once, and never after its caller stopped waiting.
 * Clients re-send commands on their own: ioredis re-sends every unanswered command after a
 * reconnect (`autoResendUnfulfilledCommands`, on by default), an ioredis Cluster re-sends one
 * whose connection closed (`retryDelayOnFailover`), and both clients keep commands issued while
 * disconnected in an offline queue that runs them on reconnect, long after the failure policy
 * answered. For a rate limiter each of those is a second charge (measured before this fix:
 * 20 000 requests under CLIENT KILL churn counted 22 249–23 952).
 *
 * The store gives every command a ticket; the client shims write the command only while the
 * ticket allows it (see redis-client.ts), and the limiter's guard abandons the ticket when its
 * timeout answers. A command that may not run is written as a harmless `ECHO` whose reply,
 * `NOT_RUN_REPLY`, the store turns into a store error (the failure policy answers).
 */

/** Lets a caller that stopped waiting keep its queued command from running later. */
export class SendTicket {
  /** Set once the caller has its answer without this command: it must never run. */
  abandoned = false;
  private controller: AbortController | undefined;

  /** For clients that drop queued commands by AbortSignal (node-redis). Made on first use. */
  get signal(): AbortSignal {
    this.controller ??= new AbortController();
    return this.controller.signal;
  }

  /** The ticket of the batch this call went out in. */
  private batch: SendTicket | undefined;
  /** A batch's tickets: the calls that went out in it. */
  private members: SendTicket[] | undefined;

  abandon(): void {
    if (this.abandoned) return;
    this.abandoned = true;
    this.controller?.abort();
    this.batch?.memberAbandoned();
  }

  /**
   * Puts this call's command into a batch command. Each call keeps its own timeout: the batch
   * stops (is not written, or not re-sent) only once every call in it is abandoned, and a re-sent
   * batch leaves its abandoned calls out (redis-batch.ts), so a short timeout never fails the
   * calls of a longer one beside it.
   */
  joinBatch(batch: SendTicket): void {
    this.batch = batch;
    if (batch.members === undefined) batch.members = [this];
    else batch.members.push(this);
    if (this.abandoned) batch.memberAbandoned();
  }

  private memberAbandoned(): void {
    if (this.members?.every((member) => member.abandoned)) this.abandon();
  }
}

/** The error a call gets when its command answered `NOT_RUN_REPLY`. */
export function notRunError(): Error {
  return new Error(
    'not run: the connection dropped while this command was in flight, or it was still queued when its caller stopped waiting (a command is never sent twice)',
  );
}

/** The reply of a command that was not run (re-sent after its connection dropped, or abandoned). */
export const NOT_RUN_REPLY = 'floodgate:not-run';

/** Where a store call's promise carries its ticket, for the guard to abandon on timeout. */
export const TICKET = Symbol('floodgate.ticket');

/** A store call's promise, with the ticket of the command behind it. */
export type TicketedPromise<T> = Promise<T> & { [TICKET]?: SendTicket };

/** Abandons the command behind a store call, if it has one (called when the timeout answers). */
export function abandon(pending: Promise<unknown>): void {
  (pending as TicketedPromise<unknown>)[TICKET]?.abandon();
}
