/**
 * The suites' redis-server launcher: the workspace's one (tools/redis-server, shared with the
 * benchmarks), re-exported so the harness and the tests keep importing it from here.
 */
export * from '@floodgate/redis-server';
