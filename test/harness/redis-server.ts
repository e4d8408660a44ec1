/**
 * The suites' redis-server launcher: the workspace's one (tools/redis-server, shared with the
 * benchmarks), re-exported so the harness and the tests keep importing it from here. Imported
 * from source, so the test command needs no build of the private package (jest's globalSetup
 * resolves through Node, not through moduleNameMapper).
 */
export * from '../../tools/redis-server/src/index';
