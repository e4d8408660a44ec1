/**
 * The suites' local Redis Cluster (six nodes, three masters and three replicas): the workspace's
 * one launcher (tools/redis-server, shared with the benchmarks), re-exported so the tests keep
 * importing it from here; from source, as redis-server.ts does.
 */
export * from '../../tools/redis-server/src/cluster';
