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

/** EVALSHA of a script the node does not hold (a restart, SCRIPT FLUSH, a failover). */
export function isNoScript(error: unknown): boolean {
  return redisErrorCode(error) === 'NOSCRIPT';
}
