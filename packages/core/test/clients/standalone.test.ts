/**
 * The client matrix on a standalone Redis of this file's own: every client version and protocol
 * (clients/matrix.ts) through the matrix kit and the send-once kit (CLIENT KILL churn, a Redis
 * killed and restarted), batched and one EVALSHA per decision, and batched as Redis Functions.
 */
import { useOwnRedisServer } from '../../../../test/harness/redis.js';
import { resendSafetyTests } from '../resilience/resend-kit.js';
import { matrixTests } from './kit.js';
import { MATRIX, type MatrixRow, rowName } from './matrix.js';

jest.setTimeout(60_000);

const own = useOwnRedisServer();
/** The first row of its client and version (RESP2), the others differing by protocol only. */
const firstOfVersion = (row: MatrixRow): boolean =>
  MATRIX.find((r) => r.client === row.client && r.version === row.version) === row;

const target = () => ({ topology: 'standalone', port: own().server.port }) as const;

describe.each(MATRIX.map((row) => [rowName(row), row] as const))('%s, standalone', (_name, row) => {
  matrixTests(row, target, () => (args) => own().client.call(args[0]!, ...args.slice(1)));
  describe.each([
    ['batched', true, 'evalsha'],
    ['batch: false', false, 'evalsha'],
    // FCALL goes out through the same shim code as EVALSHA, whatever the protocol: once per
    // client version (the suite's time is bounded).
    ...(firstOfVersion(row) ? [['functions, batched', true, 'functions'] as const] : []),
  ] as const)('send once (%s)', (_mode, batch, scripts) => {
    resendSafetyTests(
      () => own().server,
      () => row.connect(target()),
      batch,
      scripts,
    );
  });
});
