// The compact build of a package (`build-package.mjs --bundle`), for @floodgate/core, whose
// file-per-module build weighed 738 KB unpacked (docs/benchmarks.md "Load time and weight"):
//
// - tsc compiles src/ as ES modules with their declarations into a temporary folder;
// - rollup bundles each entry of `exports` into dist/<entry>.js as CommonJS (still the one real
//   build: the ESM wrappers of build-package.mjs re-export it), the modules that several entries
//   share in dist/chunks/, so `@floodgate/core`, `/http` and `/testing` share one instance of
//   each; swc minifies them, keeping class names (error names): not minified, the JavaScript
//   alone would weigh 428 KB, over the package's 300 KB target;
// - rollup-plugin-dts does the same for the declarations (shared types stay one declaration, so
//   a RateLimiter from /http is the RateLimiter of the main entry), with their doc comments: an
//   editor's hover is where most users read them (102 KB of the 452 KB unpacked; without them
//   the package would weigh 350 KB), less those no hover shows as written (see
//   `unattachedDocsRemoved`);
// - the CommonJS sources (`src/**/*.cjs`, the Lua assembler) are minified the same way, beside
//   their declarations (`.d.cts`).
import { execFileSync } from 'node:child_process';
import {
  cpSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

const require = createRequire(import.meta.url);
const { rollup } = require('rollup');
const { dts } = require('rollup-plugin-dts');
const swc = require('@swc/core');
const ts = require('typescript');

/**
 * Class names kept (`error.name`, `constructor.name`, `instanceof` messages read as in the
 * sources); functions' and module-level names are shortened (each file is a CommonJS module,
 * its top level its own): keeping them costs ~24 KB.
 */
const MINIFY = {
  compress: { ecma: 2020, passes: 2 },
  mangle: { keep_classnames: true, toplevel: true },
  toplevel: true,
  module: false,
  ecma: 2020,
};

/** Builds `packageDir/dist` from `manifest.exports`; answers the number of files written. */
export async function bundlePackage(packageDir, manifest) {
  const dist = join(packageDir, 'dist');
  const compiled = mkdtempSync(join(tmpdir(), 'floodgate-bundle-'));
  try {
    execFileSync(
      process.execPath,
      [
        require.resolve('typescript/bin/tsc'),
        ...['-p', 'tsconfig.build.json', '--outDir', compiled],
        ...['--module', 'ES2022', '--moduleResolution', 'Bundler'],
        ...['--sourceMap', 'false', '--declarationMap', 'false'],
      ],
      { cwd: packageDir, stdio: 'inherit' },
    );
    const entries = entryPoints(manifest);
    // Relative imports of .cjs files stay requires of the copies beside the bundles.
    const external = (id) => !/^[./]/.test(id) || id.endsWith('.cjs');
    const js = await rollup({
      input: Object.fromEntries(entries.map((e) => [e, join(compiled, `${e}.js`)])),
      external,
      onwarn: quiet,
    });
    await js.write({
      dir: dist,
      format: 'cjs',
      exports: 'named',
      entryFileNames: '[name].js',
      chunkFileNames: 'chunks/[name].js',
      generatedCode: 'es2015',
      minifyInternalExports: false,
      plugins: [{ name: 'minify', renderChunk: (code) => minify(code) }],
    });
    const types = await rollup({
      input: Object.fromEntries(entries.map((e) => [e, join(compiled, `${e}.d.ts`)])),
      external,
      plugins: [dts()],
      onwarn: quiet,
    });
    await types.write({
      dir: dist,
      format: 'es',
      entryFileNames: '[name].d.ts',
      chunkFileNames: 'chunks/[name].ts',
      minifyInternalExports: false,
    });
    for (const file of readdirSync(dist, { recursive: true }).map(String)) {
      if (!file.endsWith('.d.ts')) continue;
      const path = join(dist, file);
      writeFileSync(path, unattachedDocsRemoved(path, readFileSync(path, 'utf8')));
    }
  } finally {
    rmSync(compiled, { recursive: true, force: true });
  }
  const src = join(packageDir, 'src');
  for (const file of readdirSync(src, { recursive: true }).map(String)) {
    if (file.endsWith('.d.cts')) cpSync(join(src, file), join(dist, file));
    else if (file.endsWith('.cjs')) {
      const { code } = await minify(readFileSync(join(src, file), 'utf8'));
      mkdirSync(dirname(join(dist, file)), { recursive: true });
      writeFileSync(join(dist, file), code);
    }
  }
}

/** The entry files of `exports` (`.` → index, `./http` → http/index), from their require path. */
function entryPoints(manifest) {
  return Object.values(manifest.exports ?? {})
    .map((target) => target?.require?.default)
    .filter((path) => typeof path === 'string' && path.endsWith('.js'))
    .map((path) => path.replace(/^\.\/dist\//, '').replace(/\.js$/, ''));
}

/**
 * The declarations without the doc comments no hover shows as written: a file's opening comment
 * (tsc keeps it before the file's first declaration; bundled, it sits detached before whichever
 * declaration comes first, whose hover then shows the file's summary, or is hidden behind that
 * declaration's own comment, as TypeScript shows only the last), and private members' comments.
 * A comment is kept when it is the last doc comment before a declaration, on the line above it.
 */
function unattachedDocsRemoved(path, text) {
  const file = ts.createSourceFile(path, text, ts.ScriptTarget.Latest, true);
  const isDoc = (range) => text.startsWith('/**', range.pos);
  const all = new Map();
  const kept = new Set();
  const visit = (node) => {
    const docs = (ts.getLeadingCommentRanges(text, node.pos) ?? []).filter(isDoc);
    for (const range of docs) all.set(range.pos, range);
    // The parser's own attachment (`jsDoc`: the doc comments of a declaration, not of its
    // first token): the last one is what a hover shows.
    const last = node.jsDoc?.at(-1);
    const isPrivate =
      node.modifiers?.some((m) => m.kind === ts.SyntaxKind.PrivateKeyword) ||
      (node.name && ts.isPrivateIdentifier(node.name));
    if (last && !isPrivate && !/\n[ \t]*\r?\n/.test(text.slice(last.end, node.getStart(file))))
      kept.add(last.pos);
    ts.forEachChild(node, visit);
  };
  ts.forEachChild(file, visit);
  let out = '';
  let from = 0;
  for (const range of [...all.values()].sort((a, b) => a.pos - b.pos)) {
    if (kept.has(range.pos)) continue;
    // The comment's whole lines when it has them to itself (indentation and line break).
    const lineStart = text.lastIndexOf('\n', range.pos - 1) + 1;
    const lineEnd = text.indexOf('\n', range.end) + 1 || text.length;
    const alone =
      !text.slice(lineStart, range.pos).trim() && !text.slice(range.end, lineEnd).trim();
    const [start, end] = alone ? [lineStart, lineEnd] : [range.pos, range.end];
    out += text.slice(from, start);
    from = end;
  }
  return (out + text.slice(from)).replace(/\n{3,}/g, '\n\n');
}

async function minify(code) {
  const out = await swc.minify(code, MINIFY);
  return { code: out.code, map: null };
}

// Cycles among modules are allowed inside the package (dependency-rules.mjs checks the layers).
function quiet(warning, warn) {
  if (warning.code !== 'CIRCULAR_DEPENDENCY') warn(warning);
}
