/**
 * `limiter.resetAll()` on a real local Redis Cluster through every cluster client: SCAN runs on
 * every master, so keys spread over all slots are forgotten, and only the limiter's own.
 */
import { type RedisClusterHandle, startRedisCluster } from '../../../../../test/harness/cluster.js';
import { redisStore } from '../../../src/index.js';
import { resetAllScenario } from '../../limiter/reset-all.scenario.js';
import { CLUSTER_KINDS, type ConnectedClient, connectCluster } from '../../resilience/clients.js';

jest.setTimeout(45_000);

let cluster: RedisClusterHandle;
beforeAll(async () => {
  cluster = await startRedisCluster();
}, 60_000);
afterAll(async () => {
  await cluster?.stop();
});

describe.each(CLUSTER_KINDS)('resetAll on a Redis Cluster (%s)', (kind) => {
  let connected: ConnectedClient;
  beforeAll(async () => {
    connected = await connectCluster(
      kind,
      cluster.nodes.map((n) => ({ host: '127.0.0.1', port: n.port })),
    );
  });
  afterAll(async () => {
    await connected.close();
  });

  it('reaches the keys on every master', async () => {
    const store = redisStore({ client: connected.client, clock: () => 1_700_000_040_000 });
    await resetAllScenario(store, `cl${kind.length}`);
  });
});
