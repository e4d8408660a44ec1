/**
 * The registry of algorithms: kind → TypeScript twin. A new algorithm adds its Lua file, its
 * TypeScript file and one line here; the engine, stores and limiter stay as they are.
 */
import type { Algorithm } from './algorithm.js';
import { fixedWindowAlgorithm } from './fixed-window.js';
import { gcraAlgorithm } from './gcra.js';
import { leakyBucketAlgorithm } from './leaky-bucket.js';
import { slidingLogAlgorithm } from './sliding-log.js';
import { slidingWindowAlgorithm } from './sliding-window.js';
import { smoothBurstyAlgorithm } from './smooth-bursty.js';
import { smoothWarmingUpAlgorithm } from './smooth-warming-up.js';
import { tokenBucketAlgorithm } from './token-bucket.js';

export const ALGORITHMS: Readonly<Record<string, Algorithm<unknown>>> = {
  [fixedWindowAlgorithm.kind]: fixedWindowAlgorithm,
  [slidingLogAlgorithm.kind]: slidingLogAlgorithm,
  [tokenBucketAlgorithm.kind]: tokenBucketAlgorithm,
  [gcraAlgorithm.kind]: gcraAlgorithm,
  [smoothBurstyAlgorithm.kind]: smoothBurstyAlgorithm,
  [smoothWarmingUpAlgorithm.kind]: smoothWarmingUpAlgorithm,
  [slidingWindowAlgorithm.kind]: slidingWindowAlgorithm,
  [leakyBucketAlgorithm.kind]: leakyBucketAlgorithm,
};

export type { Algorithm, CheckResult } from './algorithm.js';
