/**
 * Misconfiguration the adapters can see but not fix: each is reported as one process warning
 * (`process.emitWarning(message, { code })`) with a stable code, once per middleware (a few
 * once per process, said below), and never changes a decision. `validate: false` turns them
 * all off; `validate: { FLOODGATE_DOUBLE_COUNT: false }` turns off one. docs/troubleshooting.md
 * has an entry per code.
 */
import { emitWarning } from '../errors.js';
import { configError } from '../options.js';

/** Every diagnostic code, with what it reports. */
export const DIAGNOSTIC_CODES = [
  /** A request carries X-Forwarded-For but no proxy is trusted (once per process). */
  'FLOODGATE_UNTRUSTED_PROXY',
  /** Express `trust proxy === true`, or Koa `app.proxy` with `maxIpsCount` 0: any client can forge its IP. */
  'FLOODGATE_PROXY_HOPS',
  /** A `Forwarded` header arrives without X-Forwarded-For, which is the only one read. */
  'FLOODGATE_FORWARDED_IGNORED',
  /** `'appKey'` is in the key chain without `verifyAppKey`. */
  'FLOODGATE_UNVERIFIED_APP_KEY',
  /** A request with an Authorization header resolved no client id while 'clientId' is in the chain. */
  'FLOODGATE_AUTH_AFTER_LIMITER',
  /** The same limiter (store, prefix and policy ids) charged one request twice. */
  'FLOODGATE_DOUBLE_COUNT',
  /** Two middlewares share one store, prefix and policy ids (and so one budget). */
  'FLOODGATE_SHARED_BUDGET',
  /** Middlewares are being created per request (once per process). */
  'FLOODGATE_LIMITER_PER_REQUEST',
  /** Shadow mode let a request through uncounted after its key, cost, skip or policies function failed. */
  'FLOODGATE_SHADOW_ERROR',
] as const;

/** One diagnostic code. */
export type DiagnosticCode = (typeof DIAGNOSTIC_CODES)[number];

/** `validate`: `true` (default) reports every diagnostic, `false` none, or per code. */
export type ValidateOption = boolean | Partial<Record<DiagnosticCode, boolean>>;

/** Codes reported at most once per process, whichever middleware sees them. */
const PER_PROCESS: readonly DiagnosticCode[] = [
  'FLOODGATE_UNTRUSTED_PROXY',
  'FLOODGATE_LIMITER_PER_REQUEST',
];
const warnedInProcess = new Set<DiagnosticCode>();

/** One middleware's diagnostics: which codes are on, and which were already reported. */
export class Diagnostics {
  private readonly warned = new Set<DiagnosticCode>();

  constructor(private readonly enabled: ReadonlySet<DiagnosticCode>) {}

  /** Whether `code` would still be reported (on, and not reported yet). */
  pending(code: DiagnosticCode): boolean {
    if (!this.enabled.has(code) || this.warned.has(code)) return false;
    return !(PER_PROCESS.includes(code) && warnedInProcess.has(code));
  }

  /** Reports `code` once (see `pending`). */
  warn(code: DiagnosticCode, message: string): void {
    if (!this.pending(code)) return;
    this.warned.add(code);
    if (PER_PROCESS.includes(code)) warnedInProcess.add(code);
    emitWarning(code, `${message} (turn off with validate: { ${code}: false })`);
  }
}

/** Reads a `validate` option (undefined → every diagnostic on). */
export function parseValidateOption(value: unknown, field: string): Diagnostics {
  if (value === undefined || value === true) return new Diagnostics(new Set(DIAGNOSTIC_CODES));
  if (value === false) return new Diagnostics(new Set());
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw configError(field, value, 'true, false or { <diagnostic code>: boolean }');
  }
  const enabled = new Set<DiagnosticCode>(DIAGNOSTIC_CODES);
  for (const name of Reflect.ownKeys(value)) {
    const flag = (value as Record<PropertyKey, unknown>)[name];
    if (typeof name !== 'string' || !(DIAGNOSTIC_CODES as readonly string[]).includes(name)) {
      throw configError(
        `${field}.${String(name)}`,
        flag,
        `a diagnostic code (${DIAGNOSTIC_CODES.join(', ')})`,
      );
    }
    if (typeof flag !== 'boolean') throw configError(`${field}.${name}`, flag, 'a boolean');
    if (!flag) enabled.delete(name as DiagnosticCode);
  }
  return new Diagnostics(enabled);
}
