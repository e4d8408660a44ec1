/**
 * Login brute-force protection (the recipe in docs/recipes.md), limited BEFORE authentication:
 * the global RateLimitGuard runs before the handler checks the password, and is keyed by the
 * caller's IP, so guessing is slowed whoever the attacker claims to be.
 *
 * - per IP: 100 failed logins a day across every username, then that IP is locked out a day;
 * - per IP + username: 5 failed logins in 15 minutes, then locked out 15 minutes, 30, 60, … up
 *   to a day while the failures go on (forgotten a day after the last lockout);
 * - only failures count (`count: 'failed'`): a user who types the password right is never
 *   limited, and a successful login resets the per-username key (its lockout streak too).
 *
 * `request.ip` is the socket's address here (no `trust proxy`): behind a load balancer, set
 * Express's `trust proxy` to the number of proxies (or Fastify's `trustProxy`), never to `true`.
 */
import { fixedWindow } from '@floodgate/core';
import { normalizeIp } from '@floodgate/core/http';
import { RateLimit, RateLimitService } from '@floodgate/nestjs';
import {
  Body,
  Controller,
  type ExecutionContext,
  HttpCode,
  Post,
  Req,
  UnauthorizedException,
} from '@nestjs/common';
import { Public } from './auth.guard.js';

export const perIp = fixedWindow({
  name: 'login-ip',
  limit: 100,
  window: '1d',
  blockDuration: '1d',
});
export const perUser = fixedWindow({
  name: 'login-user',
  limit: 5,
  window: '15m',
  blockDuration: { initial: '15m', multiplier: 2, max: '1d', forgetAfter: '1d' },
});

/** Demo accounts: username → [password, the token login hands out]. */
const ACCOUNTS: Readonly<Record<string, readonly [string, string]>> = {
  'alice@acme.example': ['correct horse battery staple', 'token-acme'],
};

/** The username as the account lookup sees it (trimmed, lower case, bounded). */
function usernameOf(body: unknown): string {
  const username = (body as { username?: unknown } | undefined)?.username;
  return typeof username === 'string' ? username.trim().toLowerCase().slice(0, 254) : '';
}

/**
 * `ip + username`: one budget per pair, so one attacker cannot lock a user out everywhere. The
 * address as the `'ip'` key sees it (IPv6 grouped by /56: one subscriber cannot rotate through
 * its own prefix for fresh tries).
 */
function ipAndUsername(context: ExecutionContext): string {
  const request = context.switchToHttp().getRequest<{ ip?: string; body?: unknown }>();
  return `${normalizeIp(request.ip) ?? 'unknown'}:${usernameOf(request.body)}`;
}

@Controller('login')
@Public()
export class LoginController {
  constructor(private readonly rateLimit: RateLimitService) {}

  @Post()
  @HttpCode(200)
  @RateLimit([
    { policies: perIp, key: 'ip', count: 'failed' },
    { policies: perUser, key: ipAndUsername, count: 'failed' },
  ])
  async login(@Req() request: object, @Body() body: { password?: unknown }) {
    const account = ACCOUNTS[usernameOf(body)];
    if (account === undefined || body?.password !== account[0]) {
      throw new UnauthorizedException('wrong username or password');
    }
    // The user proved who they are: forget their failures (not the IP's).
    await this.rateLimit.reset(request, { policy: 'login-user' });
    return { token: account[1] };
  }
}
