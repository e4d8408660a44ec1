import { fixedWindow, type Store, tokenBucket } from '@floodgate/core';
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
  // Set by `authenticate` (which runs first): the budgets belong to the user, not the IP.
  const userKey = (req: Request) => `user:${(req as Request & { user: { id: string } }).user.id}`;
  // 60 requests a minute, whatever their size.
  const requests = rateLimit({
    store,
    prefix: 'llm-rpm',
    key: userKey,
    policies: fixedWindow({ name: 'requests', limit: 60, window: '1m' }),
  });
  // 20 000 tokens a minute, and up to 40 000 at once after a quiet spell. The estimate is charged
  // before the model runs, so concurrent requests cannot overspend; once the response has gone,
  // the request is settled at what the model really used: the difference comes back, or the
  // overrun is charged even past the limit (debt: the user's next requests wait until it is
  // repaid). A failed request (no usage) gives the whole estimate back; a client that goes away
  // before its answer keeps the estimate charged (never free).
  const tokens = rateLimit({
    store,
    prefix: 'llm-tpm',
    key: userKey,
    policies: tokenBucket({ name: 'tokens', limit: 20_000, window: '1m', burst: 40_000 }),
    cost: {
      estimate: estimateTokens,
      actual: (_req, res) => (res.locals.tokensUsed as number | undefined) ?? 0,
    },
  });

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
    requests,
    tokens,
    async (req, res, next) => {
      try {
        const answer = await model.complete(req.body.prompt, maxTokensOf(req));
        res.locals.tokensUsed = answer.tokens;
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
