/**
 * Redis error replies read by their code (`NOSCRIPT`, `OOM`, `WRONGTYPE`, …), never by their
 * wording: servers reword messages (Valkey moved Lua into a module and changed its texts) and
 * clients wrap them (valkey-glide answers `FOO: text`, or `… - NoScriptError: …` for NOSCRIPT).
 */

/** valkey-glide names some replies by the kind its Rust core gives them, not by their code. */
const KIND_CODES: Readonly<Record<string, string>> = {
  NoScriptError: 'NOSCRIPT',
  BusyLoadingError: 'LOADING',
  ReadOnly: 'READONLY',
  ExecAbortError: 'EXECABORT',
  TryAgain: 'TRYAGAIN',
  ClusterDown: 'CLUSTERDOWN',
  CrossSlot: 'CROSSSLOT',
  MasterDown: 'MASTERDOWN',
  NotBusy: 'NOTBUSY',
};

/**
 * The code of a Redis error reply (its first word, upper case), as any supported client hands
 * it over; `undefined` for anything else (a closed connection, a timeout, a non-Error).
 */
export function redisErrorCode(error: unknown): string | undefined {
  const message = (error as Error | undefined)?.message;
  if (typeof message !== 'string') return undefined;
  const kind = /(?:^|- )([A-Za-z]+)(?:Error)?: /.exec(message);
  if (kind) {
    const named = KIND_CODES[kind[1]!] ?? KIND_CODES[`${kind[1]}Error`];
    if (named !== undefined) return named;
  }
  const code = /^([A-Z][A-Z0-9_-]*)(?::? |:?$)/.exec(message)?.[1];
  // Redis before 7 wraps an error raised inside a script: `ERR Error running script … -OOM …`.
  if (code === 'ERR') return /^ERR Error running script.*?: -([A-Z]+) /.exec(message)?.[1] ?? code;
  return code;
}

/**
 * EVALSHA of a script the node does not hold (a restart, SCRIPT FLUSH, a failover), or FCALL of a
 * function it does not hold (FunctionNotLoadedError).
 */
export function isNoScript(error: unknown): boolean {
  return error instanceof FunctionNotLoadedError || redisErrorCode(error) === 'NOSCRIPT';
}

/**
 * FCALL of a function the node does not hold (a restart without persistence, FUNCTION FLUSH, a
 * node that joined later). Redis and Valkey answer it with the generic code `ERR`, so this one
 * reply is told by its text, `Function not found`.
 */
export function isFunctionNotFound(error: unknown): boolean {
  const message = (error as Error | undefined)?.message;
  return typeof message === 'string' && /\bfunction not found\b/i.test(message);
}

/**
 * What a store in `scripts: 'functions'` mode (redis-functions.ts) answers for an FCALL whose
 * function the node does not hold: read as NOSCRIPT by `isNoScript`, so the store takes the
 * same path as after an EVALSHA's NOSCRIPT (the library loaded, the call sent again, once).
 */
export class FunctionNotLoadedError extends Error {
  override readonly name = 'FunctionNotLoadedError';
}
