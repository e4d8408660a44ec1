// Checks the import graph of packages/*/{src,test}: no cycles, and the layers between packages hold.
//
// Rules:
//   cycle            no file reaches itself through its imports (type-only imports count too)
//   core-root-http   core's root (packages/core/src outside http/) never imports core's http/
//   adapter-entry    an adapter's source imports another workspace package only through
//                    `@floodgate/core` or `@floodgate/core/http`, never by relative path
//   foreign-tests    no package's tests import another package's test code
//
// Usage: node scripts/dependency-rules.mjs [root] [--json]   (exits 1 and lists every violation)
// The jest suite runs it (packages/core/test/meta/dependency-rules.test.ts), so `npm test` does.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

/** The adapters' allowed ways into another workspace package. */
const ADAPTER_ENTRIES = new Set(['@floodgate/core', '@floodgate/core/http']);

/** Folders of a package whose `.ts` files are checked. */
const CHECKED_FOLDERS = ['src', 'test'];

function tsFiles(dir) {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) {
      return entry.name === 'node_modules' || entry.name === 'dist' ? [] : tsFiles(path);
    }
    return /\.(m|c)?tsx?$/.test(entry.name) && !entry.name.endsWith('.d.ts') ? [path] : [];
  });
}

/** Every module specifier a file names: imports, re-exports, `import()`, `require()`, `jest.mock()`. */
export function specifiersOf(file) {
  const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest);
  const found = [];
  const visit = (node) => {
    if (
      (ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) &&
      node.moduleSpecifier &&
      ts.isStringLiteral(node.moduleSpecifier)
    ) {
      found.push(node.moduleSpecifier.text);
    } else if (
      ts.isImportEqualsDeclaration(node) &&
      ts.isExternalModuleReference(node.moduleReference) &&
      ts.isStringLiteral(node.moduleReference.expression)
    ) {
      found.push(node.moduleReference.expression.text);
    } else if (ts.isCallExpression(node) && node.arguments.length > 0) {
      const [first] = node.arguments;
      const callee = node.expression;
      const named =
        callee.kind === ts.SyntaxKind.ImportKeyword ||
        (ts.isIdentifier(callee) && callee.text === 'require') ||
        (ts.isPropertyAccessExpression(callee) &&
          ts.isIdentifier(callee.expression) &&
          callee.expression.text === 'jest' &&
          ['mock', 'requireActual'].includes(callee.name.text));
      if (named && first && ts.isStringLiteralLike(first)) found.push(first.text);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

/** The file a relative specifier names (`./x.js` → `./x.ts`, `./dir` → `./dir/index.ts`). */
function resolveRelative(from, specifier) {
  const base = resolve(dirname(from), specifier);
  const stem = base.replace(/\.(m|c)?js$/, '');
  const candidates = [base, `${stem}.ts`, `${stem}.mts`, `${stem}.tsx`, join(base, 'index.ts')];
  return candidates.find((path) => existsSync(path) && statSync(path).isFile());
}

/** `{ pkg, folder, path }` for a file under `<root>/packages/<pkg>/<folder>/…`, else undefined. */
function placeOf(root, file) {
  const parts = relative(join(root, 'packages'), file).split(sep);
  if (parts.length < 3 || parts[0] === '..') return undefined;
  return { pkg: parts[0], folder: parts[1], path: parts.slice(2).join('/') };
}

/** Strongly connected components with more than one file, or a file importing itself (Tarjan). */
function cycles(graph) {
  let index = 0;
  const indices = new Map();
  const low = new Map();
  const stack = [];
  const onStack = new Set();
  const found = [];
  const connect = (node) => {
    indices.set(node, index);
    low.set(node, index);
    index += 1;
    stack.push(node);
    onStack.add(node);
    for (const next of graph.get(node) ?? []) {
      if (!indices.has(next)) {
        connect(next);
        low.set(node, Math.min(low.get(node), low.get(next)));
      } else if (onStack.has(next)) {
        low.set(node, Math.min(low.get(node), indices.get(next)));
      }
    }
    if (low.get(node) === indices.get(node)) {
      const component = [];
      let member;
      do {
        member = stack.pop();
        onStack.delete(member);
        component.push(member);
      } while (member !== node);
      if (component.length > 1 || graph.get(node)?.has(node)) found.push(component.sort());
    }
  };
  for (const node of [...graph.keys()].sort()) if (!indices.has(node)) connect(node);
  return found;
}

/** One path around a cycle, starting and ending at its first file, for a readable message. */
function pathAround(graph, component) {
  const members = new Set(component);
  const start = component[0];
  const previous = new Map([[start, undefined]]);
  const queue = [start];
  while (queue.length > 0) {
    const node = queue.shift();
    for (const next of graph.get(node) ?? []) {
      if (next === start) {
        const path = [start];
        for (let at = node; at !== undefined && at !== start; at = previous.get(at)) {
          path.splice(1, 0, at);
        }
        return [...path, start];
      }
      if (members.has(next) && !previous.has(next)) {
        previous.set(next, node);
        queue.push(next);
      }
    }
  }
  return [...component, start];
}

/**
 * Every violation of the dependency rules under `root` (the repository), as
 * `{ rule, file, message }`; an empty list when the import graph is in order.
 */
export function checkDependencies(root) {
  const packagesDir = join(root, 'packages');
  const files = readdirSync(packagesDir).flatMap((pkg) =>
    CHECKED_FOLDERS.flatMap((folder) => tsFiles(join(packagesDir, pkg, folder))),
  );
  const graph = new Map();
  const violations = [];
  const name = (file) => relative(root, file).split(sep).join('/');
  for (const file of files) {
    const from = placeOf(root, file);
    const edges = new Set();
    for (const specifier of specifiersOf(file)) {
      const target = specifier.startsWith('.') ? resolveRelative(file, specifier) : undefined;
      const to = target ? placeOf(root, target) : undefined;
      if (target && to && files.includes(target)) edges.add(target);
      if (from?.pkg === 'core' && from.folder === 'src' && !from.path.startsWith('http/')) {
        if (to?.pkg === 'core' && to.folder === 'src' && to.path.startsWith('http/')) {
          violations.push({
            rule: 'core-root-http',
            file: name(file),
            message: `core's root imports ${name(target)}; http/ builds on the root, not the other way`,
          });
        }
      }
      if (from && from.pkg !== 'core' && from.folder === 'src') {
        const crossesByPath = to !== undefined && to.pkg !== from.pkg;
        const deepImport =
          specifier.startsWith('@floodgate/core') && !ADAPTER_ENTRIES.has(specifier);
        if (crossesByPath || deepImport) {
          violations.push({
            rule: 'adapter-entry',
            file: name(file),
            message: `imports '${specifier}'; adapters use only @floodgate/core and @floodgate/core/http`,
          });
        }
      }
      if (from?.folder === 'test' && to?.folder === 'test' && to.pkg !== from.pkg) {
        violations.push({
          rule: 'foreign-tests',
          file: name(file),
          message: `imports ${name(target)}, another package's test code`,
        });
      }
    }
    graph.set(file, edges);
  }
  for (const component of cycles(graph)) {
    violations.push({
      rule: 'cycle',
      file: name(component[0]),
      message: `import cycle: ${pathAround(graph, component).map(name).join(' -> ')}`,
    });
  }
  return violations;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const args = process.argv.slice(2);
  const json = args.includes('--json');
  const [rootArg] = args.filter((arg) => arg !== '--json');
  const root = resolve(rootArg ?? join(dirname(fileURLToPath(import.meta.url)), '..'));
  const violations = checkDependencies(root);
  if (json) {
    console.log(JSON.stringify(violations));
  } else {
    for (const v of violations) console.error(`${v.rule}: ${v.file}: ${v.message}`);
    console.log(
      violations.length > 0
        ? `dependency rules: ${violations.length} violation(s)`
        : 'dependency rules: no cycles, layers in order',
    );
  }
  process.exitCode = violations.length > 0 ? 1 : 0;
}
