/**
 * The RFC 9457 problem body of a denied request, with the `quota-exceeded` problem type that
 * draft-ietf-httpapi-ratelimit-headers-10 §5.1 registers.
 */
import type { Decision } from '../decision.js';
import { retryAfterSeconds } from './headers.js';

/** Media type of RFC 9457 problem bodies. */
export const PROBLEM_CONTENT_TYPE = 'application/problem+json';
/** Problem type URI for a request over quota (draft §5.1). */
export const QUOTA_EXCEEDED_TYPE = 'https://iana.org/assignments/http-problem-types#quota-exceeded';

/** RFC 9457 body of a 429. */
export interface QuotaExceededProblem {
  readonly type: typeof QUOTA_EXCEEDED_TYPE;
  readonly title: string;
  readonly status: 429;
  readonly detail: string;
  /** Names of the policies that denied the request (draft §5.1). */
  readonly 'violated-policies': string[];
}

/** The problem body for a denied decision. */
export function quotaExceededProblem(decision: Decision): QuotaExceededProblem {
  const violated = decision.policies.filter((p) => !p.allowed).map((p) => p.name);
  if (violated.length === 0) violated.push(decision.policy);
  const never = decision.policies.some((p) => !p.allowed && p.retryAfter < 0);
  const detail = never
    ? `This request costs more than policy "${decision.policy}" can ever admit.`
    : `Too many requests under policy "${decision.policy}"; retry in ${retryAfterSeconds(decision) ?? 1} s.`;
  return {
    type: QUOTA_EXCEEDED_TYPE,
    title: 'Quota Exceeded',
    status: 429,
    detail,
    'violated-policies': violated,
  };
}
