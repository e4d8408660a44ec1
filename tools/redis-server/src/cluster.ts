/**
 * A real local Redis Cluster, for the cluster suites and the bench: six
 * `redis-server --cluster-enabled yes` on free 127.0.0.1 ports (three masters, three replicas,
 * nothing persisted) joined by `redis-cli --cluster create`. Every node is a child of this
 * process, ended by its PID on `stop()` (also when creating the cluster fails).
 */
import { spawn } from 'node:child_process';
import { redisText } from './command.js';
import { type RedisServerHandle, startRedisServer } from './server.js';

/** Milliseconds a node may be unreachable before the cluster fails it over. */
export const CLUSTER_NODE_TIMEOUT_MS = 1000;

export interface ClusterNode {
  readonly id: string;
  readonly port: number;
  readonly server: RedisServerHandle;
}

export interface RedisClusterHandle {
  readonly nodes: readonly ClusterNode[];
  /** `{ host, port }` of every node, for `new Cluster(...)` / `createCluster({ rootNodes })`. */
  readonly startupNodes: ReadonlyArray<{ host: string; port: number }>;
  /** The node currently serving `slot` as master (as seen by a live node). */
  masterOf(slot: number): Promise<ClusterNode>;
  /** The nodes serving slots as masters now (as seen by a live node). */
  masters(): Promise<ClusterNode[]>;
  /**
   * Kills (SIGKILL, by PID) the master serving `slot`, then waits until a replica has taken the
   * slot over and every live node reports `cluster_state:ok`. Resolves with the killed node.
   */
  failover(slot: number, timeoutMs?: number): Promise<ClusterNode>;
  /** Waits until every live node reports `cluster_state:ok` and agrees on the slot owners. */
  waitUntilOk(timeoutMs?: number): Promise<void>;
  /** Stops every node. */
  stop(): Promise<void>;
}

function redisCli(args: string[], timeoutMs: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.env.REDIS_CLI_BIN ?? 'redis-cli', args, {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk) => {
      output += chunk;
    });
    child.stderr.on('data', (chunk) => {
      output += chunk;
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.on('exit', (code) => {
      clearTimeout(timer);
      if (code === 0) resolve(output);
      else reject(new Error(`redis-cli ${args.join(' ')} failed (${code}): ${output}`));
    });
  });
}

interface NodesLine {
  id: string;
  port: number;
  master: boolean;
  failed: boolean;
  slots: Array<[number, number]>;
}

function parseClusterNodes(text: string): NodesLine[] {
  return text
    .trim()
    .split('\n')
    .map((line) => {
      const parts = line.split(' ');
      const flags = parts[2]!.split(',');
      const slots: Array<[number, number]> = [];
      for (const range of parts.slice(8)) {
        if (range.startsWith('[')) continue; // a slot being migrated
        const [from, to] = range.split('-').map(Number);
        slots.push([from!, to ?? from!]);
      }
      return {
        id: parts[0]!,
        port: Number(parts[1]!.split(':')[1]!.split('@')[0]),
        master: flags.includes('master'),
        failed: flags.includes('fail') || flags.includes('fail?'),
        slots,
      };
    });
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Starts six nodes, creates the cluster (1 replica per master) and waits until it is ok. */
export async function startRedisCluster(): Promise<RedisClusterHandle> {
  const servers: RedisServerHandle[] = [];
  try {
    for (let i = 0; i < 6; i++) {
      servers.push(
        await startRedisServer({
          args: [
            '--cluster-enabled',
            'yes',
            '--cluster-config-file',
            'nodes.conf',
            '--cluster-node-timeout',
            String(CLUSTER_NODE_TIMEOUT_MS),
            // Replicas must hold a copy before a failover can promote one: sync at once.
            '--repl-diskless-sync-delay',
            '0',
          ],
        }),
      );
    }
    await redisCli(
      [
        '--cluster',
        'create',
        ...servers.map((s) => `127.0.0.1:${s.port}`),
        '--cluster-replicas',
        '1',
        '--cluster-yes',
      ],
      30_000,
    );
  } catch (error) {
    await Promise.all(servers.map((s) => s.stop()));
    throw error;
  }
  const nodes: ClusterNode[] = [];
  try {
    for (const server of servers) {
      const id = await redisText(server.port, ['CLUSTER', 'MYID']);
      nodes.push({ id, port: server.port, server });
    }
  } catch (error) {
    await Promise.all(servers.map((s) => s.stop()));
    throw error;
  }
  const live = () => nodes.filter((n) => n.server.pid > 0);

  const view = async (): Promise<NodesLine[]> => {
    for (const node of live()) {
      try {
        return parseClusterNodes(await redisText(node.port, ['CLUSTER', 'NODES']));
      } catch {
        // try the next live node
      }
    }
    throw new Error('no live cluster node answered CLUSTER NODES');
  };

  const ownerIn = (lines: NodesLine[], slot: number): NodesLine | undefined =>
    lines.find((l) => l.master && !l.failed && l.slots.some(([a, b]) => slot >= a && slot <= b));

  const waitUntilOk = async (timeoutMs = 20_000): Promise<void> => {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      let ok = true;
      const owners = new Set<string>();
      for (const node of live()) {
        try {
          const info = {
            state: await redisText(node.port, ['CLUSTER', 'INFO']),
            replication: await redisText(node.port, ['INFO', 'replication']),
            owner:
              ownerIn(parseClusterNodes(await redisText(node.port, ['CLUSTER', 'NODES'])), 0)?.id ??
              '',
          };
          if (!info.state.includes('cluster_state:ok')) ok = false;
          // A replica still syncing could not be promoted by a failover.
          if (
            info.replication.includes('role:slave') &&
            !info.replication.includes('master_link_status:up')
          ) {
            ok = false;
          }
          owners.add(info.owner);
        } catch {
          ok = false;
        }
      }
      if (ok && owners.size === 1) return;
      if (Date.now() > deadline) throw new Error(`cluster not ok within ${timeoutMs} ms`);
      await sleep(50);
    }
  };

  const handle: RedisClusterHandle = {
    nodes,
    startupNodes: nodes.map((n) => ({ host: '127.0.0.1', port: n.port })),
    masterOf: async (slot) => {
      const owner = ownerIn(await view(), slot);
      const node = owner && nodes.find((n) => n.id === owner.id);
      if (!node) throw new Error(`no master serves slot ${slot}`);
      return node;
    },
    masters: async () => {
      const ids = new Set(
        (await view()).filter((l) => l.master && !l.failed && l.slots.length).map((l) => l.id),
      );
      return nodes.filter((n) => ids.has(n.id));
    },
    failover: async (slot, timeoutMs = 20_000) => {
      const victim = await handle.masterOf(slot);
      await victim.server.kill();
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        try {
          const owner = ownerIn(await view(), slot);
          if (owner && owner.id !== victim.id) break;
        } catch {
          // nodes may refuse while electing
        }
        if (Date.now() > deadline)
          throw new Error(`slot ${slot} not failed over in ${timeoutMs} ms`);
        await sleep(50);
      }
      await waitUntilOk(Math.max(1000, deadline - Date.now()));
      return victim;
    },
    waitUntilOk,
    stop: async () => {
      await Promise.all(nodes.map((n) => n.server.stop()));
    },
  };
  try {
    await waitUntilOk();
  } catch (error) {
    await handle.stop();
    throw error;
  }
  return handle;
}
