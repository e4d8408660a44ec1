/**
 * Type tests, checked by `tsc -p tsconfig.json` in `npm test`: `ctx.state.rateLimit`
 * is typed by @floodgate/koa's augmentation of Koa's `DefaultState`. Nothing here runs.
 */
import type { Decision } from '@floodgate/core';
import { rateLimit } from '@floodgate/koa';
import Koa from 'koa';

export function typedState(app: Koa) {
  app.use(rateLimit({ policies: [] as never }));
  app.use((ctx) => {
    const decision: Decision | undefined = ctx.state.rateLimit;
    // @ts-expect-error the decision may be absent (a skipped request) and is no number
    const remaining: number = ctx.state.rateLimit;
    ctx.body = { decision, remaining, left: ctx.state.rateLimit?.remaining };
  });
}
