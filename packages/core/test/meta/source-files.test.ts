/**
 * Files that hold one idea: no hand-written source file of a package grows much past 300 lines
 * (generated files aside; 320 leaves room for a doc comment, not for a second idea). A file that does has taken on a second idea; split it so each
 * file's name says what it holds (e.g. rate-limiter.ts, rate-limiter-options.ts, acquire.ts,
 * failure-policy.ts, store-guard.ts).
 */
import { readFileSync } from 'node:fs';
import { relative } from 'node:path';
import { PACKAGES_DIR, packageSources } from './package-sources';

const MAX_LINES = 320;
const packagesDir = PACKAGES_DIR;
const files = packageSources();

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
