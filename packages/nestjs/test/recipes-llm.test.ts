/**
 * The Nest half of docs/recipes.md's LLM recipe (test/recipes/llm-tokens.ts, shown there to the
 * byte) on Express and Fastify, the memory store and the harness Redis: the estimate charged by
 * the guard, the request settled at the tokens the handler's model call really used (refund
 * below, debt above), a request that fails before the model answers settled at 0.
 */
import 'reflect-metadata';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import request from 'supertest';
import { BearerAuthGuard, CASES, closeApps } from './app.js';
import { type CompletionModel, LlmModule } from './recipes/llm-tokens.js';

/** Lets the settlement that follows a finished response reach the store (no timing asserted). */
const settled = () => new Promise((resolve) => setTimeout(resolve, 100));

it('docs/recipes.md shows test/recipes/llm-tokens.ts exactly', () => {
  const page = readFileSync(join(__dirname, '../../../docs/recipes.md'), 'utf8');
  const source = readFileSync(join(__dirname, 'recipes', 'llm-tokens.ts'), 'utf8');
  expect(page).toContain(`\`\`\`ts\n${source}\`\`\`\n`);
});

describe.each(CASES)(
  'LLM recipe on $platform.name with the $store.name store',
  ({ platform, store }) => {
    afterEach(closeApps);
    afterAll(() => store.close());

    it('charges the estimate, settles at the model usage, and an overrun puts the client in debt', async () => {
      const usage: number[] = [];
      const model: CompletionModel = {
        complete: async (prompt) => ({ text: prompt.toUpperCase(), tokens: usage.shift() ?? 0 }),
      };
      const app = await platform.boot({
        imports: [LlmModule.forRoot(await store.make(), model, BearerAuthGuard)],
      });
      const server = app.getHttpServer();
      const complete = (client: string, maxTokens: number, prompt = 'x'.repeat(400)) =>
        request(server)
          .post('/v1/complete')
          .set('Authorization', `Bearer ${client}`)
          .send({ prompt, maxTokens });

      // 100 prompt tokens + 1 900 at most: 2 000 charged of 40 000; the model used 700.
      usage.push(700);
      const first = await complete('alice', 1_900);
      expect(first.status).toBe(201);
      expect(first.body).toMatchObject({ tokens: 700 });
      expect(first.headers.ratelimit).toBe('"tokens";r=38000;t=6');
      await settled();
      // Settled at 700: 39 300 left, and this one's estimate of 2 000 is charged (2 700 short of
      // full: 8.1 s of refill).
      usage.push(45_000);
      expect((await complete('alice', 1_900)).headers.ratelimit).toBe('"tokens";r=37300;t=9');
      await settled();
      // Settled at 45 000: 39 300 − 45 000 = −5 700, debt. Denied until 5 701 tokens are back
      // (20 000 a minute: 17.103 s) — the model is not called.
      const denied = await complete('alice', 1);
      expect(denied.status).toBe(429);
      expect(denied.headers['retry-after']).toBe('18');
      // Another client's budget is its own; a bad prompt fails before the model: estimate back.
      const bad = await complete('bob', 1_900, 42 as unknown as string);
      expect(bad.status).toBe(400);
      await settled();
      // Nothing of the failed request's 2 000 stays charged: this one's 101 only.
      expect((await complete('bob', 1)).headers.ratelimit).toBe('"tokens";r=39899;t=1');
    });
  },
);
