/**
 * HookCaller, the one guarded way to call a user's hooks, and a structural check that every
 * hook call in the packages goes through it: no source calls a hook function itself (a direct
 * call of an `async` hook leaves its rejection unhandled, and Node then exits).
 */
import { readFileSync } from 'node:fs';
import { relative } from 'node:path';
import { HookCaller } from '@floodgate/core/http';
import { PACKAGES_DIR, packageSources } from './package-sources';

const HOOK = '(?:onDecision|onStoreError|onCircuitChange|onStoreCall)';
/** A direct call of a hook (`hooks.onDecision(…)`, `own.onDecision?.(…)`, `.call`/`.apply`). */
const DIRECT_CALL = new RegExp(`\\.${HOOK}\\s*(?:\\?\\.)?\\s*(?:\\(|\\.(?:call|apply|bind)\\()`);
/**
 * A hook read out of a hooks object into a variable, or indexed by name, to be called later
 * (`= own.onDecision;`). The `onStoreError` failure policy (`config.onStoreError`) is no hook.
 */
const ALIAS = new RegExp(
  `=\\s*[\\w.?]*\\b(?:hooks|own)\\s*\\??\\.${HOOK}\\s*[;,)]|\\bhooks\\s*\\[`,
);

/** `path:line: text` of every line of the package sources that calls a hook by itself. */
function directHookCalls(): string[] {
  return packageSources().flatMap((file) => {
    if (file.endsWith('hook-caller.ts')) return [];
    return readFileSync(file, 'utf8')
      .split('\n')
      .flatMap((line, i) =>
        (DIRECT_CALL.test(line) || ALIAS.test(line)) && !/^\s*(\*|\/\/)/.test(line)
          ? [`${relative(PACKAGES_DIR, file)}:${i + 1}: ${line.trim()}`]
          : [],
      );
  });
}

describe('hook calls', () => {
  it('the detector flags the direct calls it is meant to find', () => {
    for (const line of [
      'own.onDecision?.(decision, context);',
      'hooks.onStoreError(event);',
      'this.config.hooks.onCircuitChange.call(undefined, state);',
      'const onDecision = own.onDecision;',
      'const hook = this.config.hooks[name];',
    ]) {
      expect([line, DIRECT_CALL.test(line) || ALIAS.test(line)]).toEqual([line, true]);
    }
    // Presence checks and method definitions are not calls.
    for (const line of [
      'if (this.guard.config.hooks.onDecision) this.guard.notify(',
      'onDecision(decision: Decision, context: CallContext) {',
      'const onStoreError = failure.onStoreError;',
    ]) {
      expect([line, DIRECT_CALL.test(line) || ALIAS.test(line)]).toEqual([line, false]);
    }
  });

  it('no package source calls a hook but through HookCaller', () => {
    expect(directHookCalls()).toEqual([]);
  });

  it('lists every place that calls user hooks', () => {
    const callers = packageSources()
      .filter((file) => !file.endsWith('hook-caller.ts'))
      .filter((file) => readFileSync(file, 'utf8').includes('new HookCaller('))
      .map((file) => relative(PACKAGES_DIR, file))
      .sort();
    // A limiter's guard (RateLimiter and ConcurrencyLimiter hooks), the shadow middleware's
    // wrapper of them, and the OpenTelemetry hooks that call the user's own after recording.
    expect(callers).toEqual([
      'core/src/http/shadow.ts',
      'core/src/store-guard.ts',
      'opentelemetry/src/index.ts',
    ]);
  });
});

describe('HookCaller', () => {
  const codesDuring = async (run: () => void) => {
    const spy = jest.spyOn(process, 'emitWarning').mockImplementation(() => undefined);
    try {
      run();
      await new Promise((resolve) => setTimeout(resolve, 10));
      return spy.mock.calls.map((c) => (c[1] as { code?: string } | undefined)?.code);
    } finally {
      spy.mockRestore();
    }
  };

  it('calls the hook with its arguments and `this`, and skips a missing one', async () => {
    const seen: unknown[] = [];
    const hooks = {
      tag: 'mine',
      onStoreCall(this: { tag: string }, event: unknown) {
        seen.push([this.tag, event]);
      },
    };
    const caller = new HookCaller('test');
    caller.call(hooks, 'onStoreCall', 1);
    caller.call(hooks as { onDecision?: () => void }, 'onDecision');
    caller.call(undefined as { onDecision?: () => void } | undefined, 'onDecision');
    expect(seen).toEqual([['mine', 1]]);
  });

  it('reports a throw or a rejection once per caller, and never throws', async () => {
    const caller = new HookCaller('test');
    const hooks = {
      onDecision: () => {
        throw new Error('sync');
      },
      onStoreError: async () => {
        throw new Error('async');
      },
    };
    const codes = await codesDuring(() => {
      caller.call(hooks, 'onStoreError');
      caller.call(hooks, 'onDecision');
      caller.call(hooks, 'onStoreError');
    });
    expect(codes).toEqual(['FLOODGATE_HOOK_ERROR']);
    const other = await codesDuring(() => new HookCaller('other').call(hooks, 'onDecision'));
    expect(other).toEqual(['FLOODGATE_HOOK_ERROR']);
  });
});
