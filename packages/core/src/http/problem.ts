/**
 * RFC 9457 problem bodies for denied requests: `quota-exceeded` (the type that
 * draft-ietf-httpapi-ratelimit-headers-10 §5.1 registers) when a policy denied, and
 * `store-unavailable` when `onStoreError: 'closed'` refused because the store could not decide.
 */
import type { Decision } from '../decision.js';
import { isSlotDenial } from './concurrency.js';
import { retryAfterSeconds, storeDecided } from './headers.js';

/** Media type of RFC 9457 problem bodies. */
export const PROBLEM_CONTENT_TYPE = 'application/problem+json';
/** Problem type URI for a request over quota (draft §5.1). */
export const QUOTA_EXCEEDED_TYPE = 'https://iana.org/assignments/http-problem-types#quota-exceeded';
/**
 * Problem type URI for a request refused because the rate limiter's store failed and
 * `onStoreError` is `'closed'`. A `tag:` URI (RFC 4151), which RFC 9457 §3.1.1 suggests for a
 * type that is an identifier only, not a page to fetch.
 */
export const STORE_UNAVAILABLE_TYPE = 'tag:floodgate.dev,2026:problem:store-unavailable';
/** Problem type URI for a client banned by the limiter's `ban` (denied too often). */
export const BANNED_TYPE = 'tag:floodgate.dev,2026:problem:banned';

/** RFC 9457 body of a 429. */
export interface QuotaExceededProblem {
  readonly type: typeof QUOTA_EXCEEDED_TYPE;
  readonly title: string;
  readonly status: 429;
  readonly detail: string;
  /** Names of the policies that denied the request (draft §5.1). */
  readonly 'violated-policies': string[];
  /**
   * Present (true) when the key is blocked (a `blockDuration` lockout or `limiter.block`): the
   * client is refused until the block ends, whatever its quota (`Retry-After` is the time left;
   * none for a block without end).
   */
  readonly blocked?: true;
}

/** RFC 9457 body of the 403 sent to a banned client (`ban`: denied too often in a window). */
export interface BannedProblem {
  readonly type: typeof BANNED_TYPE;
  readonly title: 'Forbidden';
  readonly status: 403;
  readonly detail: string;
  /** The policy the ban speaks for (the limiter's first, as for a block by hand). */
  readonly 'violated-policies': string[];
}

/** The problem body of a banned client: how long the ban lasts, if it ends. */
export function bannedProblem(decision: Decision): BannedProblem {
  const seconds = retryAfterSeconds(decision);
  return {
    type: BANNED_TYPE,
    title: 'Forbidden',
    status: 403,
    detail:
      seconds === undefined
        ? 'This client was refused too often and is banned until it is unblocked.'
        : `This client was refused too often and is banned; retry in ${seconds} s.`,
    'violated-policies': [decision.policy],
  };
}

/** RFC 9457 body of a 503 sent when the store could not decide and the limiter fails closed. */
export interface StoreUnavailableProblem {
  readonly type: typeof STORE_UNAVAILABLE_TYPE;
  readonly title: string;
  readonly status: 503;
  readonly detail: string;
}

/** The problem body for a denied decision. */
export function quotaExceededProblem(decision: Decision): QuotaExceededProblem {
  if (decision.reason === 'blocked') return blockedProblem(decision);
  const violated = decision.policies.filter((p) => !p.allowed).map((p) => p.name);
  if (violated.length === 0) violated.push(decision.policy);
  const seconds = retryAfterSeconds(decision);
  const detail = isSlotDenial(decision)
    ? `Too many requests in flight under policy "${decision.policy}"; retry once one of them has finished.`
    : seconds === undefined
      ? `Policy "${decision.policy}" can never admit this request; retrying will not help.`
      : `Too many requests under policy "${decision.policy}"; retry in ${seconds} s.`;
  return {
    type: QUOTA_EXCEEDED_TYPE,
    title: 'Quota Exceeded',
    status: 429,
    detail,
    'violated-policies': violated,
  };
}

/** A blocked key: the blocking policy (the first for a block by hand) and the time left. */
function blockedProblem(decision: Decision): QuotaExceededProblem {
  const seconds = retryAfterSeconds(decision);
  const detail =
    seconds === undefined
      ? `This client is blocked under policy "${decision.policy}" until it is unblocked; retrying will not help.`
      : `This client is blocked under policy "${decision.policy}"; retry in ${seconds} s.`;
  return {
    type: QUOTA_EXCEEDED_TYPE,
    title: 'Quota Exceeded',
    status: 429,
    detail,
    'violated-policies': [decision.policy],
    blocked: true,
  };
}

/** The problem body for a decision refused by `onStoreError: 'closed'`. */
export function storeUnavailableProblem(decision: Decision): StoreUnavailableProblem {
  const seconds = retryAfterSeconds(decision);
  return {
    type: STORE_UNAVAILABLE_TYPE,
    title: 'Rate Limiter Unavailable',
    status: 503,
    detail: `The rate limiter could not reach its store (${decision.reason}), so the request was refused${
      seconds === undefined ? '.' : `; retry in ${seconds} s.`
    }`,
  };
}

/**
 * The status and body of a denied decision: 503 with `store-unavailable` when no store decided
 * (`onStoreError: 'closed'` refused; the client did nothing wrong), 403 `banned` for a key the
 * limiter's `ban` blocked (@fastify/rate-limit's `ban`), otherwise 429 with `quota-exceeded`.
 */
export function deniedProblem(
  decision: Decision,
): QuotaExceededProblem | StoreUnavailableProblem | BannedProblem {
  if (decision.reason === 'banned') return bannedProblem(decision);
  return storeDecided(decision)
    ? quotaExceededProblem(decision)
    : storeUnavailableProblem(decision);
}
