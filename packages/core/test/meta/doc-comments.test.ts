/**
 * The names users hover first carry a doc comment with an `@example` (STYLE.md: Hono's
 * middleware has one on every export), and no source keeps a note pointing at a past issue.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import ts from 'typescript';
import { packageSources } from './package-sources';

const packages = join(__dirname, '../../..');

const HOVERED: Record<string, string[]> = {
  'core/src/index.ts': [
    'RateLimiter',
    'ConcurrencyLimiter',
    'memoryStore',
    'redisStore',
    'FixedWindowOptions',
    'SlidingLogOptions',
    'SlidingWindowOptions',
    'TokenBucketOptions',
    'GcraOptions',
    'LeakyBucketOptions',
    'SmoothBurstyOptions',
    'SmoothWarmingUpOptions',
  ],
  'nestjs/src/index.ts': ['RateLimitModule', 'RateLimitGuard'],
};

const entries = Object.keys(HOVERED).map((entry) => join(packages, entry));
const program = ts.createProgram(entries, {
  module: ts.ModuleKind.NodeNext,
  moduleResolution: ts.ModuleResolutionKind.NodeNext,
  target: ts.ScriptTarget.ES2022,
  experimentalDecorators: true,
  noEmit: true,
  skipLibCheck: true,
  types: ['node'],
});
const checker = program.getTypeChecker();

function exportedSymbol(entry: string, name: string): ts.Symbol {
  const file = program.getSourceFile(join(packages, entry));
  const module = file && checker.getSymbolAtLocation(file);
  const symbol = module && checker.getExportsOfModule(module).find((s) => s.name === name);
  if (symbol === undefined) throw new Error(`${entry} does not export ${name}`);
  return symbol.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(symbol) : symbol;
}

describe.each(Object.entries(HOVERED))('%s', (entry, names) => {
  it.each(names)('%s has a doc comment with an @example', (name) => {
    const symbol = exportedSymbol(entry, name);
    expect(ts.displayPartsToString(symbol.getDocumentationComment(checker)).length).toBeGreaterThan(
      40,
    );
    const example = symbol.getJsDocTags(checker).find((tag) => tag.name === 'example');
    expect(ts.displayPartsToString(example?.text ?? [])).toMatch(/```ts\n[\s\S]*\b\w+\(/);
  });
});

it('no package source points at a past issue, e.g. "(issue 4)"', () => {
  const stale = packageSources().filter((file) => /\(issue \d+\)/.test(readFileSync(file, 'utf8')));
  expect(stale).toEqual([]);
});
