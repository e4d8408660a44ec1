/**
 * Every TypeScript/JavaScript code block in README.md, packages/* and examples/* READMEs and
 * docs/*.md type-checks against the workspace sources, so a snippet cannot rot.
 * A failure names the Markdown file and line. Marking a block (```ts fragment) and declaring
 * what a block assumes (<!-- snippet: … -->) are described in CONTRIBUTING.md and
 * test/meta/snippets.ts.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  allSnippets,
  checkSnippets,
  extractSnippets,
  markdownFiles,
  REFERENCE_PAGES,
} from './snippets';

/** A Markdown text the checker must judge right (checked in the same program, to save time). */
const markdown = [
  '# t',
  '```ts',
  "import { fixedWindow } from '@floodgate/core';",
  "fixedWindow({ limit: 'ten', window: '1s' });",
  '```',
  '<!-- snippet: declare const n: number; -->',
  '```typescript',
  'const s: string = n;',
  '```',
  '```ts fragment',
  'limiter.consume(key, { cost })',
  '```',
  '```ts fragment',
  'const = ;',
  '```',
  '```sh',
  'not code',
  '```',
].join('\n');
const blocks = extractSnippets('fixture.md', markdown);

const snippets = allSnippets();
let report: ReturnType<typeof checkSnippets>;

beforeAll(() => {
  report = checkSnippets([...snippets, ...blocks]);
}, 120_000);

it('finds the documented files and their blocks', () => {
  const files = markdownFiles();
  expect(files).toEqual(
    expect.arrayContaining([
      'README.md',
      'CONTRIBUTING.md',
      ...REFERENCE_PAGES,
      'packages/core/README.md',
      'packages/express/README.md',
      'packages/koa/README.md',
      'packages/nestjs/README.md',
      'docs/reliability.md',
    ]),
  );
  for (const file of ['README.md', 'packages/nestjs/README.md', 'docs/reliability.md']) {
    expect(snippets.some((s) => s.file === file)).toBe(true);
  }
});

it('compiles every block of the reference pages: none is a fragment', () => {
  const reference = snippets.filter((s) => REFERENCE_PAGES.includes(s.file));
  for (const page of ['docs/core.md', 'docs/adapters.md', 'docs/architecture.md']) {
    expect(reference.some((s) => s.file === page)).toBe(true);
  }
  expect(reference.filter((s) => s.fragment).map((s) => s.where)).toEqual([]);
});

it.each(snippets.map((s) => [`${s.where} (${s.language}${s.fragment ? ' fragment' : ''})`, s]))(
  '%s compiles',
  (_where, snippet) => {
    const problems = report.get(snippet as (typeof snippets)[number]) ?? [];
    if (problems.length > 0) {
      throw new Error(
        `the code block at ${(snippet as (typeof snippets)[number]).where} does not compile:\n  ${problems.join('\n  ')}\n` +
          'Fix the block, declare what it assumes in a <!-- snippet: … --> comment above it, or mark an intentional excerpt ```ts fragment (see CONTRIBUTING.md).',
      );
    }
  },
);

describe('the checker itself', () => {
  it('extracts ts/typescript blocks with their line, prelude and fragment tag', () => {
    expect(blocks.map((b) => [b.line, b.language, b.fragment, b.prelude])).toEqual([
      [2, 'ts', false, ''],
      [7, 'ts', false, 'declare const n: number;'],
      [10, 'ts', true, ''],
      [13, 'ts', true, ''],
    ]);
  });

  it('reports type errors at their Markdown line; fragments are parsed only', () => {
    const [wrongType, wrongAssign, excerpt, broken] = blocks.map((b) => report.get(b)!);
    expect(wrongType).toEqual([expect.stringMatching(/^fixture\.md:4: TS2322 /)]);
    expect(wrongAssign).toEqual([expect.stringMatching(/^fixture\.md:8: TS2322 /)]);
    expect(excerpt).toEqual([]);
    expect(broken!.length).toBeGreaterThan(0);
    expect(broken![0]).toMatch(/^fixture\.md:14: TS\d+ /);
  });
});

describe('the examples follow docs/reliability.md', () => {
  const root = join(__dirname, '../../../..');
  const recommended = readFileSync(join(root, 'docs/reliability.md'), 'utf8');
  const sources = ['express/src/store.js', 'koa/src/store.js', 'nestjs/src/main.ts'];

  it('recommends no offline queue and no retries for ioredis', () => {
    expect(recommended).toContain('{ enableOfflineQueue: false, maxRetriesPerRequest: 0 }');
  });

  it.each(sources)(
    'examples/%s creates its client with those settings and an error listener',
    (file) => {
      const source = readFileSync(join(root, 'examples', file), 'utf8');
      const created = source.match(/new Redis\([^;]*?\)/gs) ?? [];
      expect(created.length).toBeGreaterThan(0);
      for (const call of created) {
        expect(call).toMatch(/enableOfflineQueue: false/);
        expect(call).toMatch(/maxRetriesPerRequest: 0\b/);
      }
      expect(source).toMatch(/\.on\('error',/);
    },
  );
});

describe('Markdown renders as written', () => {
  it.each(markdownFiles())('%s: every table starts with a header and a separator row', (file) => {
    const lines = readFileSync(join(__dirname, '../../../..', file), 'utf8').split('\n');
    let fenced = false;
    const broken: number[] = [];
    lines.forEach((line, i) => {
      if (/^ {0,3}(```|~~~)/.test(line)) fenced = !fenced;
      if (fenced || !line.startsWith('|')) return;
      const previous = lines[i - 1] ?? '';
      if (previous.startsWith('|')) return;
      // A table's first row: the next line must be its separator, or the "table" is a paragraph.
      if (!/^\|(\s*:?-{3,}:?\s*\|)+\s*$/.test(lines[i + 1] ?? '')) broken.push(i + 1);
    });
    expect(broken).toEqual([]);
  });
});

describe("docs/reliability.md's claim about ioredis and 'error' listeners", () => {
  it('an ioredis client with no error listener logs connection errors, it does not crash', async () => {
    const { freePort } = await import('../../../../test/harness/redis-server');
    const port = await freePort();
    // A process of its own: an uncaught 'error' event would kill it (exit code 1).
    const program = `
      const { Redis } = require(${JSON.stringify(require.resolve('ioredis'))});
      const client = new Redis({ host: '127.0.0.1', port: ${port}, retryStrategy: () => null });
      client.once('end', () => console.log('still alive'));`;
    const run = spawnSync(process.execPath, ['-e', program], { encoding: 'utf8', timeout: 20_000 });
    expect(run.status).toBe(0);
    expect(run.stdout).toContain('still alive');
    expect(run.stderr).toContain('[ioredis] Unhandled error event');
  });
});
