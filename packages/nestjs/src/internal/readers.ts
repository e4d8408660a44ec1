/**
 * Reads `@RateLimit(...)` (one limit or several) and the options the module and the decorator
 * share: `count`, `shadow` and `policies` given as a function. Errors are the core's
 * RateLimitConfigError, naming the controller and handler.
 */
import { fixedWindow, type Policy, RateLimitConfigError } from '@floodgate/core';
import {
  type AccessConfig,
  checkSettleOption,
  configError,
  isCost,
  optionNames,
  parseAccessOptions,
  parseCostOption,
  readAs,
  readOptions,
  type SettleConfig,
} from '@floodgate/core/http';
import type { ExecutionContext } from '@nestjs/common';
import type {
  RateLimitCost,
  RateLimitCount,
  RateLimitKey,
  RateLimitPoliciesOptions,
  RateLimitPolicyFunction,
  RateLimitScope,
  RateLimitWindowOptions,
} from '../rate-limit.interfaces.js';

/** One limit of a `@RateLimit(...)`, parsed. */
export interface ParsedLimit {
  /** The policies; empty when `dynamic` chooses them per request. */
  readonly policies: readonly Policy[];
  readonly dynamic: RateLimitPolicyFunction | undefined;
  readonly key: RateLimitKey | undefined;
  readonly scope: RateLimitScope;
  /** undefined: the module's. */
  readonly count: RateLimitCount | undefined;
  /** undefined: the module's. */
  readonly shadow: boolean | undefined;
  /** This limit's own `allow` and `deny` (the module's apply before every limit). */
  readonly access: AccessConfig<ExecutionContext>;
}

/** One `@RateLimit(...)`, parsed: its limits, and the request's cost and `override`. */
export interface ParsedRateLimit {
  readonly limits: readonly ParsedLimit[];
  readonly cost: RateLimitCost;
  /** `cost: { estimate, actual }`: settle each request at its actual cost after the response. */
  readonly settle: SettleConfig<ExecutionContext, unknown> | undefined;
  readonly override: boolean;
}

/** Every name one limit of `@RateLimit(...)` takes, checked against its two shapes. */
const LIMIT_OPTION_NAMES = optionNames<RateLimitWindowOptions & RateLimitPoliciesOptions>({
  limit: true,
  window: true,
  name: true,
  anchor: true,
  blockDuration: true,
  policies: true,
  key: true,
  cost: true,
  scope: true,
  override: true,
  count: true,
  shadow: true,
  allow: true,
  deny: true,
});

/** @default 'route' */
export const DEFAULT_SCOPE: RateLimitScope = 'route';
const SCOPES: readonly string[] = ['route', 'controller', 'global'];

/** Reads a `scope` option. */
export function readScope(value: unknown, field: string): RateLimitScope {
  if (value === undefined) return DEFAULT_SCOPE;
  if (!SCOPES.includes(value as string)) {
    throw configError(field, value, "'route', 'controller' or 'global'");
  }
  return value as RateLimitScope;
}

const COUNT_MODES: readonly string[] = ['all', 'failed', 'succeeded'];

/** Reads a `count` option (undefined stays undefined: the default applies). */
export function readCount(value: unknown, field: string): RateLimitCount | undefined {
  if (value === undefined || typeof value === 'function') return value as RateLimitCount;
  if (!COUNT_MODES.includes(value as string)) {
    throw configError(
      field,
      value,
      "'all', 'failed', 'succeeded' or a function (context, response) => boolean",
    );
  }
  return value as RateLimitCount;
}

/** Reads a `shadow` option. */
export function readShadow(value: unknown, field: string): boolean | undefined {
  if (value !== undefined && typeof value !== 'boolean')
    throw configError(field, value, 'a boolean');
  return value;
}

/** Reads `@RateLimit(...)` options; `where` names the controller or `Controller.handler`. */
export function parseRateLimitOptions(options: unknown, where: string): ParsedRateLimit {
  const field = `@RateLimit(${where})`;
  if (!Array.isArray(options)) {
    const o = readOptions(options, field, LIMIT_OPTION_NAMES);
    return settleChecked(
      {
        limits: [readLimit(o, field)],
        ...readCost(o.cost, o.count, field),
        override: readOverride(o, field),
      },
      field,
    );
  }
  if (options.length === 0) {
    throw new RateLimitConfigError(
      'FLOODGATE_NO_POLICIES',
      `${field}[0]`,
      undefined,
      `${field} was given an empty array: give one limit or several`,
    );
  }
  const all = options.map((each: unknown, i) =>
    readOptions(each, `${field}[${i}]`, LIMIT_OPTION_NAMES),
  );
  all.forEach((o, i) => {
    const late =
      i > 0 ? (['cost', 'override'] as const).find((n) => o[n] !== undefined) : undefined;
    if (late !== undefined) {
      throw new RateLimitConfigError(
        'FLOODGATE_INVALID_OPTION',
        `${field}[${i}].${late}`,
        o[late],
        `${field}[${i}].${late}: a request has one cost and one override; give ${late} on the first limit`,
      );
    }
  });
  return settleChecked(
    {
      limits: all.map((o, i) => readLimit(o, `${field}[${i}]`)),
      ...readCost(all[0]!.cost, all[0]!.count, `${field}[0]`),
      override: readOverride(all[0]!, `${field}[0]`),
    },
    field,
  );
}

/** `cost.actual` needs policies that carry debt (a policies function is checked when it runs). */
function settleChecked(parsed: ParsedRateLimit, field: string): ParsedRateLimit {
  for (const limit of parsed.limits) checkSettleOption(parsed.settle, limit, 'all', field);
  return parsed;
}

function readLimit(o: Record<string, unknown>, field: string): ParsedLimit {
  const shorthand = ['limit', 'window', 'name', 'anchor', 'blockDuration'].filter(
    (n) => o[n] !== undefined,
  );
  let policies: readonly Policy[] = [];
  let dynamic: RateLimitPolicyFunction | undefined;
  if (o.policies !== undefined) {
    if (shorthand.length > 0) {
      throw new RateLimitConfigError(
        'FLOODGATE_INVALID_OPTION',
        `${field}.${shorthand[0]}`,
        o[shorthand[0]!],
        `${field}: give either { limit, window } (one fixed window) or { policies }, not both`,
      );
    }
    if (typeof o.policies === 'function') dynamic = o.policies as RateLimitPolicyFunction;
    else policies = (Array.isArray(o.policies) ? o.policies : [o.policies]) as Policy[];
  } else if (shorthand.length > 0) {
    const window = {
      limit: o.limit,
      window: o.window,
      name: o.name,
      ...(o.anchor === undefined ? {} : { anchor: o.anchor }),
      ...(o.blockDuration === undefined ? {} : { blockDuration: o.blockDuration }),
    } as Parameters<typeof fixedWindow>[0];
    policies = [readAs(window, field, () => fixedWindow(window))];
  } else {
    throw new RateLimitConfigError(
      'FLOODGATE_NO_POLICIES',
      `${field}.limit`,
      undefined,
      `${field} needs { limit, window } (one fixed window) or { policies: [...] }`,
    );
  }
  return {
    policies,
    dynamic,
    key: o.key as RateLimitKey | undefined,
    scope: readScope(o.scope, `${field}.scope`),
    count: readCount(o.count, `${field}.count`),
    shadow: readShadow(o.shadow, `${field}.shadow`),
    access: parseAccessOptions<ExecutionContext>(o, field),
  };
}

function readCost(
  value: unknown,
  count: unknown,
  field: string,
): Pick<ParsedRateLimit, 'cost' | 'settle'> {
  if (value !== null && typeof value === 'object') {
    const { cost, settle } = parseCostOption<ExecutionContext, unknown>(value, field);
    checkSettleOption(settle, undefined, count ?? 'all', field);
    return { cost: cost as RateLimitCost, settle };
  }
  const cost = value === undefined ? 1 : value;
  if (typeof cost !== 'function' && !isCost(cost)) {
    throw configError(
      `${field}.cost`,
      cost,
      'a non-negative integer or a function (context) => number',
    );
  }
  return { cost: cost as RateLimitCost, settle: undefined };
}

function readOverride(o: Record<string, unknown>, field: string): boolean {
  if (o.override !== undefined && typeof o.override !== 'boolean') {
    throw configError(`${field}.override`, o.override, 'a boolean');
  }
  return o.override === true;
}

/** A policy function's answer as an array; anything but policies is a RateLimitConfigError. */
export function policiesOf(value: unknown, field: string): readonly Policy[] {
  const list = Array.isArray(value) ? value : [value];
  if (list.length === 0 || list.some((p) => p === null || typeof p !== 'object')) {
    throw configError(field, value, 'a policy or an array of policies (from the policy factories)');
  }
  return list as Policy[];
}
