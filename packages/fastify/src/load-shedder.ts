/**
 * `await app.register(loadShedder, { criticality })`: overload protection for Fastify, thin over
 * @floodgate/core/http. An `onRequest` hook takes a slot of an adaptive concurrency limit for
 * each request, released when the response finishes (or the connection closes); a shed request
 * gets a 503 problem.
 */
import type { AdaptiveDecision } from '@floodgate/core';
import {
  type LoadShedderOptions as HttpLoadShedderOptions,
  overloadedAnswer,
  parseLoadShedderOptions,
  releaseWhenFinished,
  shedRequest,
} from '@floodgate/core/http';
import type { FastifyPluginCallback, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';

declare module 'fastify' {
  interface FastifyRequest {
    /** The load shedder's decision for this request. */
    overload?: AdaptiveDecision;
  }
}

/** `limiter`, `criticality` (a class or `(request) => class`) and `skip`. */
export type LoadShedderOptions = HttpLoadShedderOptions<FastifyRequest>;

/** The `onRequest` hook: sheds or admits, and releases the slot when the response ends. */
export function loadShedderHook(options: LoadShedderOptions = {}) {
  const config = parseLoadShedderOptions<FastifyRequest>(options, 'loadShedder');
  function loadShedder(
    request: FastifyRequest,
    reply: FastifyReply,
    done: (error?: Error) => void,
  ) {
    let pending: ReturnType<typeof shedRequest>;
    try {
      pending = shedRequest(config, request);
    } catch (error) {
      return done(error as Error);
    }
    if (pending === undefined) return done();
    const answer = (decision: AdaptiveDecision) => {
      request.overload = decision;
      if (decision.lease === undefined) {
        const shed = overloadedAnswer(decision);
        reply.code(shed.status).headers(shed.headers).send(JSON.stringify(shed.problem));
        return;
      }
      releaseWhenFinished(reply.raw, decision.lease);
      done();
    };
    if (pending instanceof Promise) pending.then(answer, done);
    else answer(pending);
  }
  return Object.assign(loadShedder, { limiter: config.limiter });
}

const plugin: FastifyPluginCallback<LoadShedderOptions> = (fastify, options, done) => {
  fastify.addHook('onRequest', loadShedderHook(options));
  done();
};

/**
 * The Floodgate load-shedding plugin: every request of the app (fastify-plugin: not
 * encapsulated) takes a slot of the adaptive limit; shed ones get a 503 with `Retry-After` and
 * an RFC 9457 problem body. Pass a shared `limiter` to read its `limit` and `inFlight`.
 *
 * @example
 * ```ts
 * await app.register(loadShedder, { criticality: (request) => (request.url === '/pay' ? 'critical' : 'default') });
 * ```
 */
export const loadShedder = fp(plugin, { fastify: '5.x', name: '@floodgate/fastify/load-shedder' });
