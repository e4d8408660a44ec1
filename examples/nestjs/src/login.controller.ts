/**
 * Login brute-force protection (the recipe in docs/recipes.md), limited BEFORE authentication:
 * the global RateLimitGuard runs before the handler checks the password, and is keyed by the
 * caller's IP, so guessing is slowed whoever the attacker claims to be.
 *
 * - per IP: 20 failed logins an hour, then locked out (15 min, doubling up to a day);
 * - per IP + username: 5 failed logins in 15 minutes, then locked out the same way;
 * - only failures count (`count: 'failed'`): a user who types the password right is never
 *   limited, and a successful login resets the per-username key (its lockout streak too).
 *
 * `request.ip` is the socket's address here (no `trust proxy`): behind a load balancer, set
 * Express's `trust proxy` to the number of proxies (or Fastify's `trustProxy`), never to `true`.
 */
import { fixedWindow } from '@floodgate/core';
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

/** 15 minutes, doubled on each lockout that follows within a day, at most a day. */
const lockout = { initial: '15m', multiplier: 2, max: '24h', forgetAfter: '24h' } as const;

export const perIp = fixedWindow({
  limit: 20,
  window: '1h',
  name: 'login-per-ip',
  blockDuration: lockout,
});
export const perUser = fixedWindow({
  limit: 5,
  window: '15m',
  name: 'login-per-user',
  blockDuration: lockout,
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

/** `ip + username`: one budget per pair, so one attacker cannot lock a user out everywhere. */
function ipAndUsername(context: ExecutionContext): string {
  const request = context.switchToHttp().getRequest<{ ip?: string; body?: unknown }>();
  return `login:${request.ip}:${usernameOf(request.body)}`;
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
    await this.rateLimit.reset(request, { policy: 'login-per-user' });
    return { token: account[1] };
  }
}
