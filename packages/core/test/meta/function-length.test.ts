/** Functions a reader can hold: none in packages/*\/src runs over 80 lines (scripts/long-functions.mjs). */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const ROOT = join(__dirname, '../../../..');
const SCRIPT = join(ROOT, 'scripts/long-functions.mjs');

interface LongFunction {
  file: string;
  line: number;
  name: string;
  lines: number;
}

/** What the script reports for `root`. */
function longFunctions(root: string): LongFunction[] {
  try {
    return JSON.parse(execFileSync('node', [SCRIPT, root, '--json'], { encoding: 'utf8' }));
  } catch (error) {
    const stdout = (error as { stdout?: string }).stdout;
    if (!stdout) throw error;
    return JSON.parse(stdout);
  }
}

/** A function of `lines` lines (its first and last included). */
function functionOf(name: string, lines: number): string {
  const body = Array.from({ length: lines - 2 }, (_, i) => `  const v${i} = ${i};`);
  return [`export function ${name}(): void {`, ...body, '}', ''].join('\n');
}

describe('function length', () => {
  it('no function in the packages runs over 80 lines', () => {
    expect(longFunctions(ROOT).map((f) => `${f.file}: ${f.name}`)).toEqual([]);
  });

  describe('the script', () => {
    let root: string;
    beforeAll(() => {
      root = mkdtempSync(join(tmpdir(), 'floodgate-functions-'));
      const src = join(root, 'packages/demo/src');
      mkdirSync(join(src, 'generated'), { recursive: true });
      writeFileSync(
        join(src, 'plain.ts'),
        [
          functionOf('fits', 80),
          functionOf('tooLong', 81),
          'export class Engine {',
          '  run(): void {',
          ...Array.from({ length: 85 }, (_, i) => `    const v${i} = ${i};`),
          '  }',
          '}',
          'export const arrow = (): void => {',
          ...Array.from({ length: 90 }, (_, i) => `  const v${i} = ${i};`),
          '};',
          '',
        ].join('\n'),
      );
      writeFileSync(join(src, 'generated/scripts.ts'), functionOf('generated', 200));
    });
    afterAll(() => rmSync(root, { recursive: true, force: true }));

    it('reports functions, methods and arrows over 80 lines, longest first, generated files aside', () => {
      expect(longFunctions(root)).toEqual([
        { file: 'packages/demo/src/plain.ts', line: 253, name: 'arrow', lines: 92 },
        { file: 'packages/demo/src/plain.ts', line: 165, name: 'Engine.run', lines: 87 },
        { file: 'packages/demo/src/plain.ts', line: 82, name: 'tooLong', lines: 81 },
      ]);
    });
  });
});
