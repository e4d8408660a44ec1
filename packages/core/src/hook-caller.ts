/** The one guarded way to call a user's hooks: a throw or a rejection never reaches the caller. */
import { emitWarning } from './errors.js';

/**
 * Calls user hooks (`onDecision`, `onStoreError`, `onCircuitChange`, `onStoreCall`) for one
 * owner: a limiter's guard, a shadow middleware's wrapper, the OpenTelemetry hooks. A hook that
 * throws, or returns a promise that rejects (an `async` hook), is reported once per caller as a
 * FLOODGATE_HOOK_ERROR process warning and otherwise ignored: never rethrown, never an
 * unhandled rejection (which Node's default `--unhandled-rejections=throw` turns into a crash).
 * Every hook call in the packages goes through `call`; a structural test holds them to it.
 *
 * @example
 * const hooks = new HookCaller('my wrapper');
 * hooks.call(userHooks, 'onDecision', decision, context);
 */
export class HookCaller {
  private warned = false;

  /** `label` names the caller in the warning, e.g. `RateLimiter (prefix "rl")`. */
  constructor(private readonly label: string) {}

  /** Calls `hooks[name](...args)` when `hooks` has such a function; never throws. */
  call<H extends object, K extends keyof H & string>(
    hooks: H | undefined,
    name: K,
    ...args: H[K] extends ((...a: infer A) => unknown) | undefined ? A : never
  ): void {
    this.apply(hooks, name, args);
  }

  /** `call` with the arguments as an array, for callers generic over the hook's name. */
  apply(hooks: object | undefined, name: string, args: readonly unknown[]): void {
    const hook = (hooks as Record<string, unknown> | undefined)?.[name];
    if (typeof hook !== 'function') return;
    try {
      const result: unknown = Reflect.apply(hook, hooks, args);
      if (
        result !== null &&
        (typeof result === 'object' || typeof result === 'function') &&
        typeof (result as PromiseLike<unknown>).then === 'function'
      ) {
        (result as PromiseLike<unknown>).then(undefined, (error: unknown) =>
          this.failed(name, error),
        );
      }
    } catch (error) {
      this.failed(name, error);
    }
  }

  private failed(name: string, error: unknown): void {
    if (this.warned) return;
    this.warned = true;
    emitWarning(
      'FLOODGATE_HOOK_ERROR',
      `${this.label} hooks.${name} threw or rejected (further hook errors are ignored): ${(error as Error)?.message ?? error}`,
    );
  }
}
