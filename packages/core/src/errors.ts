/**
 * The closed set of errors Floodgate throws. Outcomes of rate limiting (denied, store down)
 * are data on a Decision; these are for broken configuration, bad call arguments and store
 * failures that the caller asked to see.
 */

/**
 * Where every code Floodgate reports (errors and process warnings) is explained: one entry per
 * code on the troubleshooting page.
 */
export const TROUBLESHOOTING_URL =
  'https://github.com/floodgate-js/floodgate/blob/main/docs/troubleshooting.md';

/** The help link of `code`: its entry on the troubleshooting page (GitHub's heading anchor). */
export function helpUrl(code: string): string {
  return `${TROUBLESHOOTING_URL}#${code.toLowerCase()}`;
}

/** Emits a process warning with its stable `code` and, as its detail, the code's help link. */
export function emitWarning(code: string, message: string): void {
  process.emitWarning(message, { code, detail: `See ${helpUrl(code)}` });
}

/** `message` followed by the help link of `code`. */
function withHelp(message: string, code: string): string {
  return `${message} (help: ${helpUrl(code)})`;
}

/** Stable codes, one per kind of mistake; safe to switch on. */
export type RateLimitConfigErrorCode =
  | 'FLOODGATE_MISSING_OPTION'
  | 'FLOODGATE_INVALID_OPTION'
  | 'FLOODGATE_UNKNOWN_OPTION'
  | 'FLOODGATE_NO_POLICIES'
  | 'FLOODGATE_DUPLICATE_POLICY'
  | 'FLOODGATE_UNKNOWN_CLIENT'
  /** A limiter keyed by the client id ran before authentication (NestJS guard order). */
  | 'FLOODGATE_GUARD_ORDER'
  /** `reserve` or `penalize` on a limiter whose policies cannot carry debt (at the call). */
  | 'FLOODGATE_NO_DEBT'
  /** `lease` on a limiter with a policy that cannot be leased (docs/algorithms.md#quota-leases). */
  | 'FLOODGATE_NO_LEASE';

/**
 * An option is missing, unknown or has a bad value. Thrown at construction, never later; except
 * `FLOODGATE_NO_DEBT`, thrown by `reserve` or `penalize` on a limiter configured with a policy
 * that cannot carry debt (the same limiter consumes fine).
 */
export class RateLimitConfigError extends Error {
  override readonly name = 'RateLimitConfigError';
  constructor(
    readonly code: RateLimitConfigErrorCode,
    /** The option's path, e.g. `fixedWindow.limit` or `policies[1].name`. */
    readonly field: string,
    /** The value that was received. */
    readonly value: unknown,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(withHelp(message, code), options);
    this.help = helpUrl(code);
  }
  /** This code's entry on the troubleshooting page (also at the message's end). */
  readonly help: string;
}

/** A call argument is invalid: an empty or non-string key, a negative or fractional cost. */
export class RateLimitArgumentError extends RangeError {
  override readonly name = 'RateLimitArgumentError';
  readonly code = 'FLOODGATE_INVALID_ARGUMENT' as const;
  constructor(
    /** Which argument: `key`, `cost`, `maxWait`, … */
    readonly argument: string,
    readonly value: unknown,
    message: string,
  ) {
    super(withHelp(message, 'FLOODGATE_INVALID_ARGUMENT'));
  }
  /** This code's entry on the troubleshooting page (also at the message's end). */
  readonly help = helpUrl('FLOODGATE_INVALID_ARGUMENT');
}

/** The store could not answer (Redis error, closed connection, unexpected reply). */
export class RateLimitStoreError extends Error {
  override readonly name = 'RateLimitStoreError';
  readonly code = 'FLOODGATE_STORE_ERROR' as const;
  /** This code's entry on the troubleshooting page (also at the message's end). */
  readonly help = helpUrl('FLOODGATE_STORE_ERROR');
  /**
   * Redis refused a write because it is full (`maxmemory` with `noeviction`): it still answers,
   * so this failure never opens the circuit breaker (docs/reliability.md, "Redis memory").
   */
  readonly outOfMemory: boolean;
  /**
   * The store answers but cannot be trusted to decide (its `TIME` is 0 or went backwards): the
   * failure policy never admits on it, `'open'` denies too (a fallback still decides).
   */
  readonly misconfigured: boolean;
  /**
   * The app closed the Redis client (`quit()`, `disconnect()`, …) before the store sent this
   * call: not an outage. Await every decision before closing the client.
   */
  readonly clientClosed: boolean;
  constructor(
    message: string,
    options?: { cause?: unknown; outOfMemory?: boolean; misconfigured?: boolean },
  ) {
    super(withHelp(message, 'FLOODGATE_STORE_ERROR'), { cause: options?.cause });
    this.outOfMemory = options?.outOfMemory === true;
    // A store error wrapping a misconfigured one (a batch's, a lease's) is misconfigured too.
    const cause = options?.cause;
    this.misconfigured =
      options?.misconfigured === true ||
      (cause instanceof RateLimitStoreError && cause.misconfigured);
    this.clientClosed = isClientClosed(cause);
  }
}

/** The `code` of a closed client's refusal, as the store reports it (stores/client-closed.ts). */
export const CLIENT_CLOSED = 'FLOODGATE_CLIENT_CLOSED';

/** Whether `error` or one of its causes is a closed client's refusal. */
function isClientClosed(error: unknown): boolean {
  let e = error;
  for (let depth = 0; e instanceof Error && depth < 8; depth++) {
    if ((e as { code?: unknown }).code === CLIENT_CLOSED) return true;
    if (e instanceof RateLimitStoreError && e.clientClosed) return true;
    e = e.cause;
  }
  return false;
}

/** Describes a received value for an error message, briefly and without throwing. */
export function describeValue(value: unknown): string {
  if (typeof value === 'string') {
    return JSON.stringify(value.length > 60 ? `${value.slice(0, 57)}...` : value);
  }
  if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint') {
    return String(value);
  }
  if (value === null || value === undefined) return String(value);
  if (typeof value === 'function') return `a function${value.name ? ` (${value.name})` : ''}`;
  if (Array.isArray(value)) return `an array of ${value.length}`;
  const ctor = (value as object).constructor?.name;
  return ctor && ctor !== 'Object' ? `a ${ctor}` : 'an object';
}
