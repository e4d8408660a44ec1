/**
 * The floor under a single-call decision, for the callgrind section (`instructions`): scripts
 * written by hand that run the same commands as ours on the same KEYS and ARGV (as redisStore
 * sends them), with nothing else: no engine, no modes, no closures, no lockouts. What our
 * script costs above the last of these rows is the engine; what these rows cost is the price of
 * the call's shape (its KEYS and ARGV), Redis `TIME` and the block key's `GET`, which DESIGN.md
 * asks of every decision (time from Redis; the block state read in the same script call).
 */
import { createHash } from 'node:crypto';
import type { Policy } from '@floodgate/core';
import type { CommandSubject } from './callgrind.js';
import { scriptCommand } from './commands.js';

const TIME = `local t = redis.call('TIME')
local now = t[1] * 1000000 + t[2]`;

/** fixedWindow's aligned packed layout ('1'): one INCRBY, a PEXPIRE on a window's first count. */
const FIXED_WINDOW = `redis.call('GET', KEYS[2])
${TIME}
local limit, window = tonumber(ARGV[6]), tonumber(ARGV[7])
local index = (now - now % window) / window
local base = index * (limit + 1)
local after = redis.call('INCRBY', KEYS[1], ARGV[3]) - base
local left = (index + 1) * window - now
if after >= 1 and after <= limit then
  if after == 1 then redis.call('PEXPIRE', KEYS[1], string.format('%d', (left + 999 - (left + 999) % 1000) / 1000)) end
  return (left - 1) * (limit + 1) + after
end
redis.call('SET', KEYS[1], string.format('%d', base + 1), 'PX', string.format('%d', (left + 999 - (left + 999) % 1000) / 1000))
return (left - 1) * (limit + 1) + 1`;

/** gcra: GET the TAT, SET the new one with a TTL. */
const GCRA = `redis.call('GET', KEYS[2])
${TIME}
local interval, burst = tonumber(ARGV[6]), tonumber(ARGV[7])
local tat = tonumber(redis.call('GET', KEYS[1])) or now
if tat < now then tat = now end
local new_tat = tat + interval
if new_tat - now <= burst * interval then
  local us = new_tat - now
  redis.call('SET', KEYS[1], string.format('%d', new_tat), 'PX', string.format('%d', (us + 999 - (us + 999) % 1000) / 1000))
  return us
end
return -(tat - now) - 1`;

const BODIES: Record<string, string> = { 'fixed-window': FIXED_WINDOW, gcra: GCRA };

function subject(name: string, body: string, command: readonly string[]): CommandSubject {
  const script = `${body}\n`;
  const sha1 = createHash('sha1').update(script).digest('hex');
  return { name, script, command: ['EVALSHA', sha1, ...command.slice(2)] };
}

/** The floor rows for a one-policy limiter: the call's shape, + TIME, + the block GET, by hand. */
export function floorSubjects(label: string, policy: Policy): CommandSubject[] {
  const { command } = scriptCommand([policy]);
  const body = BODIES[policy.kind];
  if (body === undefined) throw new Error(`no hand-written script for ${policy.kind}`);
  return [
    subject(`${label}'s KEYS and ARGV, a script that returns 1`, 'return 1', command),
    subject(`the same, with TIME`, `${TIME}\nreturn 1`, command),
    subject(
      `the same, with TIME and the block key's GET`,
      `redis.call('GET', KEYS[2])\n${TIME}\nreturn 1`,
      command,
    ),
    subject(`${label}'s commands, by hand (the floor)`, body, command),
  ];
}
