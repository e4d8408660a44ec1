/** The hand-written TypeScript sources of every package (each `src` folder), for structural tests. */
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

/** `packages/`, whose `<name>/src` folders the structural tests read. */
export const PACKAGES_DIR = join(__dirname, '../../..');

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return entry.name === 'generated' ? [] : sources(path);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.test.ts') ? [path] : [];
  });
}

/** Every package's source files (generated ones and tests aside), as absolute paths. */
export function packageSources(): string[] {
  return readdirSync(PACKAGES_DIR)
    .map((name) => join(PACKAGES_DIR, name, 'src'))
    .filter((dir) => existsSync(dir))
    .flatMap(sources);
}
