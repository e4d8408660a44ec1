/**
 * A throwaway project that holds packages the way a user gets them: each one `npm pack`ed and
 * unpacked into the project's node_modules (npm is always there; pnpm may run through npx),
 * plus links to already-installed packages such as the framework a peer dependency names.
 * The packages must be built first (`npm test` builds them).
 */
import { execFileSync } from 'node:child_process';
import {
  mkdirSync,
  mkdtempSync,
  readdirSync,
  realpathSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface PackedProject {
  readonly dir: string;
  /** Writes `source` to `file` in the project, runs it with node and returns its last output line. */
  run(file: string, source: string): string;
  remove(): void;
}

export function packedProject(options: {
  label: string;
  /** Package name → its folder in this repository, packed and unpacked. */
  packages: Record<string, string>;
  /** Package name → a folder whose installed copy is linked in as is. */
  links?: Record<string, string>;
}): PackedProject {
  const dir = mkdtempSync(join(tmpdir(), `floodgate-packed-${options.label}-`));
  for (const [name, from] of Object.entries(options.packages)) {
    const out = mkdtempSync(join(dir, '.pack-'));
    execFileSync('npm', ['pack', '--pack-destination', out], { cwd: from, stdio: 'pipe' });
    const tarball = readdirSync(out).find((f) => f.endsWith('.tgz'));
    if (!tarball) throw new Error(`npm pack produced no tarball for ${name}`);
    const target = join(dir, 'node_modules', name);
    mkdirSync(target, { recursive: true });
    execFileSync('tar', ['-xzf', join(out, tarball), '-C', target, '--strip-components=1']);
  }
  for (const [name, from] of Object.entries(options.links ?? {})) {
    symlinkSync(realpathSync(from), join(dir, 'node_modules', name));
  }
  return {
    dir,
    run(file, source) {
      writeFileSync(join(dir, file), source);
      const out = execFileSync(process.execPath, [file], {
        cwd: dir,
        encoding: 'utf8',
        timeout: 20_000,
      });
      return out.trim().split('\n').pop() ?? '';
    },
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}
