/**
 * docs/compatibility.md, generated from the client matrix's results (scripts/compatibility.mjs,
 * checked by `npm test`), lists every row of the matrix, each proven on both topologies.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { MATRIX } from './matrix.js';

const page = readFileSync(join(__dirname, '../../../../docs/compatibility.md'), 'utf8');

test.each(MATRIX.map((row) => [`${row.client} ${row.version} ${row.protocol}`, row] as const))(
  '%s has a ✔ on a standalone server and on a cluster',
  (_name, row) => {
    const line = page
      .split('\n')
      .find((l) => l.startsWith(`| ${row.client} | ${row.version} | ${row.protocol} |`));
    expect(line).toMatch(/^\|[^|]+\|[^|]+\|[^|]+\| ✔ \d+ \| ✔ \d+ \|$/);
  },
);

test('the table has no row that the matrix does not run', () => {
  const rows = page.split('\n').filter((l) => /^\| (?!Client|---)/.test(l));
  expect(rows).toHaveLength(MATRIX.length);
});
