/**
 * The Redis Cluster section of `pnpm bench`: starts a local 6-node cluster (3 masters, 3 replicas,
 * 127.0.0.1, free ports, no persistence; the launcher the test suites use), runs the measuring
 * child processes against it (cluster-load.ts) and stops every node by PID, also on error. It is
 * optional: `BENCH_CLUSTER=0` skips it, and a cluster that does not start leaves the section
 * "not measured" with the reason while the rest of the bench runs.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { type RedisClusterHandle, startRedisCluster } from '@floodgate/redis-server';
import type { BatchSizeRow, ClusterArgs, ClusterRow } from './cluster-load.js';
import { median, SCALE } from './measure.js';
import { clusterTarget, renderCluster } from './report-cluster.js';

/** The section's results, as bench/results.json keeps them. */
export interface ClusterResults {
  /** Why the section has no figures (skipped, or the cluster did not start or failed). */
  notMeasured?: string;
  /** The cluster as measured: masters and replicas, the slot chosen on each master. */
  layout?: string;
  rows: ClusterRow[];
  batches: BatchSizeRow[];
}

type Worker = <T>(section: string, args: object) => Promise<T>;

const message = (error: unknown) => (error instanceof Error ? error.message : String(error));

/** One slot served by each master (for the "one slot per node" keys). */
async function slotPerMaster(cluster: RedisClusterHandle): Promise<number[]> {
  const chosen = new Map<string, number>();
  for (let slot = 0; slot < 16_384; slot += 256) {
    const master = await cluster.masterOf(slot);
    if (!chosen.has(master.id)) chosen.set(master.id, slot);
  }
  return [...chosen.values()];
}

/** Runs the section at 16 and 256 in flight; never throws. */
export async function measureCluster(
  worker: Worker,
  log: (line: string) => void,
  reps: number,
): Promise<ClusterResults> {
  if (process.env.BENCH_CLUSTER === '0') {
    return { notMeasured: 'skipped (BENCH_CLUSTER=0)', rows: [], batches: [] };
  }
  let cluster: RedisClusterHandle;
  try {
    cluster = await startRedisCluster();
  } catch (error) {
    return {
      notMeasured: `the local 6-node cluster did not start: ${message(error)}`,
      rows: [],
      batches: [],
    };
  }
  const rows: ClusterRow[] = [];
  const batches: BatchSizeRow[] = [];
  try {
    const masters = await cluster.masters();
    const nodeSlots = await slotPerMaster(cluster);
    const layout = `${masters.length} masters (pids ${masters.map((m) => m.server.pid).join(', ')}) + ${cluster.nodes.length - masters.length} replicas; one slot per master for the "one slot per node" keys: ${nodeSlots.join(', ')}`;
    log(`Redis Cluster: ${layout}`);
    for (const inFlight of [16, 256]) {
      const args: ClusterArgs = {
        ports: cluster.nodes.map((n) => n.port),
        masterPids: masters.map((m) => m.server.pid),
        nodeSlots,
        inFlight,
        reps,
      };
      log(`Redis Cluster, ${inFlight} in flight`);
      rows.push(...(await worker<ClusterRow[]>('cluster', args)));
      batches.push(...(await worker<BatchSizeRow[]>('cluster-batches', args)));
    }
    return { layout, rows, batches };
  } catch (error) {
    return { notMeasured: `failed during the run: ${message(error)}`, rows, batches };
  } finally {
    await cluster.stop();
  }
}

/**
 * `BENCH_ONLY=cluster`: the section alone, its target row and tables printed and written to
 * `dir` (results-cluster.md and .json); bench/results.* are left as they are.
 */
export async function clusterOnly(
  worker: Worker,
  log: (line: string) => void,
  reps: number,
  dir: string,
  machine: string,
): Promise<void> {
  const cluster = await measureCluster(worker, log, reps);
  const target = clusterTarget(cluster, median);
  const verdict = target.hit === undefined ? 'not measured' : target.hit ? 'hit' : '**missed**';
  const lines = [
    '| target | measured | |',
    '|---|---|---|',
    `| ${target.what} | ${target.figure} | ${verdict} |`,
    '',
    ...renderCluster(cluster, median),
  ];
  const date = new Date().toISOString();
  mkdirSync(dir, { recursive: true });
  writeFileSync(
    join(dir, 'results-cluster.json'),
    `${JSON.stringify({ date, machine, scale: SCALE, reps, cluster }, null, 2)}\n`,
  );
  writeFileSync(join(dir, 'results-cluster.md'), `${lines.join('\n')}\n`);
  process.stdout.write(`${lines.join('\n')}\n`);
}
