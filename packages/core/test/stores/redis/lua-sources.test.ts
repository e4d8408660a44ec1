/** Where the Redis store finds lua/ at run time, and what it says when it cannot (a bundle). */
import { join } from 'node:path';
import { findLuaSources } from '../../../src/stores/scripts';

test("from the sources, the store reads the repository's lua/", () => {
  expect(findLuaSources()).toBe(join(__dirname, '../../../../../lua'));
});

test('without its Lua scripts beside it (a bundle), the store says so when a limiter is made', () => {
  expect(() => findLuaSources(['/nowhere/lua/sources'])).toThrow(
    /cannot find its Lua scripts \(looked in \/nowhere\/lua\/sources\).*external dependency/,
  );
});
