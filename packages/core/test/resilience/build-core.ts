/**
 * Compiles packages/core/src to CommonJS in a temporary directory (with swc, as jest does), so
 * forked child processes can run the real core without a TypeScript loader; the .cjs files and
 * lua/ go where the package build puts them (dist/lua/, dist/lua/sources/).
 */
import { cpSync, mkdirSync, mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { transformFileSync } from '@swc/core';

const SRC = join(__dirname, '../../src');

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sources(path);
    return /\.(ts|cjs)$/.test(entry.name) && !/\.(test|d)\.c?ts$/.test(entry.name) ? [path] : [];
  });
}

/** Returns the path of the compiled `index.js`. */
export function buildCoreForChildren(): string {
  const out = mkdtempSync(join(tmpdir(), 'floodgate-core-'));
  writeFileSync(join(out, 'package.json'), '{"type":"commonjs"}');
  cpSync(join(SRC, '../../../lua'), join(out, 'lua/sources'), {
    recursive: true,
    filter: (path) => !path.includes(`${join('lua', 'build')}`),
  });
  for (const file of sources(SRC)) {
    if (file.endsWith('.cjs')) {
      cpSync(file, join(out, relative(SRC, file)));
      continue;
    }
    const { code } = transformFileSync(file, {
      jsc: { parser: { syntax: 'typescript' }, target: 'es2022' },
      module: { type: 'commonjs' },
      sourceMaps: false,
    });
    const target = join(out, relative(SRC, file)).replace(/\.ts$/, '.js');
    mkdirSync(dirname(target), { recursive: true });
    writeFileSync(target, code);
  }
  return join(out, 'index.js');
}
