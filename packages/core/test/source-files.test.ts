/**
 * Files that hold one idea: no hand-written source file of a package grows much past 300 lines
 * (generated files aside; 320 leaves room for a doc comment, not for a second idea). A file that does has taken on a second idea; split it so each
 * file's name says what it holds (e.g. rate-limiter.ts, rate-limiter-options.ts, acquire.ts,
 * failure-policy.ts, store-guard.ts).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';

const MAX_LINES = 320;
const packagesDir = join(__dirname, '../..');

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return entry.name === 'generated' ? [] : sources(path);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.test.ts') ? [path] : [];
  });
}

const files = readdirSync(packagesDir).flatMap((name) => {
  try {
    return sources(join(packagesDir, name, 'src'));
  } catch {
    return [];
  }
});

describe('package sources', () => {
  it('are found', () => {
    expect(files.map((f) => relative(packagesDir, f))).toContain('core/src/rate-limiter.ts');
  });

  it.each(files.map((f) => [relative(packagesDir, f), f]))(
    '%s stays within 300 lines',
    (_, file) => {
      const lines = readFileSync(file, 'utf8').split('\n').length - 1;
      expect(lines).toBeLessThanOrEqual(MAX_LINES);
    },
  );
});
