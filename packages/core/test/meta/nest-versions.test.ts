/**
 * What the docs say about NestJS versions follows the package's peer range: a Nest row of an
 * install table names every major the range covers, and no page says Nest projects are
 * CommonJS (NestJS 12's CLI generates ES module projects, tested with Vitest).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { markdownFiles, REPO_ROOT } from './snippets';

const peer = JSON.parse(readFileSync(join(REPO_ROOT, 'packages/nestjs/package.json'), 'utf8'))
  .peerDependencies['@nestjs/common'] as string;
/** The majors of `^11.0.0 || ^12.0.0`: 11, 12. */
const majors = [...peer.matchAll(/\^(\d+)/g)].map((m) => m[1]!);

const lines = markdownFiles().flatMap((file) =>
  readFileSync(join(REPO_ROOT, file), 'utf8')
    .split('\n')
    .map((text, i) => ({ where: `${file}:${i + 1}`, text })),
);

it('the peer range has majors to check', () => {
  expect(majors.length).toBeGreaterThanOrEqual(2);
});

it('every NestJS row of a table names every major of the peer range', () => {
  const rows = lines.filter(({ text }) => /^\|\s*NestJS\b/.test(text));
  const stale = rows.filter(({ text }) => majors.some((major) => !text.includes(major)));
  expect(stale.map(({ where }) => where)).toEqual([]);
});

it('no page says Nest projects are CommonJS', () => {
  const stale = lines.filter(({ text }) =>
    /Nest(JS)? (projects|apps) (are|compile to) CommonJS/i.test(text),
  );
  expect(stale.map(({ where }) => where)).toEqual([]);
});
