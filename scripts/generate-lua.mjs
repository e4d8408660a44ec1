#!/usr/bin/env node
// `pnpm generate`: writes every fixed script variant (packages/core/src/lua/assemble.cjs, the
// assembler the store runs) as a readable .lua file to lua/build/ (gitignored), and pins the
// SHA1 of each as the store sends it (its comments' text removed) in lua/scripts.sha1, which is
// committed: a Lua change shows there as changed hashes. `--check` fails when lua/scripts.sha1 is
// stale. `--dist <dir>` (the package build) writes the package's copy of lua/ without comments
// to <dir> and lua/build/, and leaves lua/scripts.sha1 as it is.
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const luaDir = join(root, 'lua');
const pinned = join(luaDir, 'scripts.sha1');
const { createAssembler, fixedScripts, stripComments } = createRequire(import.meta.url)(
  join(root, 'packages/core/src/lua/assemble.cjs'),
);

const list = (dir) =>
  readdirSync(join(luaDir, dir), { withFileTypes: true })
    .filter((e) => e.isFile() && e.name.endsWith('.lua'))
    .map((e) => e.name)
    .sort();
const read = (file) => readFileSync(join(luaDir, file), 'utf8');
const readable = createAssembler({ read, list });
const sent = createAssembler({ read: (file) => stripComments(read(file)), list });

const scripts = fixedScripts(sent);
const text = `${scripts.map((s) => `${s.sha1}  ${s.name}`).join('\n')}\n`;

if (process.argv.includes('--check')) {
  let current = '';
  try {
    current = readFileSync(pinned, 'utf8');
  } catch {}
  if (current !== text) {
    console.error('lua/scripts.sha1 is stale: run `pnpm generate` and commit it.');
    process.exit(1);
  }
  console.log(`generated scripts are up to date (${scripts.length} scripts)`);
  process.exit(0);
}

// The package build (`--dist`) leaves lua/scripts.sha1 alone, so that `--check` after a build
// still fails on SHA1s nobody committed.
const distAt = process.argv.indexOf('--dist');
if (distAt < 0) writeFileSync(pinned, text);
const build = join(luaDir, 'build');
rmSync(build, { recursive: true, force: true });
mkdirSync(build, { recursive: true });
for (const s of fixedScripts(readable)) writeFileSync(join(build, `${s.name}.lua`), s.source);
console.log(
  `wrote ${distAt < 0 ? 'lua/scripts.sha1 and ' : ''}lua/build/ (${scripts.length} scripts)`,
);

if (distAt > 0) {
  const dist = join(process.cwd(), process.argv[distAt + 1] ?? '');
  for (const dir of ['', 'include', 'leases', 'probes', 'global']) {
    mkdirSync(join(dist, dir), { recursive: true });
    for (const file of list(dir))
      writeFileSync(join(dist, dir, file), stripComments(read(join(dir, file))));
  }
  console.log(`wrote the package's lua/ (comments removed) to ${dist.slice(root.length + 1)}`);
}
