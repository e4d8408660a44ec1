/**
 * Counting by outcome (`count: 'failed' | 'succeeded' | (context, response) => boolean`): once
 * the HTTP response is done, a request whose outcome should not count is refunded, every policy
 * of its set (`limiter.refund(key, { cost })`). Nothing here can break the response or crash
 * the process: a predicate that throws counts the request, a refund that fails is reported.
 */
import { emitWarning } from '@floodgate/core/http';
import type { ExecutionContext } from '@nestjs/common';
import type { KeyedCharge } from './rate-limit.plan.js';

/** The Node response under Express's `res` or Fastify's `reply.raw`. */
interface RawResponse {
  statusCode: number;
  writableFinished: boolean;
  once(event: 'finish' | 'close' | 'error', listener: () => void): unknown;
}

const warned = new Set<string>();

/** Warns once per process per code: an outcome problem repeats on every request. */
function warnOnce(code: string, message: string): void {
  if (warned.has(code)) return;
  warned.add(code);
  emitWarning(code, message);
}

/**
 * Refunds, after the response, the charges whose `count` says this request does not count.
 * HTTP only: GraphQL fields and WebSocket messages have no response of their own, so they count.
 */
export function settleAfterResponse(
  context: ExecutionContext,
  charged: readonly KeyedCharge[],
  cost: number,
): void {
  const pending = charged.filter((c) => c.count !== 'all');
  if (pending.length === 0 || cost === 0 || context.getType<string>() !== 'http') return;
  const response = context.switchToHttp().getResponse<{ raw?: RawResponse } & RawResponse>();
  const raw: RawResponse = response.raw ?? response;
  let settled = false;
  const settle = (finished: boolean): void => {
    if (settled) return;
    settled = true;
    // Aborted (closed before the response was sent) or errored: failed.
    const failed = !finished || raw.statusCode >= 400;
    for (const charge of pending) {
      void counts(charge, context, response, failed).then((keep) => {
        if (!keep) refund(charge, cost);
      });
    }
  };
  raw.once('finish', () => settle(true));
  raw.once('close', () => settle(raw.writableFinished));
  raw.once('error', () => settle(false));
}

/** Whether the request keeps its charge under `charge.count`; a failing predicate keeps it. */
async function counts(
  charge: KeyedCharge,
  context: ExecutionContext,
  response: unknown,
  failed: boolean,
): Promise<boolean> {
  const mode = charge.count;
  if (mode === 'failed') return failed;
  if (mode === 'succeeded') return !failed;
  if (mode === 'all') return true;
  try {
    return (await mode(context, response)) !== false;
  } catch (error) {
    warnOnce(
      'FLOODGATE_COUNT_ERROR',
      `The count function of a rate limit threw (${String(error)}); the request was counted. ` +
        'Make it return true (count) or false (refund) without throwing.',
    );
    return true;
  }
}

/** Gives the request's units back; the limiter's failure policy answers a store failure. */
function refund(charge: KeyedCharge, cost: number): void {
  charge.limiter!.refund(charge.key, { cost }).catch((error: unknown) => {
    warnOnce(
      'FLOODGATE_REFUND_FAILED',
      `A rate-limit refund failed (${String(error)}): the request stayed counted. The response ` +
        'was not affected; see onStoreError and the onStoreError hook.',
    );
  });
}
