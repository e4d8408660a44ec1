/**
 * `pnpm --filter @floodgate/bench run crossslot`: what a local Redis Cluster allows a script to
 * touch, the question behind batching per node instead of per slot (docs/benchmarks.md, "Redis
 * Cluster"). Starts the 6-node cluster, sends each probe to one master, prints each answer and
 * stops every node by PID.
 */
import { execFileSync } from 'node:child_process';
import { type RedisClusterHandle, startRedisCluster } from '@floodgate/redis-server';
import { Cluster, Redis } from 'ioredis';

const BODY =
  "redis.call('INCR', KEYS[1]); for i = 1, #ARGV do redis.call('INCR', ARGV[i]) end; return 1";

/** `a`: a key; `b`: a key of another slot on a's master; `c`: a key on another master. */
async function pickKeys(cluster: RedisClusterHandle, probe: Redis) {
  const slot = async (key: string) => Number(await probe.cluster('KEYSLOT', key));
  const a = 'k:0';
  const home = await cluster.masterOf(await slot(a));
  let b: string | undefined;
  let c: string | undefined;
  for (let i = 1; i < 1000 && (!b || !c); i++) {
    const key = `k:${i}`;
    const owner = await cluster.masterOf(await slot(key));
    if (owner.id !== home.id) c ??= key;
    else if ((await slot(key)) !== (await slot(a))) b ??= key;
  }
  if (!b || !c) throw new Error('no keys found for the probes');
  return { a, b, c, home, slots: [await slot(a), await slot(b), await slot(c)] };
}

async function probes(cluster: RedisClusterHandle) {
  const probe = new Redis({ host: '127.0.0.1', port: cluster.nodes[0]!.port });
  const { a, b, c, home, slots } = await pickKeys(cluster, probe);
  const node = new Redis({ host: '127.0.0.1', port: home.port });
  const client = new Cluster([...cluster.startupNodes]);
  const shebang = (flags: string) => `#!lua${flags}\n${BODY}`;
  console.log(
    `keys ${a} (slot ${slots[0]}), ${b} (slot ${slots[1]}, same master), ${c} (slot ${slots[2]}, another master)`,
  );
  const cases: [string, () => Promise<unknown>][] = [
    ['EVAL, two keys of two slots of one master declared', () => node.eval(BODY, 2, a, b)],
    ['ioredis Cluster: the same', () => client.eval(BODY, 2, a, b)],
    [
      'EVAL (no shebang), 1 declared, another slot of this master in ARGV',
      () => node.eval(BODY, 1, a, b),
    ],
    [
      'EVAL #!lua, 1 declared, another slot of this master in ARGV',
      () => node.eval(shebang(''), 1, a, b),
    ],
    [
      'EVAL #!lua flags=allow-cross-slot-keys, the same',
      () => node.eval(shebang(' flags=allow-cross-slot-keys'), 1, a, b),
    ],
    [
      'EVAL #!lua flags=allow-cross-slot-keys, both declared',
      () => node.eval(shebang(' flags=allow-cross-slot-keys'), 2, a, b),
    ],
    ['EVAL (no shebang), a key of another master in ARGV', () => node.eval(BODY, 1, a, c)],
  ];
  try {
    for (const [label, run] of cases) {
      const answer = await run().then(
        (reply) => `ok: ${JSON.stringify(reply)}`,
        (error: Error) => `error: ${error.message}`,
      );
      console.log(`- ${label}: ${answer}`);
    }
  } finally {
    client.disconnect();
    node.disconnect();
    probe.disconnect();
  }
}

const cluster = await startRedisCluster();
try {
  console.log(execFileSync('redis-server', ['--version'], { encoding: 'utf8' }).trim());
  await probes(cluster);
} finally {
  await cluster.stop();
}
