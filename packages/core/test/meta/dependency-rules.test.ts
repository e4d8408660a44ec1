/** The import graph stays in order: no cycles, core's root below http/, adapters on public entries only. */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

const ROOT = join(__dirname, '../../../..');
const SCRIPT = join(ROOT, 'scripts/dependency-rules.mjs');

interface Violation {
  rule: string;
  file: string;
  message: string;
}

/** Runs the checker on `root` and returns what it reports. */
function violationsIn(root: string): Violation[] {
  try {
    return JSON.parse(execFileSync('node', [SCRIPT, root, '--json'], { encoding: 'utf8' }));
  } catch (error) {
    const stdout = (error as { stdout?: string }).stdout;
    if (!stdout) throw error;
    return JSON.parse(stdout);
  }
}

/** A throw-away repository holding `files` (path → content). */
function fixture(files: Record<string, string>): string {
  const root = mkdtempSync(join(tmpdir(), 'floodgate-deps-'));
  for (const [path, content] of Object.entries(files)) {
    mkdirSync(dirname(join(root, path)), { recursive: true });
    writeFileSync(join(root, path), content);
  }
  return root;
}

const roots: string[] = [];
afterAll(() => {
  for (const root of roots) rmSync(root, { recursive: true, force: true });
});

/** Violations of a fixture, cleaned up after the suite. */
function check(files: Record<string, string>): Violation[] {
  const root = fixture(files);
  roots.push(root);
  return violationsIn(root);
}

describe('dependency rules', () => {
  it('hold for the packages of this repository', () => {
    expect(violationsIn(ROOT)).toEqual([]);
  });

  it('report an import cycle, type-only imports included', () => {
    const found = check({
      'packages/core/src/a.ts': "import { b } from './b.js';\nexport const a = b;\n",
      'packages/core/src/b.ts': "import type { C } from './c';\nexport const b = 1 as C;\n",
      'packages/core/src/c.ts': "import { a } from './a.js';\nexport type C = typeof a;\n",
      'packages/core/src/leaf.ts': "import { a } from './a.js';\nexport const leaf = a;\n",
    });
    expect(found).toEqual([
      {
        rule: 'cycle',
        file: 'packages/core/src/a.ts',
        message:
          'import cycle: packages/core/src/a.ts -> packages/core/src/b.ts -> packages/core/src/c.ts -> packages/core/src/a.ts',
      },
    ]);
  });

  it("report core's root importing http/", () => {
    const found = check({
      'packages/core/src/http/keys.ts': 'export const keys = 1;\n',
      'packages/core/src/limiter.ts': "export { keys } from './http/keys.js';\n",
    });
    expect(found.map((v) => [v.rule, v.file])).toEqual([
      ['core-root-http', 'packages/core/src/limiter.ts'],
    ]);
  });

  it('report an adapter reaching into core by path or by a deep package path', () => {
    const found = check({
      'packages/core/src/index.ts': 'export const x = 1;\n',
      'packages/express/src/index.ts': [
        "import { x } from '../../core/src/index.js';",
        "import { y } from '@floodgate/core/src/options';",
        "import { z } from '@floodgate/core/http';",
        "import { w } from '@floodgate/core';",
        'export const all = [x, y, z, w];',
        '',
      ].join('\n'),
    });
    expect(found.map((v) => [v.rule, v.message])).toEqual([
      ['adapter-entry', expect.stringContaining("'../../core/src/index.js'")],
      ['adapter-entry', expect.stringContaining("'@floodgate/core/src/options'")],
    ]);
  });

  it("report a package's tests importing another package's test code, also through jest.mock", () => {
    const found = check({
      'packages/core/test/kit.ts': 'export const kit = 1;\n',
      'packages/koa/test/a.test.ts': "import { kit } from '../../core/test/kit';\nvoid kit;\n",
      'packages/koa/test/b.test.ts': "jest.mock('../../core/test/kit.js');\n",
      'packages/koa/test/c.test.ts': "import { x } from '../../core/src/index';\nvoid x;\n",
      'packages/core/src/index.ts': 'export const x = 1;\n',
    });
    expect(found.map((v) => [v.rule, v.file])).toEqual([
      ['foreign-tests', 'packages/koa/test/a.test.ts'],
      ['foreign-tests', 'packages/koa/test/b.test.ts'],
    ]);
  });
});
