#!/usr/bin/env node
// Builds one package (run in its folder): CommonJS with tsc, then a thin ESM wrapper per entry.
//
// Why one implementation, not two builds: a package built twice (ESM + CJS) is loaded twice when
// one app both imports and requires it (the dual-package hazard): two DeniedCache maps, two
// breakers per store, two Nest metadata keys that never match. So tsc emits CommonJS only
// (dist/**/*.js + .d.ts), and each entry of `exports` gets dist/<entry>.mjs, which imports that
// CommonJS file and re-exports its names, plus dist/<entry>.d.mts, which re-exports its types.
// `import` and `require` therefore reach the same module instance.
//
// The wrappers are generated from the `exports` map of package.json: every entry whose
// `import.default` ends in .mjs is paired with its `require.default` (.js).
import { execFileSync } from 'node:child_process';
import { cpSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { basename, join, resolve } from 'node:path';

const packageDir = process.cwd();
const manifest = JSON.parse(readFileSync(join(packageDir, 'package.json'), 'utf8'));

rmSync(join(packageDir, 'dist'), { recursive: true, force: true });
// `--bundle` (core): one CommonJS bundle per entry, minified, with shared chunks (bundle-package.mjs).
const bundled = process.argv.includes('--bundle');
if (bundled) await (await import('./bundle-package.mjs')).bundlePackage(packageDir, manifest);
else compile();

function compile() {
  const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
  execFileSync(process.execPath, [tsc, '-p', 'tsconfig.build.json'], {
    cwd: packageDir,
    stdio: 'inherit',
  });

  // CommonJS sources written as .cjs (with their .d.cts types) are not tsc's to emit: copied as
  // they are, beside the files that require them.
  const src = join(packageDir, 'src');
  for (const file of readdirSync(src, { recursive: true })) {
    const path = String(file);
    if (path.endsWith('.cjs') || path.endsWith('.d.cts'))
      cpSync(join(src, path), join(packageDir, 'dist', path));
  }

  // The shipped JavaScript without comments (the sources and the declarations keep theirs): a
  // third of the compiled files' bytes, which nobody reads in node_modules.
  const ts = createRequire(import.meta.url)('typescript');
  const printer = ts.createPrinter({ removeComments: true });
  const dist = join(packageDir, 'dist');
  for (const file of readdirSync(dist, { recursive: true })) {
    const path = join(dist, String(file));
    if (!/\.c?js$/.test(path)) continue;
    const source = ts.createSourceFile(path, readFileSync(path, 'utf8'), ts.ScriptTarget.Latest);
    writeFileSync(path, printer.printFile(source));
  }
}

const requireFromPackage = createRequire(join(packageDir, 'package.json'));
let wrappers = 0;
for (const [subpath, target] of Object.entries(manifest.exports ?? {})) {
  const esm = target?.import?.default;
  const cjs = target?.require?.default;
  if (typeof esm !== 'string' || !esm.endsWith('.mjs')) continue;
  if (typeof cjs !== 'string' || !cjs.endsWith('.js')) {
    throw new Error(
      `${manifest.name} exports["${subpath}"]: import.default needs a require.default .js`,
    );
  }
  const exported = Object.keys(requireFromPackage(resolve(packageDir, cjs)));
  const names = exported.filter((name) => name !== '__esModule' && name !== 'default').sort();
  // A CommonJS `exports.default` (tsc's `export default`) becomes the ESM default export.
  const hasDefault = exported.includes('default');
  const from = `./${basename(cjs)}`;
  writeFileSync(
    resolve(packageDir, esm),
    `// ESM entry: re-exports the CommonJS build, so import and require share one instance.\n` +
      `import cjs from '${from}';\n\n` +
      `export const {\n${names.map((name) => `  ${name},`).join('\n')}\n} = cjs;\n` +
      (hasDefault ? 'export default cjs.default;\n' : ''),
  );
  writeFileSync(
    resolve(packageDir, esm.replace(/\.mjs$/, '.d.mts')),
    `export * from '${from}';\n${hasDefault ? `export { default } from '${from}';\n` : ''}`,
  );
  wrappers++;
}
console.log(
  `${manifest.name}: CommonJS ${bundled ? 'bundles (minified)' : 'build'} + ${wrappers} ESM wrapper(s)`,
);
