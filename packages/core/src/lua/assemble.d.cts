// Types of assemble.cjs, the one assembler of the Redis scripts (the store's and `pnpm generate`'s).

/** A Redis script assembled from lua/: its exact text and the SHA1 that SCRIPT LOAD returns. */
export interface AssembledScript {
  readonly name: string;
  readonly sha1: string;
  /** Algorithms the script can run (ARGV names them per policy); none for a lease script. */
  readonly algorithms: readonly string[];
  /** KEYS per policy: the script takes one base key for each policy of the limiter. */
  readonly keysPerPolicy: 1;
  /** The combined layout (lua/include/combined.lua): KEYS are the caller's state and block keys. */
  readonly combined?: true;
  /**
   * Live limits (lua/include/live.lua): each call's last two KEYS are its overrides and its mark
   * of the override for every key, its last two ARGV their specs; a batch sends neither ARGV.
   */
  readonly live?: true;
  readonly source: string;
}

/** Where a line of an assembled script comes from. */
export interface SourceLine {
  /** The source file, e.g. `lua/gcra.lua`, or the assembler file that wrote the line. */
  readonly file: string;
  readonly line: number;
  /** False when the line is not a copy of that source line (then `line` is the best guess). */
  readonly exact: boolean;
}

/** What the assembler reads: lua/<path> and the `.lua` file names of a folder of lua/. */
export interface LuaFiles {
  read(path: string): string;
  list(dir: string): string[];
}

/** An assembler over one copy of lua/; everything is made when first asked for. */
export interface Assembler {
  kinds(): readonly string[];
  combines(kind: string): boolean;
  script(
    kinds: Iterable<string>,
    options?: { batch?: boolean; combined?: boolean; live?: boolean; node?: boolean },
  ): AssembledScript;
  lease(name: string): AssembledScript;
  leases(): readonly string[];
  /** The store's clock probe (lua/probes/clock.lua), sent alone: TIME as a script sees it. */
  clockProbe(): AssembledScript;
  /** The compare-and-set of a limiter's record for every key (lua/global/change.lua), alone. */
  globalChange(): AssembledScript;
  sourceLine(source: string, line: number): SourceLine;
}

export const ASSEMBLER: string;
export function createAssembler(files: LuaFiles): Assembler;
export function fixedScripts(assembler: Assembler): AssembledScript[];
export function stripComments(text: string): string;
