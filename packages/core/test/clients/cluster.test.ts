/**
 * The client matrix on a local Redis Cluster of this file's own (three primaries, three
 * replicas): every client version and protocol (clients/matrix.ts) through the matrix kit.
 */
import { Cluster } from 'ioredis';
import { type RedisClusterHandle, startRedisCluster } from '../../../../test/harness/cluster.js';
import { matrixTests } from './kit.js';
import { MATRIX, rowName } from './matrix.js';

jest.setTimeout(60_000);

let cluster: RedisClusterHandle;
let admin: Cluster;
beforeAll(async () => {
  cluster = await startRedisCluster();
  admin = new Cluster(cluster.startupNodes.map((n) => ({ ...n })));
  await admin.ping();
}, 60_000);
afterAll(async () => {
  admin?.disconnect();
  await cluster?.stop();
});

const target = () => ({ topology: 'cluster', nodes: cluster.startupNodes }) as const;

describe.each(MATRIX.map((row) => [rowName(row), row] as const))('%s, cluster', (_name, row) => {
  // ioredis Cluster routes a command by its first key's slot.
  matrixTests(row, target, () => (args) => admin.call(args[0]!, ...args.slice(1)));
});
