/** Reads lua/scripts.sha1, the SHA1 of every fixed script as `pnpm generate` pinned it. */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/** The pinned scripts, in the file's order: name and SHA1. */
export function readPinnedScripts(): { name: string; sha1: string }[] {
  const text = readFileSync(join(__dirname, '../../../../lua/scripts.sha1'), 'utf8');
  return text
    .trimEnd()
    .split('\n')
    .map((line) => {
      const [sha1, name] = line.split(/ {2}/);
      return { name: name!, sha1: sha1! };
    });
}
