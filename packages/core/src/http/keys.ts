/**
 * Who is asking: rate-limit keys from an HTTP request. Each adapter fills in a small,
 * framework-neutral view of its request; the key sources read that view, and user functions
 * get the framework's own request object.
 *
 * Keys carry the source as a prefix (`ip:203.0.113.7`, `app:<appKey>`, `client:<id>`), so an
 * appKey can never collide with an address. A function's result is used as it is.
 */
import { describeValue, RateLimitArgumentError } from '../errors.js';
import { configError, optionNames } from '../options.js';
import {
  demoteUnverifiedAppKey,
  parseUnknownAppKey,
  parseVerifyAppKey,
  type UnknownAppKeyAction,
  UnknownAppKeyError,
  type VerifyAppKey,
} from './app-key.js';
import { type Diagnostics, parseValidateOption, type ValidateOption } from './diagnostics.js';
import { normalizeIp, parseIpv6Subnet } from './ip.js';
import {
  addressFromIpHeader,
  type IpHeaderOption,
  type IpHeaderRule,
  isHeaderName,
  parseIpHeaderOption,
} from './ip-header.js';
import type { HttpRequestView } from './types.js';

/** Built-in key sources. */
export type KeyName = 'ip' | 'appKey' | 'clientId';
/** A key function: a string, or `undefined` when this source has no key for the request. */
export type KeyFunction<Req> = (
  req: Req,
) => string | undefined | null | Promise<string | undefined | null>;
/** One key source. */
export type KeySource<Req> = KeyName | KeyFunction<Req>;

/** Options that shape key resolution (shared by every adapter). */
export interface KeyOptions<Req> {
  /** Where the key comes from; an array is tried in order until one yields a key. @default 'ip' */
  key?: KeySource<Req> | readonly KeySource<Req>[];
  /**
   * Key used when no source yields one: every such request shares this one bucket, so a
   * request is never let through unlimited. @default 'fallback:unidentified'
   */
  fallbackKey?: string;
  /** Header the `appKey` source reads. @default 'x-app-key' */
  appKeyHeader?: string;
  /** Query parameter the `appKey` source reads when the header is absent; `false` for none. @default 'appKey' */
  appKeyQuery?: string | false;
  /** Getter for the `clientId` source. @default `user.id ?? user.clientId` of the principal */
  clientId?: (req: Req) => string | number | undefined | null;
  /** Prefix length IPv6 addresses are grouped by, 32 to 64. @default 56 */
  ipv6Subnet?: number;
  /**
   * Says whether an app key is one you issued. Without it, `'appKey'` never outranks `'ip'`
   * (a later `'ip'` is tried first) and FLOODGATE_UNVERIFIED_APP_KEY is reported once.
   */
  verifyAppKey?: VerifyAppKey<Req>;
  /** An app key that does not verify: try the next source, or refuse with a 403. @default 'next' */
  unknownAppKey?: UnknownAppKeyAction;
  /**
   * A CDN's client-IP header, believed only from the CDN's ranges:
   * `{ name: 'cf-connecting-ip', trustedFrom: [CIDRs] }`, or a list of such.
   */
  ipHeader?: IpHeaderOption | readonly IpHeaderOption[];
  /** Diagnostics: `false` turns them off, `{ CODE: false }` one of them. @default true */
  validate?: ValidateOption;
}

/** @default 'ip' */
export const DEFAULT_KEY_SOURCE: KeyName = 'ip';
/** @default 'fallback:unidentified' */
export const DEFAULT_FALLBACK_KEY = 'fallback:unidentified';
/** @default 'x-app-key' */
export const DEFAULT_APP_KEY_HEADER = 'x-app-key';
/** @default 'appKey' */
export const DEFAULT_APP_KEY_QUERY = 'appKey';
/** Every key option name, checked against KeyOptions. */
export const KEY_OPTION_NAMES = optionNames<KeyOptions<unknown>>({
  key: true,
  fallbackKey: true,
  appKeyHeader: true,
  appKeyQuery: true,
  clientId: true,
  ipv6Subnet: true,
  verifyAppKey: true,
  unknownAppKey: true,
  ipHeader: true,
  validate: true,
});

/** Parsed key options; resolve a key with `resolveKey(config, view, req)`. */
export interface KeyConfig<Req> {
  readonly sources: readonly KeySource<Req>[];
  readonly fallbackKey: string;
  readonly appKeyHeader: string;
  readonly appKeyQuery: string | false;
  readonly clientId: ((req: Req) => unknown) | undefined;
  readonly ipv6Subnet: number;
  readonly verifyAppKey: VerifyAppKey<Req> | undefined;
  readonly unknownAppKey: UnknownAppKeyAction;
  readonly ipHeaders: readonly IpHeaderRule[];
  /** The middleware's diagnostics (each reported once). */
  readonly diagnostics: Diagnostics;
}

const KEY_NAMES: readonly string[] = ['ip', 'appKey', 'clientId'];

/**
 * Reads the key options out of an options object (other names are left to the caller); own
 * properties only.
 */
export function parseKeyOptions<Req>(
  options: Record<string, unknown>,
  where: string,
): KeyConfig<Req> {
  const o: Record<string, unknown> = Object.create(null);
  for (const name of KEY_OPTION_NAMES) if (Object.hasOwn(options, name)) o[name] = options[name];
  const list = o.key === undefined ? [DEFAULT_KEY_SOURCE] : Array.isArray(o.key) ? o.key : [o.key];
  if (list.length === 0)
    throw configError(`${where}.key`, o.key, 'a key source or a non-empty array');
  list.forEach((source, i) => {
    if (typeof source === 'function' || KEY_NAMES.includes(source as string)) return;
    const field = Array.isArray(o.key) ? `${where}.key[${i}]` : `${where}.key`;
    throw configError(
      field,
      source,
      `'ip', 'appKey', 'clientId' or a function (req) => string | undefined`,
    );
  });
  const text = (name: string, fallback: string): string => {
    const v = o[name];
    if (v === undefined) return fallback;
    if (typeof v !== 'string' || v.trim() === '')
      throw configError(`${where}.${name}`, v, 'a non-empty string');
    return v;
  };
  const appKeyQuery = o.appKeyQuery === false ? false : text('appKeyQuery', DEFAULT_APP_KEY_QUERY);
  if (o.clientId !== undefined && typeof o.clientId !== 'function') {
    throw configError(`${where}.clientId`, o.clientId, 'a function (req) => string | undefined');
  }
  const appKeyHeader = text('appKeyHeader', DEFAULT_APP_KEY_HEADER);
  if (!isHeaderName(appKeyHeader)) {
    throw configError(`${where}.appKeyHeader`, appKeyHeader, 'a header name (an RFC 9110 token)');
  }
  const verifyAppKey = parseVerifyAppKey<Req>(o.verifyAppKey, `${where}.verifyAppKey`);
  const diagnostics = parseValidateOption(o.validate, `${where}.validate`);
  const usesAppKey = list.includes('appKey');
  if (!usesAppKey && (o.verifyAppKey !== undefined || o.unknownAppKey !== undefined)) {
    const name = o.verifyAppKey !== undefined ? 'verifyAppKey' : 'unknownAppKey';
    throw configError(`${where}.${name}`, o[name], "used with 'appKey' in key (it is not)");
  }
  if (usesAppKey && verifyAppKey === undefined) {
    diagnostics.warn(
      'FLOODGATE_UNVERIFIED_APP_KEY',
      `${where}: 'appKey' is in the key chain without verifyAppKey, so any client can mint a new ` +
        `bucket per request by sending a fresh app key. ${list.includes('ip') ? "'ip' is tried before 'appKey' until you add verifyAppKey. " : ''}` +
        'Add verifyAppKey: (appKey, req) => isKnownKey(appKey).',
    );
  }
  return {
    sources: Object.freeze(
      demoteUnverifiedAppKey(list, verifyAppKey !== undefined),
    ) as readonly KeySource<Req>[],
    fallbackKey: text('fallbackKey', DEFAULT_FALLBACK_KEY),
    appKeyHeader: appKeyHeader.toLowerCase(),
    appKeyQuery,
    clientId: o.clientId as ((req: Req) => unknown) | undefined,
    ipv6Subnet: parseIpv6Subnet(o.ipv6Subnet, `${where}.ipv6Subnet`),
    verifyAppKey,
    unknownAppKey: parseUnknownAppKey(o.unknownAppKey, `${where}.unknownAppKey`),
    ipHeaders: parseIpHeaderOption(o.ipHeader, `${where}.ipHeader`),
    diagnostics,
  };
}

/**
 * The key for a request: the first source that yields one, else `fallbackKey`. A key function
 * that throws (or rejects) propagates its error: adapters hand it to the framework's error
 * handling, so a broken resolver never lets a request through unlimited. A function that
 * returns something other than a string, `undefined` or `null` throws RateLimitArgumentError.
 */
export async function resolveKey<Req>(
  config: KeyConfig<Req>,
  view: HttpRequestView,
  req: Req,
): Promise<string> {
  return resolveKeyFrom(config, view, req, 0);
}

/** `resolveKey` from the `start`th source on (key-now.ts goes on here once it must await). */
export async function resolveKeyFrom<Req>(
  config: KeyConfig<Req>,
  view: HttpRequestView,
  req: Req,
  start: number,
): Promise<string> {
  for (let i = start; i < config.sources.length; i++) {
    const key = await keyFrom(config, config.sources[i]!, view, req);
    if (key !== undefined) return key;
  }
  return config.fallbackKey;
}

/** A lone UTF-16 surrogate (in Unicode mode a well-formed pair is one code point). */
const LONE_SURROGATE = /\p{Cs}/u;

async function keyFrom<Req>(
  config: KeyConfig<Req>,
  source: KeySource<Req>,
  view: HttpRequestView,
  req: Req,
): Promise<string | undefined> {
  if (typeof source === 'function') return keyOfValue(await source(req));
  if (source === 'ip') return ipKey(config, view);
  if (source === 'appKey') {
    const value =
      first(view.headers[config.appKeyHeader]) ??
      (config.appKeyQuery === false ? undefined : first(view.query?.[config.appKeyQuery]));
    if (value === undefined) return undefined;
    if (config.verifyAppKey === undefined || (await config.verifyAppKey(value, req)) === true) {
      return `app:${value}`;
    }
    if (config.unknownAppKey === 'refuse') throw new UnknownAppKeyError();
    return undefined;
  }
  const id = config.clientId ? await config.clientId(req) : principalId(view.user);
  if (id === undefined || id === null || id === '') {
    if (view.headers.authorization !== undefined) {
      config.diagnostics.warn(
        'FLOODGATE_AUTH_AFTER_LIMITER',
        "A request with an Authorization header resolved no client id for 'clientId': the " +
          'authentication step most likely runs after the rate limiter, so every such client ' +
          'falls through to the next key source (or shares the fallback bucket). Mount the ' +
          'limiter after authentication.',
      );
    }
    return undefined;
  }
  if (typeof id !== 'string' && typeof id !== 'number') {
    throw new RateLimitArgumentError(
      'key',
      id,
      `the clientId getter returned ${describeValue(id)}; expected a string or a number`,
    );
  }
  return `client:${id}`;
}

/**
 * What a key function's result means: a key, or undefined (`undefined`, `null`, `''`) for the
 * next source; anything else throws RateLimitArgumentError.
 */
export function keyOfValue(value: unknown): string | undefined {
  if (value === undefined || value === null || value === '') return undefined;
  if (typeof value !== 'string') {
    throw new RateLimitArgumentError(
      'key',
      value,
      `the key function returned ${describeValue(value)}; expected a string, undefined or null`,
    );
  }
  // Request text can hold lone surrogates (JSON's "\ud800", a slice() through an emoji), which
  // the limiter refuses: a crafted body would be a 500. U+FFFD for each, as UTF-8 has it.
  return LONE_SURROGATE.test(value) ? value.replace(/\p{Cs}/gu, '\uFFFD') : value;
}

/** The `'ip'` source's key (after `ipHeader` and the proxy checks), or undefined. */
export function ipKey<Req>(config: KeyConfig<Req>, view: HttpRequestView): string | undefined {
  const fromCdn = addressFromIpHeader(config.ipHeaders, view.ip, view.headers);
  if (fromCdn === undefined) checkProxySetup(config.diagnostics, view);
  const ip = normalizeIp(fromCdn ?? view.ip, config.ipv6Subnet);
  return ip === undefined ? undefined : `ip:${ip}`;
}

function first(value: unknown): string | undefined {
  const v = Array.isArray(value) ? value[0] : value;
  return typeof v === 'string' && v.trim() !== '' ? v.trim() : undefined;
}

function principalId(user: unknown): unknown {
  if (user === null || typeof user !== 'object') return undefined;
  const u = user as { id?: unknown; clientId?: unknown };
  return u.id ?? u.clientId;
}

/**
 * The proxy diagnostics, checked on each request keyed by its address (each reported once):
 * X-Forwarded-For with no trusted proxy, every hop trusted, and a Forwarded header nobody reads.
 */
export function checkProxySetup(diagnostics: Diagnostics, view: HttpRequestView): void {
  const forwardedFor = view.headers['x-forwarded-for'] !== undefined;
  if (!view.trustProxy && forwardedFor) {
    diagnostics.warn(
      'FLOODGATE_UNTRUSTED_PROXY',
      'A request carries X-Forwarded-For but its sender is not a trusted proxy (none is trusted, ' +
        'or on Fastify not this one), so behind a proxy every client shares one rate limit (the ' +
        'proxy address). Behind N proxies of your own, set Express ' +
        '`app.set("trust proxy", N)` or Koa `app.proxy = true; app.maxIpsCount = N`; on Fastify ' +
        'list the proxies, `trustProxy: "<their addresses or CIDRs>"` (Fastify 5.12 and later ' +
        'ignore a number).',
    );
  }
  if (view.trustsEveryProxy === true) {
    diagnostics.warn(
      'FLOODGATE_PROXY_HOPS',
      'Every proxy hop is trusted (Express `trust proxy` is true, Koa `app.proxy` is on with ' +
        '`maxIpsCount` 0, or Fastify `trustProxy` trusts any address), so the client IP is the ' +
        'leftmost X-Forwarded-For entry, which any client can forge to get a fresh limit per ' +
        'request. Trust exactly your N proxies: Express `app.set("trust proxy", N)`, Koa ' +
        '`app.maxIpsCount = N`, Fastify `trustProxy: "<your proxies\' addresses or CIDRs>"`.',
    );
  }
  if (!forwardedFor && view.headers.forwarded !== undefined) {
    diagnostics.warn(
      'FLOODGATE_FORWARDED_IGNORED',
      'A request carries a Forwarded header but no X-Forwarded-For: Express and Koa read only ' +
        'X-Forwarded-For, so the address in Forwarded is ignored. Make the proxy send ' +
        'X-Forwarded-For (or use ipHeader / a key function).',
    );
  }
}
