/** Redis error replies are read by their code, however a client or server words them. */
import { isNoScript, redisErrorCode } from '../../../src/stores/redis-errors.js';
import { isOutOfMemory } from '../../../src/stores/redis-memory.js';

test.each([
  // Redis and Valkey, as ioredis and node-redis hand them over.
  ['NOSCRIPT No matching script. Please use EVAL.', 'NOSCRIPT'],
  ["OOM command not allowed when used memory > 'maxmemory'.", 'OOM'],
  ['WRONGTYPE Operation against a key holding the wrong kind of value', 'WRONGTYPE'],
  ['NOPERM this user has no permissions to run the CONFIG command', 'NOPERM'],
  ['ERR unknown command', 'ERR'],
  ['MOVED 3999 127.0.0.1:6381', 'MOVED'],
  // Redis 6 wraps an error raised inside a script.
  [
    "ERR Error running script (call to f_1234): @user_script:1: @user_script: 1: -OOM command not allowed when used memory > 'maxmemory'. ",
    'OOM',
  ],
  ['ERR Error running script (call to f_1234): @user_script:9: user_script:9: bad', 'ERR'],
  // valkey-glide: `CODE: text`, or the kind its core gives the reply.
  ['An error was signalled by the server: - NoScriptError: No matching script.', 'NOSCRIPT'],
  ["OOM: command not allowed when used memory > 'maxmemory'.", 'OOM'],
  ['WRONGTYPE: Operation against a key holding the wrong kind of value', 'WRONGTYPE'],
  [
    "An error was signalled by the server: - ReadOnly: You can't write against a read only replica.",
    'READONLY',
  ],
])('%j has the code %s', (message, code) => {
  expect(redisErrorCode(new Error(message))).toBe(code);
});

test.each([
  ['Connection is closed.'],
  ['The client is closed'],
  ['the store did not answer within 200 ms'],
  ['connect ECONNREFUSED 127.0.0.1:6379'],
])('%j is no error reply', (message) => {
  expect(redisErrorCode(new Error(message))).toBeUndefined();
});

test('NOSCRIPT and OOM are recognised by code, not by a wording', () => {
  expect(isNoScript(new Error('NOSCRIPT something else entirely'))).toBe(true);
  expect(isNoScript(new Error('ERR mentions NOSCRIPT later'))).toBe(false);
  expect(isOutOfMemory(new Error('OOM reworded by a future server'))).toBe(true);
  expect(isOutOfMemory('OOM command not allowed')).toBe(true);
  expect(isOutOfMemory(new Error('ERR OOM command not allowed inside text'))).toBe(false);
  expect(redisErrorCode(undefined)).toBeUndefined();
});
