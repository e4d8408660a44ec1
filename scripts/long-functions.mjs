// Lists functions longer than a reader can hold (over 80 lines) in the packages' hand-written sources.
//
// Usage: node scripts/long-functions.mjs [root] [--max N] [--json]   (exits 1 when any is found)
// Counted: function declarations and expressions, arrow functions, methods, constructors and
// accessors, from their first line to their last (a nested function counts inside its parent
// too). Generated files (src/generated/) are left out. Run by
// packages/core/test/meta/function-length.test.ts, so `npm test` runs it.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

/** The longest function a reader is expected to hold in mind at once, in lines. */
export const MAX_FUNCTION_LINES = 80;

function sources(dir) {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return entry.name === 'generated' ? [] : sources(path);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts') ? [path] : [];
  });
}

/** A readable name for a function node: `Class.method`, `name`, or `<arrow>` with its holder. */
function nameOf(node) {
  const assigned =
    node.parent && ts.isVariableDeclaration(node.parent) && ts.isIdentifier(node.parent.name)
      ? node.parent.name.text
      : undefined;
  const own = node.name && ts.isIdentifier(node.name) ? node.name.text : assigned;
  let holder;
  for (let at = assigned ? node.parent.parent : node.parent; at && !holder; at = at.parent) {
    if ((ts.isClassDeclaration(at) || ts.isClassExpression(at)) && at.name) holder = at.name.text;
    else if (ts.isVariableDeclaration(at) && ts.isIdentifier(at.name)) holder = at.name.text;
    else if (ts.isFunctionDeclaration(at) && at.name) holder = at.name.text;
  }
  if (ts.isConstructorDeclaration(node)) return `${holder ?? '<class>'}.constructor`;
  if (own && holder && (ts.isMethodDeclaration(node) || ts.isAccessor(node))) {
    return `${holder}.${own}`;
  }
  return own ?? (holder ? `${holder} (function literal)` : '<function literal>');
}

/** Every function of `file` longer than `max` lines, as `{ file, line, name, lines }`. */
export function longFunctionsIn(file, max = MAX_FUNCTION_LINES) {
  const source = ts.createSourceFile(
    file,
    readFileSync(file, 'utf8'),
    ts.ScriptTarget.Latest,
    true,
  );
  const found = [];
  const visit = (node) => {
    if (ts.isFunctionLike(node) && 'body' in node && node.body) {
      const first = source.getLineAndCharacterOfPosition(node.getStart(source)).line;
      const last = source.getLineAndCharacterOfPosition(node.getEnd()).line;
      const lines = last - first + 1;
      if (lines > max) found.push({ file, line: first + 1, name: nameOf(node), lines });
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

/** Every function over `max` lines in `<root>/packages/*\/src`, longest first. */
export function longFunctions(root, max = MAX_FUNCTION_LINES) {
  const packagesDir = join(root, 'packages');
  return readdirSync(packagesDir)
    .flatMap((pkg) => sources(join(packagesDir, pkg, 'src')))
    .flatMap((file) => longFunctionsIn(file, max))
    .map((f) => ({ ...f, file: relative(root, f.file).split(sep).join('/') }))
    .sort((a, b) => b.lines - a.lines || a.file.localeCompare(b.file));
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const args = process.argv.slice(2);
  const json = args.includes('--json');
  const maxAt = args.indexOf('--max');
  const max = maxAt >= 0 ? Number(args[maxAt + 1]) : MAX_FUNCTION_LINES;
  const [rootArg] = args.filter((arg, i) => !arg.startsWith('--') && args[i - 1] !== '--max');
  const root = resolve(rootArg ?? join(dirname(fileURLToPath(import.meta.url)), '..'));
  const found = longFunctions(root, max);
  if (json) console.log(JSON.stringify(found));
  else {
    for (const f of found) console.error(`${f.file}:${f.line}: ${f.name} has ${f.lines} lines`);
    console.log(`functions over ${max} lines: ${found.length}`);
  }
  process.exitCode = found.length > 0 ? 1 : 0;
}
