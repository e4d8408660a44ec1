/** What FLOODGATE_STORE_UNAVAILABLE says about the error that began an outage. */
import { RateLimitStoreError } from './errors.js';

/**
 * `: <message> (code <code>)` of the error that began an outage, so a configuration mistake
 * (a client never connected, a wrong key type, missing ACL permissions) does not read as an
 * outage; nothing for a call the open circuit skipped.
 */
export function failureDetail(error: RateLimitStoreError | undefined): string {
  if (error === undefined) return '';
  const code = errorCode(error);
  return `: ${error.message}${code === undefined ? '' : ` (code ${code})`}`;
}

/**
 * The most specific code along `error`'s causes: a `code` property (`ECONNREFUSED`), a Redis
 * error's first word (`WRONGTYPE`, `NOPERM`), else a named error class (`ClientClosedError`).
 */
function errorCode(error: unknown): string | undefined {
  let named: string | undefined;
  // The store error's own code (FLOODGATE_STORE_ERROR) says nothing: its causes do.
  let e = error instanceof RateLimitStoreError ? error.cause : error;
  for (let depth = 0; e instanceof Error && depth < 5; depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && code !== '') return code;
    const prefix = /^([A-Z][A-Z_]{2,}) /.exec(e.message)?.[1];
    if (prefix !== undefined) return prefix;
    // node-redis names its errors by their class only (ClientClosedError).
    const name = e.name !== 'Error' ? e.name : e.constructor?.name;
    if (named === undefined && name !== undefined && name !== 'Error') named = name;
    e = e.cause;
  }
  return named;
}
