/**
 * The registry of algorithms, keyed by the name of each policy factory: the factory (which makes
 * the policies users pass to a limiter) and the TypeScript twin that decides them in memory.
 * Redis runs `lua/<kind>.lua`, found by the generator from the twin's `kind`. The root entry
 * exports the factories from here; test/meta/algorithm-registry.test.ts checks that the Lua files,
 * the twins, the conformance cases, the README's Policies table and docs/algorithms.md list the
 * same algorithms (CONTRIBUTING.md, "Adding an algorithm").
 */
import type { Policy } from '../policy.js';
import type { Algorithm } from './algorithm.js';
import { fixedWindow, fixedWindowAlgorithm } from './fixed-window.js';
import { gcra, gcraAlgorithm } from './gcra.js';
import { leakyBucket, leakyBucketAlgorithm } from './leaky-bucket.js';
import { slidingLog, slidingLogAlgorithm } from './sliding-log.js';
import { slidingWindow, slidingWindowAlgorithm } from './sliding-window.js';
import { smoothBursty, smoothBurstyAlgorithm } from './smooth-bursty.js';
import { smoothWarmingUp, smoothWarmingUpAlgorithm } from './smooth-warming-up.js';
import { tokenBucket, tokenBucketAlgorithm } from './token-bucket.js';

/** One algorithm: the factory of its policies and its TypeScript twin. */
export interface RegisteredAlgorithm {
  // biome-ignore lint/suspicious/noExplicitAny: each factory takes its own options type.
  readonly factory: (options: any) => Policy;
  // biome-ignore lint/suspicious/noExplicitAny: each twin has its own state and parameters.
  readonly twin: Algorithm<any, any>;
}

export const REGISTRY: Readonly<Record<string, RegisteredAlgorithm>> = {
  fixedWindow: { factory: fixedWindow, twin: fixedWindowAlgorithm },
  slidingLog: { factory: slidingLog, twin: slidingLogAlgorithm },
  tokenBucket: { factory: tokenBucket, twin: tokenBucketAlgorithm },
  gcra: { factory: gcra, twin: gcraAlgorithm },
  smoothBursty: { factory: smoothBursty, twin: smoothBurstyAlgorithm },
  smoothWarmingUp: { factory: smoothWarmingUp, twin: smoothWarmingUpAlgorithm },
  slidingWindow: { factory: slidingWindow, twin: slidingWindowAlgorithm },
  leakyBucket: { factory: leakyBucket, twin: leakyBucketAlgorithm },
};

/** The twins by kind (`fixed-window` → its twin): what the stores look policies up by. */
export const ALGORITHMS: Readonly<Record<string, Algorithm<unknown>>> = Object.freeze(
  Object.fromEntries(
    Object.values(REGISTRY).map(({ twin }): [string, Algorithm<unknown>] => [twin.kind, twin]),
  ),
);

export type { Algorithm, CheckResult } from './algorithm.js';
// The policy factories, as the root entry exports them (the registry test checks the lists agree).
export {
  fixedWindow,
  gcra,
  leakyBucket,
  slidingLog,
  slidingWindow,
  smoothBursty,
  smoothWarmingUp,
  tokenBucket,
};
