/**
 * Proxy trust read from a request whose `ip` getter resolves X-Forwarded-For from `this.raw`
 * with the server's trust setting (Fastify, and NestJS on Fastify), where the setting itself is
 * not readable: whether it trusts every hop is found by asking the framework for the address of
 * a probe request, and whether it trusted this request's peer by its `ips`.
 */
import type { HttpRequestView } from './types.js';

/** A request as Fastify shapes it: the Node request on `raw`, `ip`/`ips` from its trust setting. */
export interface RawBackedRequest {
  readonly raw: unknown;
  readonly ip?: unknown;
  readonly ips?: unknown;
}

// The probe: a peer and 24 forwarded hops, all public documentation addresses (RFC 5737) that
// no proxy of anyone's has. A setting that walks to the leftmost entry trusts any client's
// claim: `true`, a function or a range list that trusts every address, or a hop count of 24 or
// more (Fastify before 5.12; no real chain has that many proxies).
const PROBE_PEER = '198.51.100.250';
const PROBE_CLIENT = '192.0.2.1';
const PROBE_CHAIN = [
  PROBE_CLIENT,
  ...Array.from({ length: 23 }, (_, i) => `203.0.113.${i + 1}`),
].join(', ');

/** Per request prototype (one per Fastify instance and encapsulation context). */
const everyHopByPrototype = new WeakMap<object, boolean>();

/** Whether the server behind `request` believes every X-Forwarded-For hop (cached per server). */
export function trustsEveryHop(request: RawBackedRequest): boolean {
  if (!('ips' in request)) return false;
  const prototype = Object.getPrototypeOf(request) as object | null;
  if (prototype === null) return false;
  let everyHop = everyHopByPrototype.get(prototype);
  if (everyHop === undefined) {
    // The framework's own getter, run on the probe instead of the request's socket.
    const probe = Object.create(request, {
      raw: {
        value: {
          socket: { remoteAddress: PROBE_PEER },
          headers: { 'x-forwarded-for': PROBE_CHAIN },
        },
      },
    }) as RawBackedRequest;
    let ip: unknown;
    try {
      ip = probe.ip;
    } catch {
      ip = undefined;
    }
    everyHop = ip === PROBE_CLIENT;
    everyHopByPrototype.set(prototype, everyHop);
  }
  return everyHop;
}

/**
 * The proxy fields of an HttpRequestView for a Fastify-shaped request: `trustProxy` says whether
 * the framework took this request's address from X-Forwarded-For (so a request that carries one
 * from an untrusted peer, or under a setting that trusts nothing, such as a hop count on
 * Fastify 5.12 and later, is reported as FLOODGATE_UNTRUSTED_PROXY), `trustsEveryProxy` whether
 * any client can choose its address (FLOODGATE_PROXY_HOPS).
 */
export function rawProxyTrust(
  request: RawBackedRequest,
  headers: HttpRequestView['headers'],
): Pick<HttpRequestView, 'trustProxy' | 'trustsEveryProxy'> {
  if (!('ips' in request)) return { trustProxy: false, trustsEveryProxy: false };
  // Without X-Forwarded-For there is nothing to trust; only read `ips` when there is one.
  const forwarded = headers['x-forwarded-for'] !== undefined;
  const ips = forwarded ? request.ips : undefined;
  return {
    trustProxy: forwarded ? Array.isArray(ips) && ips.length > 1 : true,
    trustsEveryProxy: trustsEveryHop(request),
  };
}
