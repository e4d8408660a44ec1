/**
 * Criticality classes and the share of the limit each may fill: lower classes are shed first,
 * and the top of the limit stays reserved for critical traffic (Stripe's load shedders keep
 * capacity for critical requests the same way).
 */
import { RateLimitArgumentError } from '../errors.js';
import { configError } from '../options.js';
import { permilleOption, SCALE } from './limit-algorithm.js';

/** How much a request matters when the service is overloaded. */
export type Criticality = 'critical' | 'default' | 'sheddable';

/** The classes, most important first. */
export const CRITICALITIES: readonly Criticality[] = ['critical', 'default', 'sheddable'];

/** @default 0.2: the top fifth of the limit admits critical requests only. */
export const DEFAULT_CRITICAL_RESERVE = 0.2;
/** @default 0.1: the next tenth admits critical and default requests, never sheddable ones. */
export const DEFAULT_DEFAULT_RESERVE = 0.1;

/** The reserves in thousandths of the limit. */
export interface Reserves {
  readonly critical: number;
  readonly default: number;
}

/** Reads `criticalReserve` and `defaultReserve`; together they must leave sheddable traffic some share. */
export function readReserves(o: Record<string, unknown>, where: string): Reserves {
  const critical = permilleOption(o.criticalReserve, `${where}.criticalReserve`, 200, 0, 999);
  const def = permilleOption(o.defaultReserve, `${where}.defaultReserve`, 100, 0, 999);
  if (critical + def > 999) {
    const field = o.defaultReserve === undefined ? 'criticalReserve' : 'defaultReserve';
    throw configError(
      `${where}.${field}`,
      o[field],
      `a share that leaves sheddable requests some of the limit (criticalReserve + defaultReserve < 1; defaultReserve defaults to 0.1)`,
    );
  }
  return { critical, default: def };
}

/**
 * The most requests of `criticality` (and above) that may be in flight under `limit`: all of it
 * for critical, less the critical reserve for default, less both reserves for sheddable
 * (rounded down).
 */
export function ceilingOf(limit: number, criticality: Criticality, reserves: Reserves): number {
  if (criticality === 'critical') return limit;
  const reserved =
    criticality === 'default' ? reserves.critical : reserves.critical + reserves.default;
  return Math.floor((limit * (SCALE - reserved)) / SCALE);
}

/** Checks a call's `criticality` (default: 'default'). */
export function readCriticality(value: unknown): Criticality {
  if (value === undefined) return 'default';
  if (typeof value === 'string' && (CRITICALITIES as readonly string[]).includes(value)) {
    return value as Criticality;
  }
  throw new RateLimitArgumentError(
    'criticality',
    value,
    `criticality must be 'critical', 'default' or 'sheddable', got ${String(value)}`,
  );
}
