/**
 * Who is asking: rate-limit keys from an HTTP request. Each adapter fills in a small,
 * framework-neutral view of its request; the key sources read that view, and user functions
 * get the framework's own request object.
 *
 * Keys carry the source as a prefix (`ip:203.0.113.7`, `app:<appKey>`, `client:<id>`), so an
 * appKey can never collide with an address. A function's result is used as it is.
 */
import { describeValue, emitWarning, RateLimitArgumentError } from '../errors.js';
import { configError, optionNames } from '../options.js';
import { normalizeIp, parseIpv6Subnet } from './ip.js';

/** What the core needs to know about a request; each adapter fills it in. */
export interface HttpRequestView {
  /** Client address as the framework resolved it (after its trusted-proxy rules). */
  readonly ip: string | undefined;
  /** Request headers, names in lower case (Node's `IncomingMessage.headers`). */
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
  /** Parsed query string. */
  readonly query?: Readonly<Record<string, unknown>> | undefined;
  /** The authenticated principal (`req.user`, `ctx.state.user`), if any. */
  readonly user?: unknown;
  /** Whether the framework trusts a proxy (Express `trust proxy`, Koa `app.proxy`). */
  readonly trustProxy: boolean;
}

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
});

/** Parsed key options; resolve a key with `resolveKey(config, view, req)`. */
export interface KeyConfig<Req> {
  readonly sources: readonly KeySource<Req>[];
  readonly fallbackKey: string;
  readonly appKeyHeader: string;
  readonly appKeyQuery: string | false;
  readonly clientId: ((req: Req) => unknown) | undefined;
  readonly ipv6Subnet: number;
  /** Set once the X-Forwarded-For warning was given. */
  warnedUntrustedProxy: boolean;
}

const KEY_NAMES: readonly string[] = ['ip', 'appKey', 'clientId'];

/** Reads the key options out of an options object (other names are left to the caller). */
export function parseKeyOptions<Req>(o: Record<string, unknown>, where: string): KeyConfig<Req> {
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
  return {
    sources: Object.freeze([...list]) as readonly KeySource<Req>[],
    fallbackKey: text('fallbackKey', DEFAULT_FALLBACK_KEY),
    appKeyHeader: text('appKeyHeader', DEFAULT_APP_KEY_HEADER).toLowerCase(),
    appKeyQuery,
    clientId: o.clientId as ((req: Req) => unknown) | undefined,
    ipv6Subnet: parseIpv6Subnet(o.ipv6Subnet, `${where}.ipv6Subnet`),
    warnedUntrustedProxy: false,
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
  for (const source of config.sources) {
    const key = await keyFrom(config, source, view, req);
    if (key !== undefined) return key;
  }
  return config.fallbackKey;
}

async function keyFrom<Req>(
  config: KeyConfig<Req>,
  source: KeySource<Req>,
  view: HttpRequestView,
  req: Req,
): Promise<string | undefined> {
  if (typeof source === 'function') {
    const value = await source(req);
    if (value === undefined || value === null || value === '') return undefined;
    if (typeof value !== 'string') {
      throw new RateLimitArgumentError(
        'key',
        value,
        `the key function returned ${describeValue(value)}; expected a string, undefined or null`,
      );
    }
    return value;
  }
  if (source === 'ip') {
    if (
      !view.trustProxy &&
      !config.warnedUntrustedProxy &&
      view.headers['x-forwarded-for'] !== undefined
    ) {
      config.warnedUntrustedProxy = true;
      emitWarning(
        'FLOODGATE_UNTRUSTED_PROXY',
        'A request carries X-Forwarded-For but no proxy is trusted, so every client behind the proxy ' +
          'shares one rate limit (the proxy address). Set Express `app.set("trust proxy", …)` or Koa ' +
          '`app.proxy = true` if the app runs behind a proxy.',
      );
    }
    const ip = normalizeIp(view.ip, config.ipv6Subnet);
    return ip === undefined ? undefined : `ip:${ip}`;
  }
  if (source === 'appKey') {
    const value =
      first(view.headers[config.appKeyHeader]) ??
      (config.appKeyQuery === false ? undefined : first(view.query?.[config.appKeyQuery]));
    return value === undefined ? undefined : `app:${value}`;
  }
  const id = config.clientId ? await config.clientId(req) : principalId(view.user);
  if (id === undefined || id === null || id === '') return undefined;
  if (typeof id !== 'string' && typeof id !== 'number') {
    throw new RateLimitArgumentError(
      'key',
      id,
      `the clientId getter returned ${describeValue(id)}; expected a string or a number`,
    );
  }
  return `client:${id}`;
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
