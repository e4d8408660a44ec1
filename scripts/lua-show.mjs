#!/usr/bin/env node
// `pnpm lua:show <policy kinds…> [--batch] [--per-policy] [--comments]`: prints the exact script
// a limiter with those policies sends to Redis (one kind per policy, e.g. `fixedWindow gcra` or
// `fixed-window gcra`), assembled from lua/ by the store's own assembler. Several policies keep
// one key per caller, as redisStore does by default (`--per-policy`: RateLimiter's
// `stateKeys: 'per-policy'`, or a sliding log among them); `--batch` prints the batch variant.
// `--comments` prints the same lines with lua/'s comments (what is sent has their text removed;
// line numbers are the same, so Redis's `user_script:<line>` points into either). The script's
// name and SHA1 go to stderr, the script alone to stdout.
import { readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const luaDir = join(root, 'lua');
const { createAssembler, stripComments } = createRequire(import.meta.url)(
  join(root, 'packages/core/src/lua/assemble.cjs'),
);

const args = process.argv.slice(2);
const flags = new Set(args.filter((a) => a.startsWith('--')));
const unknown = [...flags].filter(
  (f) => !['--batch', '--per-policy', '--comments', '--help'].includes(f),
);
// fixedWindow → fixed-window, the name of its lua/ file.
const kinds = args
  .filter((a) => !a.startsWith('--'))
  .map((a) => a.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`));
if (kinds.length === 0 || unknown.length > 0 || flags.has('--help')) {
  console.error(
    'usage: pnpm lua:show <policy kinds…> [--batch] [--per-policy] [--comments]\n' +
      '  e.g. pnpm lua:show fixedWindow fixedWindow gcra --batch',
  );
  process.exit(unknown.length > 0 || kinds.length === 0 ? 1 : 0);
}

const list = (dir) =>
  readdirSync(join(luaDir, dir), { withFileTypes: true })
    .filter((e) => e.isFile() && e.name.endsWith('.lua'))
    .map((e) => e.name)
    .sort();
const read = (file) => readFileSync(join(luaDir, file), 'utf8');
const withComments = flags.has('--comments');
const assembler = createAssembler({
  read: withComments ? read : (file) => stripComments(read(file)),
  list,
});
const sent = withComments
  ? createAssembler({ read: (f) => stripComments(read(f)), list })
  : assembler;

try {
  const combined =
    !flags.has('--per-policy') && kinds.length > 1 && kinds.every((k) => assembler.combines(k));
  const options = { batch: flags.has('--batch'), combined };
  const script = assembler.script(kinds, options);
  const { name, sha1 } = sent.script(kinds, options);
  console.error(`-- ${name} (SHA1 ${sha1} as sent)`);
  process.stdout.write(script.source);
} catch (error) {
  console.error(`lua:show: ${error.message} (kinds: ${assembler.kinds().join(', ')})`);
  process.exit(1);
}
