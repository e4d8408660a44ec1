/**
 * The client matrix on a standalone Redis of this file's own: every client version and protocol
 * (clients/matrix.ts) through the matrix kit and the send-once kit (CLIENT KILL churn, a Redis
 * killed and restarted), batched and one EVALSHA per decision.
 */
import { useOwnRedisServer } from '../../../../test/harness/redis.js';
import { resendSafetyTests } from '../resilience/resend-kit.js';
import { matrixTests } from './kit.js';
import { MATRIX, rowName } from './matrix.js';

jest.setTimeout(60_000);

const own = useOwnRedisServer();
const target = () => ({ topology: 'standalone', port: own().server.port }) as const;

describe.each(MATRIX.map((row) => [rowName(row), row] as const))('%s, standalone', (_name, row) => {
  matrixTests(row, target, () => (args) => own().client.call(args[0]!, ...args.slice(1)));
  describe.each([
    ['batched', true],
    ['batch: false', false],
  ])('send once (%s)', (_mode, batch) => {
    resendSafetyTests(
      () => own().server,
      () => row.connect(target()),
      batch,
    );
  });
});
