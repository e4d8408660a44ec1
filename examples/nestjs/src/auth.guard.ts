/**
 * Stand-in authentication for the open platform: each third-party app calls with
 * `Authorization: Bearer <token>`, and the guard sets `request.user.clientId` to the app's id.
 * A real service would verify a JWT or an OAuth access token here instead.
 *
 * It is registered as the first global guard, so it runs before RateLimitGuard, which reads
 * `request.user.clientId` for `key: 'clientId'`. For GraphQL it reads the GraphQL context's
 * request; WebSocket clients authenticate at the handshake (events.gateway.ts).
 */
import {
  type CanActivate,
  type ExecutionContext,
  Injectable,
  SetMetadata,
  UnauthorizedException,
} from '@nestjs/common';
import { Reflector } from '@nestjs/core';

/** Issued tokens → the client id of the app that holds them. */
export const TOKENS: Readonly<Record<string, string>> = {
  'token-acme': 'acme-home',
  'token-globex': 'globex-fleet',
};

const PUBLIC = 'example:public';
/** Marks a route that needs no token. */
export const Public = () => SetMetadata(PUBLIC, true);

@Injectable()
export class BearerAuthGuard implements CanActivate {
  constructor(private readonly reflector: Reflector) {}

  canActivate(context: ExecutionContext): boolean {
    if (
      this.reflector.getAllAndOverride<boolean>(PUBLIC, [context.getHandler(), context.getClass()])
    ) {
      return true;
    }
    // WebSocket clients authenticate at the handshake (events.gateway.ts).
    if (context.getType() === 'ws') return true;
    const request =
      context.getType<string>() === 'graphql'
        ? context.getArgByIndex(2).req
        : context.switchToHttp().getRequest();
    const header: unknown = request.headers.authorization;
    const token = typeof header === 'string' && header.startsWith('Bearer ') ? header.slice(7) : '';
    const clientId = TOKENS[token];
    if (clientId === undefined) throw new UnauthorizedException('a valid bearer token is required');
    request.user = { clientId };
    return true;
  }
}
