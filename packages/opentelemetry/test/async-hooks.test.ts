/**
 * floodgateMetrics({ hooks }) calls the user's own hooks after recording; an `async` hook that
 * rejects must be caught (reported once as FLOODGATE_HOOK_ERROR), never left as an unhandled
 * rejection, which crashes a process run with Node's default settings.
 */
import { type Decision, fixedWindow, memoryStore, RateLimiter } from '@floodgate/core';
import { observeRejections } from '@floodgate/http-test-kit';
import { floodgateMetrics } from '@floodgate/opentelemetry';
import { MeterProvider } from '@opentelemetry/sdk-metrics';

describe('floodgateMetrics with the user’s own hooks', () => {
  it.each([
    ['async, rejecting', true],
    ['throwing', false],
  ])('a %s onDecision is reported once and never unhandled', async (_label, async) => {
    const seen: boolean[] = [];
    const failure = new Error('hook failed');
    const onDecision = async
      ? async (decision: Decision) => {
          seen.push(decision.allowed);
          throw failure;
        }
      : (decision: Decision) => {
          seen.push(decision.allowed);
          throw failure;
        };
    const { hooks } = floodgateMetrics({
      meterProvider: new MeterProvider(),
      hooks: { onDecision },
    });
    const limiter = new RateLimiter({
      store: memoryStore(),
      policies: fixedWindow({ limit: 1, window: '1m' }),
      hooks,
    });
    const { codes, unhandled } = await observeRejections(async () => {
      await limiter.consume('a');
      await limiter.consume('a');
    });
    expect(seen).toEqual([true, false]);
    expect(unhandled).toEqual([]);
    expect(codes).toEqual(['FLOODGATE_HOOK_ERROR']);
  });

  it('an async onStoreError and onCircuitChange that reject are caught too', async () => {
    const calls: string[] = [];
    const { hooks } = floodgateMetrics({
      meterProvider: new MeterProvider(),
      hooks: {
        async onStoreError() {
          calls.push('onStoreError');
          throw new Error('store hook failed');
        },
        async onCircuitChange(state) {
          calls.push(`onCircuitChange:${state}`);
          throw new Error('circuit hook failed');
        },
      },
    });
    const broken = memoryStore();
    const limiter = new RateLimiter({
      store: {
        ...broken,
        kind: 'broken',
        prepare: () => {
          const failing = () => Promise.reject(new Error('down'));
          return {
            decide: failing,
            reserve: failing,
            reset: failing,
            refund: failing,
            block: failing,
            unblock: failing,
          };
        },
      },
      policies: fixedWindow({ limit: 1, window: '1m' }),
      circuitBreaker: { failureThreshold: 1, cooldown: '1m' },
      hooks,
    });
    const { unhandled } = await observeRejections(async () => {
      await limiter.consume('a');
    });
    expect([...calls].sort()).toEqual(['onCircuitChange:open', 'onStoreError']);
    expect(unhandled).toEqual([]);
  });
});
