/**
 * @floodgate/fastify — `await app.register(rateLimit, { policies })`. A thin layer over
 * @floodgate/core: the core resolves keys, decides and formats headers and problem bodies; this
 * file reads a Fastify request, writes a Fastify reply, and attaches one hook per route.
 */
import { type Decision } from '@floodgate/core';
import {
  AccessDeniedError,
  applyCheckHeaders,
  checkHttpRequest,
  configError,
  DEFAULT_PREFIX,
  deniedProblem,
  exposeDecision,
  HTTP_OPTION_NAMES,
  type HttpRateLimitConfig,
  type HttpRateLimitOptions,
  type HttpRequestView,
  PROBLEM_CONTENT_TYPE,
  parseHttpRateLimitOptions,
  type RateLimitControl,
  rateLimitControl,
  rawProxyTrust,
  refundByOutcome,
  releaseWhenDone,
  settleAfterResponse,
  UnknownAppKeyError,
  waitForDelay,
} from '@floodgate/core/http';
import type {
  FastifyInstance,
  FastifyPluginAsync,
  FastifyReply,
  FastifyRequest,
  RouteOptions,
} from 'fastify';
import fp from 'fastify-plugin';

declare module 'fastify' {
  interface FastifyRequest {
    /** The decision of the last rate limiter this request passed through. */
    rateLimit?: Decision;
    /** With stacked limiters: every limiter's decision for this request, in the order they ran (set once a second one decided). */
    rateLimits?: Decision[];
  }
  interface FastifyContextConfig {
    /** This route's limits (merged over the plugin's options), or `false`: not limited. */
    rateLimit?: RouteRateLimitOptions | false;
  }
}

/**
 * Replaces the default 429 reply; the rate-limit headers are already set. If it does not send
 * a reply, the request goes on as if admitted.
 */
export type OnLimited = (
  request: FastifyRequest,
  reply: FastifyReply,
  decision: Decision,
) => unknown;

/** The request lifecycle hooks the limiter can run in. */
export type RateLimitHook = 'onRequest' | 'preParsing' | 'preValidation' | 'preHandler';

/** A route's `config.rateLimit`: the adapter options every Floodgate adapter shares. */
export type RouteRateLimitOptions = HttpRateLimitOptions<FastifyRequest, OnLimited, FastifyReply>;

/** The plugin's options: the shared adapter options plus where and what to limit. */
export type FastifyRateLimitOptions = RouteRateLimitOptions & {
  /**
   * The hook that runs the limiter. `onRequest` decides before the body is read and before
   * validation and auth hooks that run later; `preHandler` runs after them (e.g. to key on
   * `request.user` set by an auth `preValidation` hook).
   * @default 'onRequest'
   */
  hook?: RateLimitHook;
  /** Limit every route with these options; `false`: only routes with `config.rateLimit`. @default true */
  global?: boolean;
  /** Limit requests no route matches (404s) with these options. @default the value of `global` */
  notFound?: boolean;
};

/** @default 'onRequest' */
export const DEFAULT_HOOK: RateLimitHook = 'onRequest';
const HOOKS: readonly RateLimitHook[] = ['onRequest', 'preParsing', 'preValidation', 'preHandler'];
const PLUGIN_OPTION_NAMES = ['hook', 'global', 'notFound'] as const;
const WHERE = 'rateLimit';

type Config = HttpRateLimitConfig<FastifyRequest, OnLimited, FastifyReply>;

/**
 * The client as Fastify sees it: `request.ip` honours the server's `trustProxy`. Whether that
 * setting believed this request's proxy (a hop count does nothing from Fastify 5.12 on), and
 * whether it believes every hop, are read from Fastify itself (there is no public flag).
 */
function requestView(request: FastifyRequest): HttpRequestView {
  return {
    ip: request.ip || request.raw.socket.remoteAddress,
    headers: request.headers,
    query: request.query as Record<string, unknown> | undefined,
    user: (request as { user?: unknown }).user,
    ...rawProxyTrust(request, request.headers),
  };
}

/** The hook that limits one route (or the 404s) with a parsed config. */
function limitRequests(config: Config) {
  return async function rateLimit(request: FastifyRequest, reply: FastifyReply): Promise<unknown> {
    let check: Awaited<ReturnType<typeof checkHttpRequest>>;
    try {
      check = await checkHttpRequest(config, requestView(request), request, request.raw);
    } catch (error) {
      if (!(error instanceof UnknownAppKeyError || error instanceof AccessDeniedError)) throw error;
      return reply.code(error.status).type(error.contentType).send(JSON.stringify(error.problem));
    }
    if (check === undefined) return undefined;
    const { decision, lease } = check;
    if (lease) releaseWhenDone(reply.raw, lease);
    refundByOutcome(config, check, reply.raw, request, reply);
    settleAfterResponse(config, check, reply.raw, request, reply);
    exposeDecision(request, decision);
    applyCheckHeaders(
      {
        get: (name) => reply.getHeader(name),
        set: (name, value) => reply.header(name, value),
        sent: () => reply.sent || reply.raw.headersSent,
      },
      check,
      config.headers,
    );
    if (!decision.allowed && !decision.shadow) {
      if (config.onLimited) {
        await config.onLimited(request, reply, decision);
        if (reply.sent) return reply;
      } else if (reply.raw.headersSent) {
        // Headers already out: no 429 can be sent; the request is refused by ending the
        // response here, outside Fastify's reply (which would fail writing its own headers).
        reply.hijack();
        reply.raw.end();
        return reply;
      } else {
        const problem = deniedProblem(decision);
        return reply.code(problem.status).type(PROBLEM_CONTENT_TYPE).send(JSON.stringify(problem));
      }
    }
    await waitForDelay(decision);
    return undefined;
  };
}

/** A Fastify hook with `resetKey(request)`, `limiter` and `limiterFor(request)`. */
export type RateLimitHookHandler = ReturnType<typeof limitRequests> &
  RateLimitControl<FastifyRequest>;

/**
 * One limiter as a route hook, for when the handler needs its `resetKey(request)` (after a
 * login, a captcha): the same options as a route's `config.rateLimit`.
 *
 * @example
 * // Keyed per IP *and* username: a reset of a per-IP key would let anyone with an account wipe
 * // their address's failures by logging in to it between guesses at other accounts.
 * const loginLimit = rateLimitHook({
 *   store,
 *   key: (request) => `${normalizeIp(request.ip)}:${usernameOf(request.body)}`,
 *   count: 'failed',
 *   policies: fixedWindow({ limit: 5, window: '15m' }),
 * });
 * // preValidation: after the body is parsed (the key needs the username).
 * app.post('/login', { preValidation: loginLimit }, async (request) => {
 *   if (await checkPassword(request)) await loginLimit.resetKey(request);
 * });
 */
export function rateLimitHook(options: RouteRateLimitOptions): RateLimitHookHandler {
  const config = parseHttpRateLimitOptions<FastifyRequest, OnLimited, FastifyReply>(
    options,
    'rateLimitHook',
  );
  return Object.assign(limitRequests(config), rateLimitControl(config, requestView));
}

/** A route's options over the plugin's: a route `limiter` or `policies` replaces the other. */
function routeOptions(
  base: Record<string, unknown>,
  route: Record<string, unknown>,
): Record<string, unknown> {
  const merged = { ...base, ...route };
  if (route.limiter !== undefined) {
    const adapterNames: readonly string[] = HTTP_OPTION_NAMES;
    for (const name of Object.keys(base)) {
      if (!adapterNames.includes(name) && !(name in route)) delete merged[name];
    }
  } else if (route.policies !== undefined && !('limiter' in route)) {
    delete merged.limiter;
  }
  return merged;
}

/**
 * `GET /login`: a route as its storage keys name it. HEAD is a GET without a body, so the HEAD
 * route Fastify adds for a GET (and any HEAD) spends the GET's budget; `{}` cannot be in a prefix.
 */
function routeLabel(route: RouteOptions): string {
  const methods = Array.isArray(route.method) ? route.method : [route.method];
  const names = [...new Set(methods.map((m) => (m === 'HEAD' ? 'GET' : m)))].sort();
  return `${names.join(',')} ${route.url.replace(/[{}]/g, encodeURIComponent)}`;
}

/**
 * A route's own budget, as @fastify/rate-limit counts route options and @floodgate/nestjs scopes
 * route limits: its storage keys carry the route (`<prefix>|GET /login:{<key>}:…`). A `limiter`
 * it was given is spent as it is (one limiter on several routes shares one budget on purpose).
 */
function perRouteBudget(options: Record<string, unknown>, label: string): Record<string, unknown> {
  if (options.limiter !== undefined) return options;
  const prefix = options.prefix ?? DEFAULT_PREFIX;
  // A bad prefix is left for the parser to report, naming the field and the value given.
  if (typeof prefix !== 'string' || prefix === '' || /[{}]/.test(prefix)) return options;
  return { ...options, prefix: `${prefix}|${label}` };
}

function readPluginOptions(options: unknown) {
  if (options === null || typeof options !== 'object' || Array.isArray(options)) {
    throw configError(WHERE, options, 'an options object');
  }
  const o = options as Record<string, unknown>;
  const hook = o.hook ?? DEFAULT_HOOK;
  if (!HOOKS.includes(hook as RateLimitHook)) {
    throw configError(`${WHERE}.hook`, o.hook, `one of ${HOOKS.join(', ')}`);
  }
  for (const name of ['global', 'notFound'] as const) {
    if (o[name] !== undefined && typeof o[name] !== 'boolean') {
      throw configError(`${WHERE}.${name}`, o[name], 'true or false');
    }
  }
  const global = (o.global as boolean | undefined) ?? true;
  const notFound = (o.notFound as boolean | undefined) ?? global;
  const shared: Record<string, unknown> = {};
  for (const name of Object.keys(o)) {
    if (!(PLUGIN_OPTION_NAMES as readonly string[]).includes(name)) shared[name] = o[name];
  }
  return { hook: hook as RateLimitHook, global, notFound, shared };
}

function appendHook(route: RouteOptions, hook: RateLimitHook, handler: unknown): void {
  const existing = route[hook] as unknown;
  const list = existing === undefined ? [] : Array.isArray(existing) ? existing : [existing];
  (route as unknown as Record<string, unknown>)[hook] = [...list, handler];
}

const plugin: FastifyPluginAsync<FastifyRateLimitOptions> = async (
  fastify: FastifyInstance,
  options,
) => {
  const { hook, global, notFound, shared } = readPluginOptions(options);
  // Parsed once, at registration: a bad option fails `register`, naming the field.
  const globalConfig =
    global || notFound
      ? parseHttpRateLimitOptions<FastifyRequest, OnLimited, FastifyReply>(
          shared,
          WHERE,
          PLUGIN_OPTION_NAMES,
        )
      : undefined;
  const globalHook = globalConfig && limitRequests(globalConfig);
  // Per route options object, one hook per route label: the HEAD route Fastify adds for a GET
  // shares the GET's, and one options object given to several routes counts per route.
  const perRoute = new WeakMap<object, Map<string, ReturnType<typeof limitRequests>>>();

  if (!fastify.hasRequestDecorator('rateLimit')) fastify.decorateRequest('rateLimit', undefined);
  if (!fastify.hasRequestDecorator('rateLimits')) fastify.decorateRequest('rateLimits', undefined);

  fastify.addHook('onRoute', (route) => {
    const own = route.config?.rateLimit;
    if (own === false) return;
    if (own === undefined) {
      if (global && globalHook) appendHook(route, hook, globalHook);
      return;
    }
    const where = `routes[${JSON.stringify(`${route.method} ${route.url}`)}].config.rateLimit`;
    if (own === null || typeof own !== 'object' || Array.isArray(own)) {
      throw configError(where, own, 'an options object or false');
    }
    let handlers = perRoute.get(own);
    if (handlers === undefined) {
      handlers = new Map();
      perRoute.set(own, handlers);
    }
    const label = routeLabel(route);
    let handler = handlers.get(label);
    if (handler === undefined) {
      const merged = perRouteBudget(routeOptions(shared, own as Record<string, unknown>), label);
      handler = limitRequests(
        parseHttpRateLimitOptions<FastifyRequest, OnLimited, FastifyReply>(merged, where),
      );
      handlers.set(label, handler);
    }
    appendHook(route, hook, handler);
  });

  if (notFound && globalHook) {
    // Requests no route matches get Fastify's 404 handler, which onRoute never sees; this hook
    // covers them (with fastify-plugin it applies to the whole app) and skips matched routes.
    fastify.addHook(
      hook,
      async function rateLimitNotFound(request: FastifyRequest, reply: FastifyReply) {
        if (request.is404) return globalHook(request, reply);
        return undefined;
      },
    );
  }
};

/**
 * The Floodgate rate-limit plugin. Register it before the routes it should limit: each route
 * gets a hook (`onRequest` by default) with the plugin's options, or its own
 * `config: { rateLimit: { … } | false }`. The decision is on `request.rateLimit`.
 *
 * @example
 * await app.register(rateLimit, { store: redisStore({ client }), policies: gcra({ limit: 10, window: '1s' }) });
 * app.get('/health', { config: { rateLimit: false } }, () => 'ok');
 */
export const rateLimit = fp(plugin, { fastify: '5.x', name: '@floodgate/fastify' });
export default rateLimit;

export { type LoadShedderOptions, loadShedder, loadShedderHook } from './load-shedder.js';
