/**
 * The KEYS and ARGV of a per-node batch script call (the assembler's NODE_HEADER and
 * lua/include/batch.lua read them): one declared key, then slot groups, keys and the batch ARGV.
 */
import { batchArguments, nodeBatchArguments } from '../../../src/stores/redis-batch-arguments.js';

const consume = ['0', '', '1', '0', 'fixed-window', '10', '60000000', ''];

test('declares the first key only, and carries every key, the slot groups and the batch ARGV', () => {
  const calls = [
    { slot: 7, keys: ['a:{x}:1', 'a:{x}:b'], args: consume },
    { slot: 7, keys: ['a:{x}:1', 'a:{x}:b'], args: consume },
    { slot: 9, keys: ['a:{y}:1', 'a:{y}:b'], args: consume },
    { slot: 12, keys: ['a:{z}:1', 'a:{z}:b'], args: consume },
  ];
  const keys: string[] = ['stale'];
  const args: string[] = ['stale'];
  nodeBatchArguments(calls, keys, args);
  const batchKeys: string[] = [];
  const head: string[] = [];
  batchArguments(calls, batchKeys, head);
  expect(keys).toEqual(['a:{x}:1']);
  expect(args).toEqual(['3', '8', '2', '1', '1', ...batchKeys, ...head]);
  expect(batchKeys).toHaveLength(8);
});
