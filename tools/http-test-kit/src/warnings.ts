/** warningsDuring: the FLOODGATE_ warning codes a piece of work gave, for diagnostics tests. */

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
