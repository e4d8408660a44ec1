/** Warnings and unhandled rejections a piece of work gave, for diagnostics and hook tests. */

/** FLOODGATE_ warning codes given (process.emitWarning) while `run` ran, in order. */
export async function warningsDuring(run: () => Promise<void>): Promise<string[]> {
  const spy = jest.spyOn(process, 'emitWarning').mockImplementation(() => undefined);
  try {
    await run();
    return spy.mock.calls
      .map((call) => (call[1] as { code?: string } | undefined)?.code ?? '')
      .filter((code) => code.startsWith('FLOODGATE_'));
  } finally {
    spy.mockRestore();
  }
}

/**
 * Runs `work`, then lets pending rejections surface: the warning codes given meanwhile and the
 * rejections left unhandled (for tests that async user callbacks never crash the process).
 */
export async function observeRejections(
  work: () => Promise<void>,
): Promise<{ codes: (string | undefined)[]; unhandled: unknown[] }> {
  const unhandled: unknown[] = [];
  const onUnhandled = (reason: unknown) => unhandled.push(reason);
  process.on('unhandledRejection', onUnhandled);
  const spy = jest.spyOn(process, 'emitWarning').mockImplementation(() => undefined);
  try {
    await work();
    await new Promise((resolve) => setTimeout(resolve, 20));
    const codes = spy.mock.calls.map((c) => (c[1] as { code?: string } | undefined)?.code);
    return { codes, unhandled };
  } finally {
    spy.mockRestore();
    process.off('unhandledRejection', onUnhandled);
  }
}
