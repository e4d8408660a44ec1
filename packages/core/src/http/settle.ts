/**
 * `cost: { estimate, actual }`: the adapters charge an estimate before the handler runs and
 * settle at the actual cost once the response has finished (`Reservation.settle`: a refund of
 * the difference, or the overrun charged even past the limit). The settlement never delays the
 * response; a request whose response never finishes (aborted, errored) stays charged at its
 * estimate.
 */
import type { ServerResponse } from 'node:http';
import type { Decision } from '../decision.js';
import { emitWarning } from '../errors.js';
import { configError, isCost } from '../options.js';
import type { Policy } from '../policy.js';
import { toReservation, withoutDebt } from '../reservation.js';
import { storeDecided } from './headers.js';
import type { HttpCheck } from './types.js';

/**
 * The actual cost of a finished request: a function of the request and the response, or the
 * name of a response header or trailer holding it as a non-negative integer
 * (e.g. `'x-tokens-used'`).
 */
export type ActualCost<Req, Res> = string | ((req: Req, res: Res) => number | Promise<number>);

/**
 * `cost` as an estimate settled after the response.
 *
 * @example
 * ```ts
 * const cost = {
 *   estimate: (req: { body: { max_tokens: number } }) => req.body.max_tokens,
 *   actual: 'x-tokens-used',
 * };
 * ```
 */
export interface SettledCost<Req, Res> {
  /** Units charged before the handler runs: a non-negative integer or a function of the request. */
  estimate: number | ((req: Req) => number | Promise<number>);
  /** Units the request really took, read when the response has finished. */
  actual: ActualCost<Req, Res>;
}

/** `cost` as the adapters read it: the estimate (or only cost) and, to settle, `actual`. */
export interface CostConfig<Req, Res> {
  readonly cost: number | ((req: Req) => number | Promise<number>);
  readonly settle: SettleConfig<Req, Res> | undefined;
}

/** How a middleware settles: where the actual cost comes from, and its once-only warning. */
export interface SettleConfig<Req, Res> {
  readonly actual: ActualCost<Req, Res>;
  readonly where: string;
  /** Set once a failing `actual` has been reported (FLOODGATE_HOOK_ERROR). */
  warned: boolean;
}

/** Reads `cost`: a number, a function of the request, or `{ estimate, actual }`. */
export function parseCostOption<Req, Res>(value: unknown, where: string): CostConfig<Req, Res> {
  if (value === undefined) return { cost: 1, settle: undefined };
  if (typeof value === 'function') {
    return { cost: value as (req: Req) => number, settle: undefined };
  }
  if (typeof value === 'number')
    return { cost: readUnits(value, `${where}.cost`), settle: undefined };
  if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
    const { estimate, actual, ...rest } = value as Partial<SettledCost<Req, Res>>;
    const unknown = Object.keys(rest)[0];
    if (unknown !== undefined) {
      throw configError(
        `${where}.cost.${unknown}`,
        (rest as Record<string, unknown>)[unknown],
        'estimate or actual only',
      );
    }
    if (typeof actual !== 'function' && (typeof actual !== 'string' || actual === '')) {
      throw configError(
        `${where}.cost.actual`,
        actual,
        'a function (req, res) => number or the name of a response header or trailer',
      );
    }
    const cost =
      typeof estimate === 'function' ? estimate : readUnits(estimate, `${where}.cost.estimate`);
    return { cost, settle: { actual, where, warned: false } };
  }
  throw configError(
    `${where}.cost`,
    value,
    'a non-negative integer, a function (req) => number, or { estimate, actual }',
  );
}

function readUnits(value: unknown, field: string): number {
  if (!isCost(value)) {
    throw configError(field, value, 'a non-negative integer or a function (req) => number');
  }
  return value;
}

/**
 * Refuses, at construction, `cost.actual` with a limiter whose policies cannot carry debt
 * (docs/algorithms.md#debt), and with `count` (which refunds whole charges: return 0 from
 * `actual` for a request that should not count).
 */
export function checkSettleOption(
  settle: { readonly where: string } | undefined,
  limiter: { readonly policies: readonly Policy[] } | undefined,
  count: unknown,
  where: string,
): void {
  if (settle === undefined) return;
  if (count !== 'all') {
    throw configError(
      `${where}.count`,
      count,
      "'all' with cost.actual (return 0 from actual not to count a request)",
    );
  }
  const i = limiter === undefined ? -1 : withoutDebt(limiter.policies);
  if (i >= 0) {
    throw configError(
      `${where}.policies[${i}]`,
      limiter!.policies[i]!.kind,
      'a policy that can carry debt with cost.actual: tokenBucket, gcra, fixedWindow, slidingWindow or a smooth policy (docs/algorithms.md#debt)',
    );
  }
}

/**
 * The adapters' step after an admitted request under `cost: { estimate, actual }`: once
 * `response` has finished, reads the actual cost and settles the charge (never delaying the
 * response). Only a request the rate policies charged is settled (not a skipped, denied or
 * concurrency-refused one, nor one admitted by `onStoreError: 'open'`). A response that never
 * finishes keeps its estimate; an `actual` that fails or gives no valid cost keeps it too and is
 * reported once (FLOODGATE_HOOK_ERROR).
 */
export function settleAfterResponse<Req, Res>(
  config: { readonly settle: SettleConfig<Req, Res> | undefined },
  check: Pick<HttpCheck, 'key' | 'cost' | 'decision' | 'rate' | 'limiter'>,
  response: ServerResponse,
  req: Req,
  res: Res,
): void {
  const { settle } = config;
  const { rate, decision, limiter } = check;
  if (settle === undefined || limiter === undefined || rate === undefined) return;
  if (!decision.allowed || !rate.allowed || !storeDecided(rate)) return;
  const reservation = toReservation(rate, check.cost, check.key, limiter);
  const { actual } = settle;
  let trailer: unknown;
  if (typeof actual === 'string') trailer = watchTrailer(response, actual, (v) => (trailer = v));
  response.once('finish', () => {
    const read =
      typeof actual === 'string'
        ? Promise.resolve(response.getHeader(actual) ?? trailer)
        : Promise.resolve().then(() => actual(req, res));
    void read
      .then((value) => {
        const units =
          typeof value === 'string' && /^\d+$/.test(value.trim()) ? Number(value) : value;
        if (typeof units !== 'number' || !Number.isSafeInteger(units) || units < 0) {
          throw new Error(`no actual cost: got ${String(value)}`);
        }
        return reservation.settle(units) as Promise<Decision>;
      })
      .catch((error: unknown) => report(settle, error));
  });
}

/**
 * Records the value `name` is given through `writeHead(status, [reason], headers)` (Fastify sends
 * its headers that way, where `getHeader` does not see them) and `addTrailers` (trailers are not
 * readable once added).
 */
function watchTrailer(response: ServerResponse, name: string, set: (value: unknown) => void) {
  const lower = name.toLowerCase();
  const pick = (headers: unknown) => {
    if (headers === null || typeof headers !== 'object') return;
    const entries = Array.isArray(headers) ? headers : Object.entries(headers);
    for (const [k, v] of entries as Array<[string, unknown]>) {
      if (typeof k === 'string' && k.toLowerCase() === lower) set(v);
    }
  };
  const add = response.addTrailers;
  response.addTrailers = function addTrailers(headers) {
    pick(headers);
    return add.call(this, headers);
  };
  const writeHead = response.writeHead as (...args: unknown[]) => ServerResponse;
  response.writeHead = function writeHeadWatched(this: ServerResponse, ...args: unknown[]) {
    pick(args[args.length - 1]);
    return writeHead.apply(this, args);
  } as ServerResponse['writeHead'];
  return undefined;
}

function report(settle: { warned: boolean; readonly where: string }, error: unknown): void {
  if (settle.warned) return;
  settle.warned = true;
  emitWarning(
    'FLOODGATE_HOOK_ERROR',
    `${settle.where}.cost.actual failed (the request stays charged at its estimate; further errors are ignored): ${(error as Error)?.message ?? error}`,
  );
}
