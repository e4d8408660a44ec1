/** Every source file of every package opens with a comment saying what it holds. */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import ts from 'typescript';

const PACKAGES = join(__dirname, '../../..');

/** The `.ts` files under `dir`, generated ones included (they say they are generated). */
function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sources(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

/**
 * Whether `text` opens with a file comment: a comment at its very start that is not merely the
 * doc comment of its first declaration (one is followed by a blank line, an import or a
 * re-export; a doc comment sits right on top of what it documents).
 */
function opensWithPurposeComment(text: string): boolean {
  const ranges = ts.getLeadingCommentRanges(text, 0) ?? [];
  const first = ranges[0];
  if (first === undefined || first.pos !== 0) return false;
  if (!/\w/.test(text.slice(first.pos, first.end))) return false;
  if (ranges.length > 1) return true;
  const after = text.slice(first.end);
  if (/^[ \t]*\r?\n[ \t]*\r?\n/.test(after)) return true;
  const next = after.trimStart();
  return next.startsWith('import ') || /^export (type )?(\*|\{[^}]*\}) from /.test(next);
}

describe('purpose comments', () => {
  const files = readdirSync(PACKAGES, { withFileTypes: true })
    .filter((entry) => entry.isDirectory())
    .flatMap((entry) => {
      try {
        return sources(join(PACKAGES, entry.name, 'src'));
      } catch {
        return [];
      }
    });

  it('are checked in every package', () => {
    const names = files.map((f) => relative(PACKAGES, f));
    expect(names).toContain('core/src/rate-limiter.ts');
    expect(names).toContain('nestjs/src/rate-limit.guard.ts');
  });

  it('open every source file', () => {
    const missing = files.filter((f) => !opensWithPurposeComment(readFileSync(f, 'utf8')));
    expect(missing.map((f) => relative(PACKAGES, f))).toEqual([]);
  });

  it('are told apart from code and from the doc comment of the first declaration', () => {
    expect(opensWithPurposeComment("// Time for the limiters.\nimport { x } from './x';\n")).toBe(
      true,
    );
    expect(opensWithPurposeComment('/**\n * The registry.\n */\n\nexport const a = 1;\n')).toBe(
      true,
    );
    expect(opensWithPurposeComment("/** The entry. */\nexport { a } from './a';\n")).toBe(true);
    expect(opensWithPurposeComment("import { x } from './x';\n// later\n")).toBe(false);
    expect(opensWithPurposeComment('/** Options of a policy. */\nexport interface O {}\n')).toBe(
      false,
    );
    expect(opensWithPurposeComment('/** */\n\nexport const a = 1;\n')).toBe(false);
  });
});
