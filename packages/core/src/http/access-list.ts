/**
 * `allow` and `deny`: requests from listed clients skip the limiter (allow) or are refused with a
 * 403 before it (deny). A list is IPs and CIDR blocks, matched against the client address the
 * key source `'ip'` would use (the framework's trusted-proxy rules, then `ipHeader`), IPv4-mapped
 * IPv6 folded to IPv4 on both sides; or a predicate of the request. Neither ever reaches the
 * store. `deny` is checked first: a banned address inside an allowed network stays banned.
 */
import type ipaddr from 'ipaddr.js';
import { configError, optionNames } from '../options.js';
import type { Diagnostics } from './diagnostics.js';
import { type IpAddressParts, parseIpAddress } from './ip.js';
import { addressFromIpHeader, type IpHeaderRule, parseRange } from './ip-header.js';
import { checkProxySetup } from './keys.js';
import { PROBLEM_CONTENT_TYPE } from './problem.js';
import type { HttpRequestView } from './types.js';

/** An `allow` or `deny` list: IPs and CIDRs, or a predicate of the framework's request. */
export type AccessListOption<Req> = readonly string[] | ((req: Req) => boolean | Promise<boolean>);

/** The adapters' `allow` and `deny` options. */
export interface AccessOptions<Req> {
  /**
   * Requests from these addresses/networks (or for which the predicate answers true) skip the
   * limiter: not counted, no rate-limit headers. E.g. `['10.0.0.0/8', '::1']`.
   */
  allow?: AccessListOption<Req>;
  /**
   * Requests from these addresses/networks (or for which the predicate answers true) get a 403
   * problem response and never reach the store. Checked before `allow`.
   */
  deny?: AccessListOption<Req>;
}

/** Every AccessOptions name, checked against the type. */
export const ACCESS_OPTION_NAMES = optionNames<AccessOptions<unknown>>({ allow: true, deny: true });

/**
 * A list's ranges as numbers (matched per request without parsing them again): IPv4 networks
 * as [network, prefix length] (IPv4-mapped IPv6 ranges folded in), IPv6 as [groups, length].
 */
export interface AccessRanges {
  readonly ipv4: readonly (readonly [number, number])[];
  readonly ipv6: readonly (readonly [readonly number[], number])[];
}

type MutableRanges = { -readonly [K in keyof AccessRanges]: AccessRanges[K][number][] };

/** A parsed list: ranges, or a predicate. */
export type AccessList<Req> =
  | { readonly kind: 'ranges'; readonly ranges: AccessRanges }
  | { readonly kind: 'predicate'; readonly predicate: (req: Req) => boolean | Promise<boolean> };

/** Parsed `allow` and `deny` (undefined: not given). */
export interface AccessConfig<Req> {
  readonly allow: AccessList<Req> | undefined;
  readonly deny: AccessList<Req> | undefined;
}

/**
 * Reads one list. A malformed entry throws RateLimitConfigError naming it (`rateLimit.deny[2]`).
 */
export function parseAccessList<Req>(value: unknown, field: string): AccessList<Req> | undefined {
  if (value === undefined) return undefined;
  if (typeof value === 'function') {
    return { kind: 'predicate', predicate: value as (req: Req) => boolean | Promise<boolean> };
  }
  if (!Array.isArray(value)) {
    throw configError(
      field,
      value,
      "a list of IPs and CIDRs (e.g. ['10.0.0.0/8', '2001:db8::/32']) or a function (req) => boolean",
    );
  }
  const ranges = { ipv4: [], ipv6: [] } as MutableRanges;
  for (const [i, entry] of value.entries()) addRange(ranges, parseRange(entry, `${field}[${i}]`));
  return Object.freeze({ kind: 'ranges', ranges: Object.freeze(ranges) as AccessRanges });
}

/** Reads `allow` and `deny` out of an options object (own properties, other names ignored). */
export function parseAccessOptions<Req>(
  options: Readonly<Record<string, unknown>>,
  where: string,
): AccessConfig<Req> {
  return {
    allow: parseAccessList<Req>(options.allow, `${where}.allow`),
    deny: parseAccessList<Req>(options.deny, `${where}.deny`),
  };
}

/** Adds one parsed range; `::ffff:10.0.0.0/104` is `10.0.0.0/8` (clients are folded too). */
function addRange(
  ranges: MutableRanges,
  [address, bits]: [ipaddr.IPv4 | ipaddr.IPv6, number],
): void {
  if (address.kind() === 'ipv4') {
    const [a, b, c, d] = address.toByteArray() as [number, number, number, number];
    ranges.ipv4.push([((a << 24) | (b << 16) | (c << 8) | d) >>> 0, bits]);
    return;
  }
  const groups = (address as ipaddr.IPv6).parts;
  if ((address as ipaddr.IPv6).isIPv4MappedAddress() && bits >= 96) {
    ranges.ipv4.push([((groups[6]! << 16) | groups[7]!) >>> 0, bits - 96]);
  } else {
    ranges.ipv6.push([Object.freeze([...groups]), bits]);
  }
}

/**
 * The client address as the `'ip'` key source sees it: the framework's (after its trusted-proxy
 * rules), replaced by an `ipHeader` value from a trusted CDN; IPv4-mapped IPv6 folded to IPv4,
 * an IPv6 zone dropped. Undefined when there is no parseable address.
 */
export function clientAddress(
  ipHeaders: readonly IpHeaderRule[],
  view: Pick<HttpRequestView, 'ip' | 'headers'>,
): IpAddressParts | undefined {
  return parseIpAddress(addressFromIpHeader(ipHeaders, view.ip, view.headers) ?? view.ip);
}

/** Whether a request is on `list` (a predicate's error propagates). */
export async function onAccessList<Req>(
  list: AccessList<Req>,
  address: IpAddressParts | undefined,
  req: Req,
): Promise<boolean> {
  if (list.kind === 'predicate') return (await list.predicate(req)) === true;
  return address !== undefined && inRanges(list.ranges, address);
}

/** Whether `address` lies in one of `ranges` (integer prefix comparisons). */
function inRanges(ranges: AccessRanges, address: IpAddressParts): boolean {
  if (address.ipv4 !== undefined) {
    const ip = address.ipv4;
    // A shift by 32 is a shift by 0 in JavaScript: /0 is tested apart.
    return ranges.ipv4.some(([net, bits]) => bits === 0 || (ip ^ net) >>> (32 - bits) === 0);
  }
  const groups = address.ipv6;
  return ranges.ipv6.some(([net, bits]) => {
    for (let i = 0; i < 8 && bits > i * 16; i++) {
      const keep = Math.min(16, bits - i * 16);
      if (((groups[i]! ^ net[i]!) & ((0xffff << (16 - keep)) & 0xffff)) !== 0) return false;
    }
    return true;
  });
}

/**
 * `'deny'` when the request is on `deny`, else `'allow'` when it is on `allow`, else undefined.
 * A predicate that throws or rejects propagates (adapters hand it to the framework's error
 * handling: a broken list never lets a request through unlimited).
 */
export async function checkAccess<Req>(
  config: AccessConfig<Req> & {
    readonly ipHeaders: readonly IpHeaderRule[];
    /** The middleware's diagnostics: the proxy checks run when a list matches addresses. */
    readonly diagnostics?: Diagnostics;
  },
  view: HttpRequestView,
  req: Req,
): Promise<'allow' | 'deny' | undefined> {
  if (config.deny === undefined && config.allow === undefined) return undefined;
  const fromCdn = addressFromIpHeader(config.ipHeaders, view.ip, view.headers);
  // An address list is only as good as the address: a middleware keyed by something else
  // (a client id) never runs the 'ip' key's proxy checks, so a forgeable address (every hop
  // trusted) or a proxy's own (none trusted) would reach the lists unreported.
  if (
    fromCdn === undefined &&
    config.diagnostics !== undefined &&
    (config.deny?.kind === 'ranges' || config.allow?.kind === 'ranges')
  ) {
    checkProxySetup(config.diagnostics, view);
  }
  const address = parseIpAddress(fromCdn ?? view.ip);
  if (config.deny !== undefined && (await onAccessList(config.deny, address, req))) return 'deny';
  if (config.allow !== undefined && (await onAccessList(config.allow, address, req))) {
    return 'allow';
  }
  return undefined;
}

/**
 * Problem type URI of a request refused by `deny`. A `tag:` URI (RFC 4151), like
 * STORE_UNAVAILABLE_TYPE: an identifier, not a page to fetch.
 */
export const ACCESS_DENIED_TYPE = 'tag:floodgate.dev,2026:problem:access-denied';

/** RFC 9457 body of the 403 answered to a request on `deny`. */
export interface AccessDeniedProblem {
  readonly type: typeof ACCESS_DENIED_TYPE;
  readonly title: 'Forbidden';
  readonly status: 403;
  readonly detail: string;
}

/** The problem body of a request refused by `deny` (it says nothing about the list itself). */
export function accessDeniedProblem(): AccessDeniedProblem {
  return {
    type: ACCESS_DENIED_TYPE,
    title: 'Forbidden',
    status: 403,
    detail: 'Requests from this client are not accepted.',
  };
}

/**
 * Thrown by `checkHttpRequest` for a request on `deny`, before any store call. The adapters
 * answer it with `status`, `contentType` and `problem`, as they do UnknownAppKeyError (Nest: a
 * ForbiddenException with the problem as its body).
 */
export class AccessDeniedError extends Error {
  override readonly name = 'AccessDeniedError';
  readonly code = 'FLOODGATE_ACCESS_DENIED';
  readonly status = 403;
  readonly contentType = PROBLEM_CONTENT_TYPE;
  readonly problem: AccessDeniedProblem = accessDeniedProblem();
  constructor() {
    super('The client of this request is on the deny list');
  }
}
