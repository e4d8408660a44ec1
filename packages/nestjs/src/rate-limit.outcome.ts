/**
 * Counting by outcome (`count: 'failed' | 'succeeded' | (context, response) => boolean`): the
 * core's `refundUncounted` (the Express, Koa and Fastify adapters' step) on the Node response
 * under Express's `res` or Fastify's `reply.raw`. A request whose outcome should not count is
 * refunded, every policy of its set, before the response goes out, unless the window (fixed
 * window, sliding-window bucket, sliding-log entry) it was charged to has ended; nothing here
 * can break the response (a failing refund is the limiter's failure policy's, a throwing `count` function
 * counts the request and is reported once: FLOODGATE_HOOK_ERROR).
 */
import type { ServerResponse } from 'node:http';
import {
  type CountWarning,
  chargeOf,
  refundUncounted,
  type SettleConfig,
  settleAfterResponse as settleHttp,
} from '@floodgate/core/http';
import type { ExecutionContext } from '@nestjs/common';
import type { KeyedCharge } from './rate-limit.plan.js';

/**
 * Arranges the refund of each charge whose `count` says this request does not count. HTTP
 * only: GraphQL fields and WebSocket messages have no response of their own, so they count.
 */
export function settleAfterResponse(
  context: ExecutionContext,
  charged: readonly KeyedCharge[],
  cost: number,
  warning: CountWarning,
): void {
  if (context.getType<string>() !== 'http') return;
  const response = context.switchToHttp().getResponse<{ raw?: ServerResponse }>();
  const raw = (response.raw ?? response) as ServerResponse;
  for (const charge of charged) {
    refundUncounted(
      charge.count,
      chargeOf(charge.limiter!, charge.key, cost, charge.decision!),
      raw,
      context,
      response as unknown,
      warning,
    );
  }
}

/**
 * `cost: { estimate, actual }`: once the HTTP response has finished, settles each charge at the
 * actual cost (`actual(context, response)` or a response header or trailer), as the Express,
 * Koa and Fastify adapters do; never delays the response. GraphQL and WebSocket calls keep
 * their estimate.
 */
export function settleAtActualCost(
  context: ExecutionContext,
  charged: readonly KeyedCharge[],
  cost: number,
  settle: SettleConfig<ExecutionContext, unknown>,
): void {
  if (context.getType<string>() !== 'http') return;
  const response = context.switchToHttp().getResponse<{ raw?: ServerResponse }>();
  const raw = (response.raw ?? response) as ServerResponse;
  for (const { key, limiter, decision } of charged) {
    if (decision === undefined) continue;
    const check = { key, cost, decision, rate: decision, limiter };
    settleHttp({ settle }, check, raw, context, response as unknown);
  }
}
