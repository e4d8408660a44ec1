/**
 * The proxy diagnostics, checked on each request keyed by its address (each reported once):
 * X-Forwarded-For with no trusted proxy, every hop trusted, and a Forwarded header nobody reads.
 */
import type { Diagnostics } from './diagnostics.js';
import type { HttpRequestView } from './keys.js';

/** The proxy diagnostics, on a request keyed by its address. */
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
