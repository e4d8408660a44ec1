/**
 * App-key verification. A client chooses its `X-App-Key` freely, so an unverified app key is a
 * fresh bucket per request for anyone who mints keys: it must never outrank `'ip'`.
 * `verifyAppKey(appKey, req)` says whether a key is one you issued; an unknown key falls through
 * to the next key source (`unknownAppKey: 'next'`, the default) or is refused with a 403
 * problem (`'refuse'`).
 */
import { configError } from '../options.js';
import { PROBLEM_CONTENT_TYPE } from './problem.js';

/** Says whether `appKey` is one you issued (look it up, check its signature, …). */
export type VerifyAppKey<Req> = (appKey: string, req: Req) => boolean | Promise<boolean>;

/** What an unknown app key does: try the next key source, or refuse the request (403). */
export type UnknownAppKeyAction = 'next' | 'refuse';

/** @default 'next' */
export const DEFAULT_UNKNOWN_APP_KEY: UnknownAppKeyAction = 'next';

/** The 403 problem body of a refused app key (RFC 9457). */
export interface UnknownAppKeyProblem {
  readonly type: 'about:blank';
  readonly title: 'Forbidden';
  readonly status: 403;
  readonly detail: string;
}

/**
 * Thrown by `resolveKey` when `unknownAppKey: 'refuse'` and the request's app key does not
 * verify. The adapters answer it with `status` and `problem` (Nest: a ForbiddenException).
 */
export class UnknownAppKeyError extends Error {
  override readonly name = 'UnknownAppKeyError';
  readonly code = 'FLOODGATE_UNKNOWN_APP_KEY';
  readonly status = 403;
  readonly contentType = PROBLEM_CONTENT_TYPE;
  readonly problem: UnknownAppKeyProblem = {
    type: 'about:blank',
    title: 'Forbidden',
    status: 403,
    detail: 'The app key of this request is not known.',
  };
  constructor() {
    super('The app key of this request is not known');
  }
}

/** Reads `verifyAppKey`. */
export function parseVerifyAppKey<Req>(
  value: unknown,
  field: string,
): VerifyAppKey<Req> | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'function') {
    throw configError(field, value, 'a function (appKey, req) => boolean | Promise<boolean>');
  }
  return value as VerifyAppKey<Req>;
}

/** Reads `unknownAppKey`. */
export function parseUnknownAppKey(value: unknown, field: string): UnknownAppKeyAction {
  if (value === undefined) return DEFAULT_UNKNOWN_APP_KEY;
  if (value !== 'next' && value !== 'refuse') throw configError(field, value, "'next' or 'refuse'");
  return value;
}

/**
 * Without `verifyAppKey`, `'appKey'` may not outrank `'ip'`: when `'ip'` comes later in the
 * chain it moves to just before `'appKey'`. Returns the chain to use.
 */
export function demoteUnverifiedAppKey<S>(sources: readonly S[], verified: boolean): readonly S[] {
  const appKey = sources.indexOf('appKey' as S);
  const ip = sources.indexOf('ip' as S);
  if (verified || appKey === -1 || ip < appKey) return sources;
  const rest = sources.filter((_, i) => i !== ip);
  return [...rest.slice(0, appKey), 'ip' as S, ...rest.slice(appKey)];
}
