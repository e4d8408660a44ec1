/**
 * Bootstrap checks: every `@RateLimit` and `@SkipRateLimit` of every controller, resolver and
 * gateway is parsed and its limiters built, so a bad option stops the application with the
 * class and handler in the message; a decorated controller no guard covers is reported.
 */
import { Logger, type Type } from '@nestjs/common';
import { METHOD_METADATA } from '@nestjs/common/constants.js';
import {
  APP_GUARD,
  APP_INTERCEPTOR,
  type DiscoveryService,
  type MetadataScanner,
  type Reflector,
} from '@nestjs/core';
import { RATE_LIMIT_METADATA, SKIP_RATE_LIMIT_METADATA } from '../rate-limit.constants.js';
import type { RateLimitOptions } from '../rate-limit.interfaces.js';
import {
  hasGuard,
  isRateLimitGuard,
  MESSAGE_METADATA,
  RESOLVER_TYPE_METADATA,
  type RouteLimit,
} from './routes.js';

/** What the checks need of the service. */
export interface RouteResolver {
  route(target: Type, handler: Function): RouteLimit;
  parse(options: RateLimitOptions, where: string): void;
}

/**
 * Validates every `@RateLimit` and `@SkipRateLimit` of every controller, resolver and gateway
 * and builds their limiters, so a bad option stops the application at bootstrap, with the
 * class and handler in the message.
 */
export function checkHandlers(
  discovery: DiscoveryService,
  scanner: MetadataScanner,
  reflector: Reflector,
  global: boolean,
  service: RouteResolver,
): void {
  const unguarded: string[] = [];
  const globalGuard = global || hasGlobalGuardProvider(discovery);
  const controllers = new Set(discovery.getControllers().map((w) => w.metatype));
  const classes = [
    ...controllers,
    ...discovery.getProviders().map((w) => (w.isDependencyTreeStatic() ? w.metatype : null)),
  ];
  const seen = new Set<unknown>();
  for (const metatype of classes) {
    const target = metatype as Type | null;
    if (!target || typeof target !== 'function' || seen.has(target)) continue;
    seen.add(target);
    const classOptions = reflector.get<RateLimitOptions | undefined>(RATE_LIMIT_METADATA, target);
    if (classOptions !== undefined) service.parse(classOptions, target.name);
    const isController = controllers.has(target);
    const prototype = target.prototype as Record<string, unknown> | undefined;
    if (!prototype) continue;
    for (const name of scanner.getAllMethodNames(prototype)) {
      const handler = prototype[name];
      if (typeof handler !== 'function') continue;
      const isHandler =
        (isController && Reflect.getMetadata(METHOD_METADATA, handler) !== undefined) ||
        Reflect.getMetadata(RESOLVER_TYPE_METADATA, handler) !== undefined ||
        Reflect.getMetadata(MESSAGE_METADATA, handler) !== undefined;
      const own = reflector.get<unknown>(RATE_LIMIT_METADATA, handler);
      const skip = reflector.get<unknown>(SKIP_RATE_LIMIT_METADATA, handler);
      if (!isHandler && own === undefined && skip === undefined) continue;
      const route = service.route(target, handler);
      const decorated = own !== undefined || classOptions !== undefined;
      if (
        isController &&
        decorated &&
        route.skip !== true &&
        !globalGuard &&
        !hasGuard(target, handler)
      ) {
        unguarded.push(route.where);
      }
    }
  }
  if (unguarded.length > 0) {
    // Not an error: the guard may come from app.useGlobalGuards(), which is invisible here.
    new Logger('RateLimitModule').warn(
      `@RateLimit on ${unguarded.join(', ')} has no RateLimitGuard and will not be limited: ` +
        'use RateLimitModule.forRoot({ ..., global: true }) or @UseGuards(RateLimitGuard)',
    );
  }
}

/** An `APP_GUARD` or `APP_INTERCEPTOR` provider whose class is one of this package's. */
function hasGlobalGuardProvider(discovery: DiscoveryService): boolean {
  return discovery
    .getProviders()
    .some(
      (w) =>
        (String(w.token).startsWith(APP_GUARD) || String(w.token).startsWith(APP_INTERCEPTOR)) &&
        isRateLimitGuard(w.metatype),
    );
}
