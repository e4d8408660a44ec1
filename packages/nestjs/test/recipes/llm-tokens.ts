import { type Store, tokenBucket } from '@floodgate/core';
import { RateLimit, RateLimitGuard, RateLimitModule } from '@floodgate/nestjs';
import {
  BadRequestException,
  type CanActivate,
  Controller,
  type DynamicModule,
  type ExecutionContext,
  Inject,
  Module,
  Post,
  Req,
  type Type,
  UseGuards,
} from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';

/** Your model client: answers a completion and the tokens it really used. */
export interface CompletionModel {
  complete(prompt: string, maxTokens: number): Promise<{ text: string; tokens: number }>;
}
export const COMPLETION_MODEL = Symbol('CompletionModel');

const MAX_PROMPT_CHARS = 32_000;
const MAX_COMPLETION_TOKENS = 2_000;

/** The request as the handler and the cost functions read it. */
interface CompletionRequest {
  body?: { prompt?: unknown; maxTokens?: unknown };
  /** Set by the handler once the model answered: what the completion really cost. */
  tokensUsed?: number;
}

const requestOf = (context: ExecutionContext) =>
  context.switchToHttp().getRequest<CompletionRequest>();

/**
 * 20 000 tokens a minute per authenticated client, up to 40 000 at once after a quiet spell.
 * The guard charges the estimate before the handler runs, so concurrent requests cannot
 * overspend; once the response has gone, the request is settled at what the model really used:
 * the difference comes back, or the overrun is charged even past the limit (debt: the client's
 * next requests get 429 until it is repaid). A request that fails before the model answers
 * (a bad prompt, a model error) reports no usage and gives its estimate back.
 */
@Controller('v1')
@UseGuards(RateLimitGuard)
export class CompletionController {
  constructor(@Inject(COMPLETION_MODEL) private readonly model: CompletionModel) {}

  @Post('complete')
  @RateLimit({
    policies: tokenBucket({ name: 'tokens', limit: 20_000, window: '1m', burst: 40_000 }),
    key: 'clientId',
    cost: {
      estimate: (context) => estimateTokens(requestOf(context)),
      actual: (context) => requestOf(context).tokensUsed ?? 0,
    },
  })
  async complete(@Req() request: CompletionRequest) {
    const prompt = request.body?.prompt;
    if (typeof prompt !== 'string' || prompt.length > MAX_PROMPT_CHARS) {
      throw new BadRequestException(`prompt: a string of at most ${MAX_PROMPT_CHARS} characters`);
    }
    const answer = await this.model.complete(prompt, maxTokensOf(request));
    request.tokensUsed = answer.tokens;
    return { text: answer.text, tokens: answer.tokens };
  }
}

@Module({})
// biome-ignore lint/complexity/noStaticOnlyClass: Nest modules are classes with static forRoot().
export class LlmModule {
  /**
   * `authGuard` is global, so it runs before the controller's rate-limit guard and sets
   * `request.user`: the budgets belong to the client, not the IP.
   */
  static forRoot(
    store: Store,
    model: CompletionModel,
    authGuard: Type<CanActivate>,
  ): DynamicModule {
    return {
      module: LlmModule,
      imports: [RateLimitModule.forRoot({ store })],
      controllers: [CompletionController],
      providers: [
        { provide: COMPLETION_MODEL, useValue: model },
        { provide: APP_GUARD, useClass: authGuard },
      ],
    };
  }
}

function maxTokensOf(request: CompletionRequest): number {
  const asked: unknown = request.body?.maxTokens;
  return Number.isSafeInteger(asked) && (asked as number) > 0
    ? Math.min(asked as number, MAX_COMPLETION_TOKENS)
    : 256;
}

/** Prompt tokens (about 4 characters each) plus the most the completion may use. */
function estimateTokens(request: CompletionRequest): number {
  const prompt = request.body?.prompt;
  const chars = typeof prompt === 'string' ? Math.min(prompt.length, MAX_PROMPT_CHARS) : 0;
  return Math.ceil(chars / 4) + maxTokensOf(request);
}
