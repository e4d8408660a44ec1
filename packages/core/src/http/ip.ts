/**
 * Client addresses as rate-limit keys. One IPv6 host usually owns a whole prefix (ISPs hand out
 * /48 to /64), so keying on the full address lets one client rotate through 2^64 keys; keys are
 * therefore the /56 the address belongs to by default. IPv4-mapped IPv6 (`::ffff:1.2.3.4`, what a
 * dual-stack socket reports for IPv4 peers) is folded to plain IPv4 so both spellings share a key.
 */
import { configError } from '../options.js';

/** Prefix length IPv6 addresses are grouped by. @default 56 */
export const DEFAULT_IPV6_SUBNET = 56;
/** Narrowest and widest accepted `ipv6Subnet`. */
export const MIN_IPV6_SUBNET = 32;
export const MAX_IPV6_SUBNET = 64;

/** Validates an `ipv6Subnet` option: an integer from 32 to 64 (undefined → the default). */
export function parseIpv6Subnet(value: unknown, field: string): number {
  if (value === undefined) return DEFAULT_IPV6_SUBNET;
  if (
    typeof value !== 'number' ||
    !Number.isInteger(value) ||
    value < MIN_IPV6_SUBNET ||
    value > MAX_IPV6_SUBNET
  ) {
    throw configError(field, value, `an integer from ${MIN_IPV6_SUBNET} to ${MAX_IPV6_SUBNET}`);
  }
  return value;
}

/**
 * The key part for a client address: IPv4 as is (`203.0.113.7`), IPv4-mapped IPv6 folded to
 * IPv4, any other IPv6 as its subnet in RFC 5952 form (`2001:db8:0:ab00::/56`). Anything that is
 * not an IP address answers `undefined` (the caller then tries the next key source).
 */
export function normalizeIp(
  address: string | undefined | null,
  ipv6Subnet: number = DEFAULT_IPV6_SUBNET,
): string | undefined {
  if (typeof address !== 'string' || address === '') return undefined;
  const ipv4 = parseIpv4(address);
  if (ipv4 !== undefined) return ipv4.join('.');
  const zone = address.indexOf('%');
  const groups = parseIpv6(zone === -1 ? address : address.slice(0, zone));
  if (groups === undefined) return undefined;
  if (groups.slice(0, 5).every((g) => g === 0) && groups[5] === 0xffff) {
    const high = groups[6]!;
    const low = groups[7]!;
    return `${high >> 8}.${high & 0xff}.${low >> 8}.${low & 0xff}`;
  }
  for (let i = 0; i < 8; i++) {
    const keep = Math.min(16, Math.max(0, ipv6Subnet - i * 16));
    groups[i] = keep === 0 ? 0 : groups[i]! & (0xffff << (16 - keep)) & 0xffff;
  }
  return `${formatIpv6(groups)}/${ipv6Subnet}`;
}

/** An address as numbers, for matching against ranges (see `parseIpAddress`). */
export type IpAddressParts =
  | { readonly ipv4: number; readonly ipv6?: undefined }
  | { readonly ipv4?: undefined; readonly ipv6: readonly number[] };

/**
 * `address` as numbers: IPv4 (and IPv4-mapped IPv6, folded) as one unsigned 32-bit integer,
 * other IPv6 as its eight 16-bit groups (a `%zone` dropped); undefined when it is not an address.
 * The same strict parsing as `normalizeIp`, without building strings.
 */
export function parseIpAddress(address: string | undefined | null): IpAddressParts | undefined {
  if (typeof address !== 'string' || address === '') return undefined;
  const ipv4 = parseIpv4(address);
  if (ipv4 !== undefined) return { ipv4: toUint32(ipv4) };
  const zone = address.indexOf('%');
  const groups = parseIpv6(zone === -1 ? address : address.slice(0, zone));
  if (groups === undefined) return undefined;
  if (groups.slice(0, 5).every((g) => g === 0) && groups[5] === 0xffff) {
    return { ipv4: ((groups[6]! << 16) | groups[7]!) >>> 0 };
  }
  return { ipv6: groups };
}

function toUint32(octets: readonly number[]): number {
  return ((octets[0]! << 24) | (octets[1]! << 16) | (octets[2]! << 8) | octets[3]!) >>> 0;
}

function parseIpv4(text: string): number[] | undefined {
  const parts = text.split('.');
  if (parts.length !== 4) return undefined;
  const octets: number[] = [];
  for (const part of parts) {
    // No leading zeros: `010` is octal to some parsers and decimal to others.
    if (!/^(0|[1-9]\d{0,2})$/.test(part)) return undefined;
    const n = Number(part);
    if (n > 255) return undefined;
    octets.push(n);
  }
  return octets;
}

function parseIpv6(text: string): number[] | undefined {
  if (!/^[0-9a-fA-F:.]+$/.test(text)) return undefined;
  const halves = text.split('::');
  if (halves.length > 2) return undefined;
  const head = halves[0] === '' ? [] : halves[0]!.split(':');
  const tail = halves.length === 2 && halves[1] !== '' ? halves[1]!.split(':') : [];
  const groups = (parts: string[]): number[] | undefined => {
    const out: number[] = [];
    for (let i = 0; i < parts.length; i++) {
      const part = parts[i]!;
      if (i === parts.length - 1 && part.includes('.')) {
        const v4 = parseIpv4(part);
        if (v4 === undefined) return undefined;
        out.push((v4[0]! << 8) | v4[1]!, (v4[2]! << 8) | v4[3]!);
      } else if (/^[0-9a-fA-F]{1,4}$/.test(part)) {
        out.push(Number.parseInt(part, 16));
      } else {
        return undefined;
      }
    }
    return out;
  };
  // An embedded IPv4 may only end the address, never stand before `::`.
  if (halves.length === 2 && head.some((p) => p.includes('.'))) return undefined;
  const first = groups(head);
  const last = groups(tail);
  if (first === undefined || last === undefined) return undefined;
  if (halves.length === 1) return first.length === 8 ? first : undefined;
  const missing = 8 - first.length - last.length;
  if (missing < 1) return undefined;
  return [...first, ...new Array<number>(missing).fill(0), ...last];
}

/** RFC 5952: lower case, no leading zeros, the longest run (≥ 2) of zero groups as `::`. */
function formatIpv6(groups: number[]): string {
  let bestStart = -1;
  let bestLength = 1;
  for (let i = 0; i < 8; ) {
    if (groups[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && groups[j] === 0) j++;
    if (j - i > bestLength) {
      bestStart = i;
      bestLength = j - i;
    }
    i = j;
  }
  const hex = groups.map((g) => g.toString(16));
  if (bestStart === -1) return hex.join(':');
  return `${hex.slice(0, bestStart).join(':')}::${hex.slice(bestStart + bestLength).join(':')}`;
}
