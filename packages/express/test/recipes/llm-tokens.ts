import { RateLimiter, type Store, tokenBucket } from '@floodgate/core';
import { rateLimit } from '@floodgate/express';
import express, { type Express, type Request, type RequestHandler } from 'express';

/** Your model client: answers a completion and the tokens it really used. */
export interface CompletionModel {
  complete(prompt: string, maxTokens: number): Promise<{ text: string; tokens: number }>;
}

const MAX_PROMPT_CHARS = 32_000;
const MAX_COMPLETION_TOKENS = 2_000;

export function createLlmApp(
  store: Store,
  model: CompletionModel,
  authenticate: RequestHandler,
): Express {
  const app = express();
  // Each user may spend 20 000 tokens a minute, and up to 40 000 at once after a quiet spell.
  const tokens = new RateLimiter({
    store,
    prefix: 'llm',
    policies: tokenBucket({ name: 'tokens', limit: 20_000, window: '1m', burst: 40_000 }),
  });
  // Set by `authenticate` (which runs first): the budget belongs to the user, not the IP.
  const userKey = (req: Request) => `user:${(req as Request & { user: { id: string } }).user.id}`;

  app.post(
    '/v1/complete',
    authenticate,
    express.json({ limit: '200kb' }),
    (req, res, next) => {
      if (typeof req.body?.prompt !== 'string' || req.body.prompt.length > MAX_PROMPT_CHARS) {
        res
          .status(400)
          .json({ error: `prompt: a string of at most ${MAX_PROMPT_CHARS} characters` });
      } else next();
    },
    rateLimit({
      limiter: tokens,
      key: userKey,
      // Charged up front with an estimate, so concurrent requests cannot overspend…
      cost: estimateTokens,
      // …and given back in full when the request fails (a 4xx/5xx answer). Not 'succeeded': it
      // would also refund a client that goes away mid-completion, after the model spent tokens
      // (a function is never asked about an aborted request: that one counts).
      count: (_req, res) => res.statusCode < 400,
    }),
    async (req, res, next) => {
      try {
        const estimate = estimateTokens(req);
        const answer = await model.complete(req.body.prompt, maxTokensOf(req));
        // Settle the estimate against what the model really used.
        const key = userKey(req);
        if (answer.tokens < estimate) {
          await tokens.refund(key, { cost: estimate - answer.tokens });
        } else if (answer.tokens > estimate) {
          // Charged if the budget has it; if not, the user is out of tokens anyway and the next
          // request waits for the refill.
          await tokens.consume(key, { cost: answer.tokens - estimate });
        }
        res.json({ text: answer.text, tokens: answer.tokens });
      } catch (error) {
        next(error);
      }
    },
  );
  return app;
}

function maxTokensOf(req: Request): number {
  const asked: unknown = req.body?.maxTokens;
  return Number.isSafeInteger(asked) && (asked as number) > 0
    ? Math.min(asked as number, MAX_COMPLETION_TOKENS)
    : 256;
}

/** Prompt tokens (about 4 characters each) plus the most the completion may use. */
function estimateTokens(req: Request): number {
  return Math.ceil(req.body.prompt.length / 4) + maxTokensOf(req);
}
