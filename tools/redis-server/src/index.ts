/**
 * Throwaway `redis-server` processes for the test suites (test/harness/) and the benchmarks
 * (bench/): one launcher for both, a single server (server.ts) or a local 6-node cluster
 * (cluster.ts), and the one-command client the launchers watch them with (command.ts).
 */
export * from './cluster.js';
export * from './command.js';
export * from './server.js';
