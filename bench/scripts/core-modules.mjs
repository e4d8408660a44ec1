// The core compiled one file per module (as tsc emits it), for the bench sections that run the
// engine's internals by hand (callgrind, memory per key, cluster slots): the published build is
// one minified bundle per entry, whose internals have no file of their own. Written to
// packages/core/.bench-modules/, at the depth of src/ so the store finds the repository's lua/.
import { execFileSync } from 'node:child_process';
import { cpSync, readdirSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const core = join(dirname(fileURLToPath(import.meta.url)), '../../packages/core');
const out = join(core, '.bench-modules');
rmSync(out, { recursive: true, force: true });
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
execFileSync(
  process.execPath,
  [tsc, '-p', 'tsconfig.build.json', '--outDir', out, '--declaration', 'false'],
  { cwd: core, stdio: 'inherit' },
);
// The CommonJS sources (the Lua assembler) are not tsc's to emit: copied beside their callers.
const src = join(core, 'src');
for (const file of readdirSync(src, { recursive: true }).map(String)) {
  if (file.endsWith('.cjs')) cpSync(join(src, file), join(out, file));
}
