/**
 * `ipHeader`: the client address a CDN puts in a header of its own (Cloudflare
 * `CF-Connecting-IP`, Fastly `Fastly-Client-IP`, CloudFront `CloudFront-Viewer-Address`). Anyone
 * can send such a header, so it is believed only when the request comes from one of the CDN's
 * ranges (`trustedFrom`), checked against the address the framework sees as the peer (the socket
 * address, or the hop before your own trusted proxies). Otherwise it is ignored and the normal
 * address is used. CIDR parsing and matching are ipaddr.js's.
 */
import ipaddr from 'ipaddr.js';
import { configError } from '../options.js';

/** One CDN header and the ranges it is believed from. */
export interface IpHeaderOption {
  /** The header, e.g. `'cf-connecting-ip'` (case-insensitive). */
  name: string;
  /** CIDRs (or single addresses) of the CDN's edge, e.g. Cloudflare's published ranges. */
  trustedFrom: readonly string[];
}

/** A parsed `ipHeader` entry. */
export interface IpHeaderRule {
  /** Lower-case header name. */
  readonly name: string;
  readonly ranges: readonly [ipaddr.IPv4 | ipaddr.IPv6, number][];
}

const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;

/** Whether `name` is a valid HTTP field name (RFC 9110 §5.1: a token). */
export function isHeaderName(name: unknown): name is string {
  return typeof name === 'string' && TOKEN.test(name);
}

/** Reads `ipHeader`: one `{ name, trustedFrom }` or a list of them (undefined → none). */
export function parseIpHeaderOption(value: unknown, field: string): readonly IpHeaderRule[] {
  if (value === undefined) return [];
  const list = Array.isArray(value) ? value : [value];
  if (list.length === 0)
    throw configError(field, value, '{ name, trustedFrom } or a non-empty list');
  return Object.freeze(
    list.map((entry, i) => parseRule(entry, Array.isArray(value) ? `${field}[${i}]` : field)),
  );
}

function parseRule(entry: unknown, field: string): IpHeaderRule {
  if (entry === null || typeof entry !== 'object' || Array.isArray(entry)) {
    throw configError(field, entry, "{ name: 'cf-connecting-ip', trustedFrom: [CIDRs] }");
  }
  for (const key of Reflect.ownKeys(entry)) {
    if (key !== 'name' && key !== 'trustedFrom') {
      throw configError(
        `${field}.${String(key)}`,
        (entry as Record<PropertyKey, unknown>)[key],
        'not an option (name, trustedFrom)',
      );
    }
  }
  const name = Object.hasOwn(entry, 'name') ? (entry as { name: unknown }).name : undefined;
  if (!isHeaderName(name)) throw configError(`${field}.name`, name, 'a header name');
  const trusted = Object.hasOwn(entry, 'trustedFrom')
    ? (entry as { trustedFrom: unknown }).trustedFrom
    : undefined;
  if (!Array.isArray(trusted) || trusted.length === 0) {
    throw configError(
      `${field}.trustedFrom`,
      trusted,
      'a non-empty list of CIDRs, e.g. ["173.245.48.0/20"]',
    );
  }
  const ranges = trusted.map((cidr, i) => parseRange(cidr, `${field}.trustedFrom[${i}]`));
  return Object.freeze({ name: name.toLowerCase(), ranges: Object.freeze(ranges) });
}

/**
 * One CIDR (or a single address, as /32 or /128) read strictly: four-part decimal IPv4 only,
 * a decimal prefix length; anything else throws RateLimitConfigError naming `field`.
 */
export function parseRange(cidr: unknown, field: string): [ipaddr.IPv4 | ipaddr.IPv6, number] {
  const expected = 'a CIDR such as "173.245.48.0/20" or "2400:cb00::/32", or one address';
  if (typeof cidr !== 'string') throw configError(field, cidr, expected);
  const [address = '', bits] = cidr.trim().split('/');
  // Four-part decimal only: `10.1` or `0x0a.0.0.1` are valid to inet_aton, and a surprise here.
  if (
    address.includes('.') &&
    !address.includes(':') &&
    !ipaddr.IPv4.isValidFourPartDecimal(address)
  ) {
    throw configError(field, cidr, expected);
  }
  try {
    if (bits === undefined) {
      const ip = ipaddr.parse(address);
      return [ip, ip.kind() === 'ipv4' ? 32 : 128];
    }
    if (!/^\d{1,3}$/.test(bits)) throw new Error('bad prefix length');
    return ipaddr.parseCIDR(`${address}/${bits}`);
  } catch {
    throw configError(field, cidr, expected);
  }
}

/**
 * The client address from the first rule whose header is present and whose ranges hold `peer`
 * (the address the framework resolved); undefined when none applies or the header holds no
 * address. CloudFront's `ip:port` (and `[ipv6]:port`) forms are accepted.
 */
export function addressFromIpHeader(
  rules: readonly IpHeaderRule[],
  peer: string | undefined,
  headers: Readonly<Record<string, string | string[] | undefined>>,
): string | undefined {
  if (rules.length === 0 || peer === undefined) return undefined;
  let from: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    from = ipaddr.process(peer.includes('%') ? peer.slice(0, peer.indexOf('%')) : peer);
  } catch {
    return undefined;
  }
  for (const rule of rules) {
    const raw = headers[rule.name];
    const value = (Array.isArray(raw) ? raw[0] : raw)?.split(',')[0]?.trim();
    if (value === undefined || value === '') continue;
    if (!rule.ranges.some((range) => inRange(from, range))) continue;
    return clientAddress(value);
  }
  return undefined;
}

/** Whether `address` lies in `range` (an address of the other family never does). */
export function inRange(
  address: ipaddr.IPv4 | ipaddr.IPv6,
  range: readonly [ipaddr.IPv4 | ipaddr.IPv6, number],
): boolean {
  if (address.kind() !== range[0].kind()) return false;
  return address.match(range[0] as never, range[1]);
}

function clientAddress(value: string): string | undefined {
  if (ipaddr.isValid(value)) return value;
  const bracketed = /^\[([^\]]+)\]:\d{1,5}$/.exec(value)?.[1];
  if (bracketed !== undefined) return ipaddr.IPv6.isValid(bracketed) ? bracketed : undefined;
  const withPort = /^(.+):\d{1,5}$/.exec(value)?.[1];
  return withPort !== undefined && ipaddr.isValid(withPort) ? withPort : undefined;
}
