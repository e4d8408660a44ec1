/**
 * A real local Redis Sentinel setup for the sentinel suite: one master, one replica and three
 * sentinels, each a `redis-server` child of this process on a free 127.0.0.1 port (a sentinel is
 * `redis-server <conf> --sentinel`: the installed binary, no extra package). Failure detection
 * and failover timeouts are short so a failover takes about a second. Every process is ended by
 * its PID on `stop()`.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { withNode } from './redis';
import { type RedisServerHandle, startRedisServer } from './redis-server';

/** The name the sentinels monitor the master under (`new Redis({ sentinels, name })`). */
export const SENTINEL_MASTER_NAME = 'floodgate';
/** Milliseconds a master may be unreachable before the sentinels consider it down. */
export const SENTINEL_DOWN_AFTER_MS = 400;

export interface RedisSentinelHandle {
  /** The data nodes (master first at start; roles change with failovers). */
  readonly servers: readonly RedisServerHandle[];
  readonly sentinels: readonly RedisServerHandle[];
  /** `{ host, port }` of every sentinel, for ioredis `sentinels` / node-redis `sentinelRootNodes`. */
  readonly sentinelNodes: ReadonlyArray<{ host: string; port: number }>;
  /** The data node every sentinel currently names as master (waits until they agree). */
  master(timeoutMs?: number): Promise<RedisServerHandle>;
  /**
   * Kills (SIGKILL, by PID) the current master, waits until the sentinels agree on the promoted
   * replica and it accepts writes. Resolves with the killed node (restart it with `restart()`:
   * the sentinels then make it a replica of the new master).
   */
  failover(timeoutMs?: number): Promise<RedisServerHandle>;
  /**
   * Restarts a node `failover()` killed as a replica of the current master (what the sentinels
   * would do on their next INFO round, up to 10 s later) and waits until it is in sync.
   */
  rejoin(node: RedisServerHandle): Promise<void>;
  /** Waits until the master has a replica whose link is up (so a failover can promote it). */
  waitForReplica(timeoutMs?: number): Promise<void>;
  stop(): Promise<void>;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export async function startRedisSentinel(): Promise<RedisSentinelHandle> {
  const servers: RedisServerHandle[] = [];
  const sentinels: RedisServerHandle[] = [];
  const confDirs: string[] = [];
  const stopAll = async () => {
    await Promise.all([...sentinels, ...servers].map((s) => s.stop()));
    for (const dir of confDirs) rmSync(dir, { recursive: true, force: true });
  };
  const sync = ['--repl-diskless-sync-delay', '0'];
  const live = () => servers.filter((s) => s.pid > 0);

  const roleOf = (server: RedisServerHandle) => withNode(server.port, (c) => c.info('replication'));

  const waitForReplica = async (timeoutMs = 15_000): Promise<void> => {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      let ok = false;
      for (const server of live()) {
        try {
          const info = await roleOf(server);
          if (info.includes('role:slave') && info.includes('master_link_status:up')) ok = true;
        } catch {
          // not up yet
        }
      }
      if (ok) return;
      if (Date.now() > deadline) throw new Error(`no synced replica within ${timeoutMs} ms`);
      await sleep(50);
    }
  };

  /** The port every sentinel names as master, once they agree and it is a writable master. */
  const agreedMaster = async (exclude?: number, timeoutMs = 15_000) => {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const ports = new Set<number>();
      for (const sentinel of sentinels) {
        try {
          const addr = (await withNode(sentinel.port, (c) =>
            c.call('SENTINEL', 'GET-MASTER-ADDR-BY-NAME', SENTINEL_MASTER_NAME),
          )) as [string, string] | null;
          ports.add(addr ? Number(addr[1]) : -1);
        } catch {
          ports.add(-1);
        }
      }
      const [port] = [...ports];
      const server = servers.find((s) => s.port === port && s.pid > 0);
      if (ports.size === 1 && server && port !== exclude) {
        try {
          if ((await roleOf(server)).includes('role:master')) return server;
        } catch {
          // not answering yet
        }
      }
      if (Date.now() > deadline) {
        throw new Error(`sentinels did not agree on a master within ${timeoutMs} ms`);
      }
      await sleep(50);
    }
  };

  try {
    const master = await startRedisServer({ args: sync });
    servers.push(master);
    servers.push(
      await startRedisServer({
        args: [...sync, '--replicaof', '127.0.0.1', String(master.port)],
      }),
    );
    for (let i = 0; i < 3; i++) {
      const dir = mkdtempSync(join(tmpdir(), 'floodgate-sentinel-'));
      confDirs.push(dir);
      const configFile = join(dir, 'sentinel.conf');
      writeFileSync(
        configFile,
        [
          `sentinel monitor ${SENTINEL_MASTER_NAME} 127.0.0.1 ${master.port} 2`,
          `sentinel down-after-milliseconds ${SENTINEL_MASTER_NAME} ${SENTINEL_DOWN_AFTER_MS}`,
          `sentinel failover-timeout ${SENTINEL_MASTER_NAME} 2000`,
          `sentinel parallel-syncs ${SENTINEL_MASTER_NAME} 1`,
          '',
        ].join('\n'),
      );
      sentinels.push(await startRedisServer({ configFile, args: ['--sentinel'] }));
    }
    await waitForReplica();
    await agreedMaster();
    // Every sentinel must know the replica (and the others) before a failover can be voted.
    const deadline = Date.now() + 15_000;
    for (;;) {
      const known = await Promise.all(
        sentinels.map((s) =>
          withNode(s.port, async (c) => {
            const replicas = (await c.call('SENTINEL', 'REPLICAS', SENTINEL_MASTER_NAME)) as [];
            const peers = (await c.call('SENTINEL', 'SENTINELS', SENTINEL_MASTER_NAME)) as [];
            return replicas.length >= 1 && peers.length >= 2;
          }).catch(() => false),
        ),
      );
      if (known.every(Boolean)) break;
      if (Date.now() > deadline) throw new Error('sentinels did not discover each other');
      await sleep(50);
    }
  } catch (error) {
    await stopAll();
    throw error;
  }

  return {
    servers,
    sentinels,
    sentinelNodes: sentinels.map((s) => ({ host: '127.0.0.1', port: s.port })),
    master: (timeoutMs) => agreedMaster(undefined, timeoutMs),
    failover: async (timeoutMs = 20_000) => {
      const victim = await agreedMaster();
      await waitForReplica();
      await victim.kill();
      await agreedMaster(victim.port, timeoutMs);
      return victim;
    },
    rejoin: async (node) => {
      const master = await agreedMaster();
      await node.restart();
      await withNode(node.port, (c) => c.call('REPLICAOF', '127.0.0.1', String(master.port)));
      await waitForReplica();
    },
    waitForReplica,
    stop: stopAll,
  };
}
