/**
 * The suites' redis-server launcher: the workspace's one (tools/redis-server, shared with the
 * benchmarks), re-exported so the harness and the tests keep importing it from here. Imported
 * from source, so the test command needs no build of the private package; from server.ts itself,
 * which imports nothing relative: jest's globalSetup loads this file through Node (ts-node), not
 * through moduleNameMapper, and Node does not map the package's `./x.js` imports to `./x.ts`.
 */
export * from '../../tools/redis-server/src/server';
