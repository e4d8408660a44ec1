/**
 * The packages the way a user gets them: every package under packages/ `pnpm pack`ed (pnpm
 * rewrites `workspace:*` to the real version, as `pnpm publish` does) and unpacked into the
 * node_modules of one throwaway install, next to links to their dependencies and to the
 * frameworks and tools a user would have installed (the peer dependencies, TypeScript, Jest).
 *
 * One install serves every smoke test of a run: it lives in .tmp/packed/<hash of the built
 * packages>, is made once under a lock (jest runs test files in parallel workers) and is
 * reused while the packages are unchanged. Each test works in a project folder of its own inside
 * it, so Node and TypeScript find the packages by walking up to the shared node_modules.
 * The packages must be built first (`npm test` builds them).
 */
import { type ExecFileSyncOptions, execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { dirname, join, relative } from 'node:path';

export const REPO_ROOT = join(__dirname, '../..');
const PACKAGES_DIR = join(REPO_ROOT, 'packages');
const CACHE_DIR = join(REPO_ROOT, '.tmp/packed');

/**
 * What a user has installed beside Floodgate, linked from this workspace's own installs:
 * name → the folder (relative to the repository) that holds its installed copy.
 */
const LINKS: Record<string, string> = {
  express: 'packages/express/node_modules/express',
  '@types/express': 'packages/express/node_modules/@types/express',
  fastify: 'packages/fastify/node_modules/fastify',
  koa: 'packages/koa/node_modules/koa',
  '@types/koa': 'packages/koa/node_modules/@types/koa',
  // NestJS 11 (CommonJS), from the root devDependencies: these apps are CommonJS and Node 20
  // without require(esm); packages/nestjs itself develops against NestJS 12 (ESM only).
  '@nestjs/common': 'node_modules/@nestjs/common',
  '@nestjs/core': 'node_modules/@nestjs/core',
  '@nestjs/platform-express': 'node_modules/@nestjs/platform-express',
  '@nestjs/testing': 'node_modules/@nestjs/testing',
  'reflect-metadata': 'node_modules/reflect-metadata',
  rxjs: 'node_modules/rxjs',
  '@opentelemetry/api': 'packages/opentelemetry/node_modules/@opentelemetry/api',
  typescript: 'node_modules/typescript',
  jest: 'node_modules/jest',
  'ts-jest': 'node_modules/ts-jest',
  supertest: 'node_modules/supertest',
  '@types/jest': 'node_modules/@types/jest',
  '@types/node': 'node_modules/@types/node',
  '@types/supertest': 'node_modules/@types/supertest',
};

/**
 * What npm would install with the packages: every dependency they declare (other than each
 * other), linked from the package's own installed copy.
 */
function dependencyLinks(packages: Record<string, string>): Record<string, string> {
  const links: Record<string, string> = {};
  for (const dir of Object.values(packages)) {
    const manifest = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));
    for (const name of Object.keys(manifest.dependencies ?? {})) {
      if (name.startsWith('@floodgate/') || name in LINKS) continue;
      links[name] = relative(REPO_ROOT, join(dir, 'node_modules', name));
    }
  }
  return links;
}

export interface PackedInstall {
  /** The install's root: its node_modules holds the unpacked packages and the links. */
  readonly dir: string;
  /** Package name → the path of its tarball. */
  readonly tarballs: Readonly<Record<string, string>>;
  /** Package name → the folder it was unpacked to. */
  readonly unpacked: Readonly<Record<string, string>>;
  /** A fresh project folder inside the install, with the given files written into it. */
  project(label: string, files?: Record<string, string>): PackedProject;
}

export interface PackedProject {
  readonly dir: string;
  write(file: string, source: string): void;
  /** Runs `node [...nodeArgs] file` in the project and returns its last line of output. */
  run(file: string, options?: { node?: string; nodeArgs?: string[] }): string;
  /** Runs a command in the project; throws with its output if it exits non-zero. */
  exec(command: string, args: string[], options?: ExecFileSyncOptions): string;
  remove(): void;
}

/** The workspace's packages: name → folder. */
export function workspacePackages(): Record<string, string> {
  const found: Record<string, string> = {};
  for (const entry of readdirSync(PACKAGES_DIR)) {
    const manifest = join(PACKAGES_DIR, entry, 'package.json');
    if (!existsSync(manifest)) continue;
    const { name, private: isPrivate } = JSON.parse(readFileSync(manifest, 'utf8'));
    if (!isPrivate) found[name] = join(PACKAGES_DIR, entry);
  }
  return found;
}

function filesUnder(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    return entry.isDirectory() ? filesUnder(path) : [path];
  });
}

/** A hash of everything that goes into the tarballs, so a rebuilt package gets a new install. */
function contentHash(packages: Record<string, string>): string {
  const hash = createHash('sha1');
  for (const dir of Object.values(packages).sort()) {
    const files = ['package.json', 'README.md', 'LICENSE', 'CHANGELOG.md']
      .map((f) => join(dir, f))
      .filter(existsSync)
      .concat(filesUnder(join(dir, 'dist')).sort());
    for (const file of files) {
      hash.update(relative(REPO_ROOT, file));
      hash.update(readFileSync(file));
    }
  }
  // This file too: a change to how the install is made makes a new one.
  hash.update(readFileSync(__filename));
  return hash.digest('hex').slice(0, 16);
}

function pnpm(args: string[], cwd: string): void {
  try {
    execFileSync('pnpm', args, { cwd, stdio: 'pipe' });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    execFileSync('npx', ['--yes', 'pnpm@10', ...args], { cwd, stdio: 'pipe' });
  }
}

function sleep(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

/**
 * Runs `make` once for `dir` across processes: the first caller takes `<dir>.lock`, the others
 * wait for the `.complete` marker. A lock older than 5 minutes is taken as abandoned.
 */
export function onceAcrossWorkers(dir: string, make: () => void): void {
  const done = join(dir, '.complete');
  const lock = `${dir}.lock`;
  const deadline = Date.now() + 300_000;
  mkdirSync(dirname(dir), { recursive: true });
  while (!existsSync(done)) {
    try {
      mkdirSync(lock);
    } catch {
      if (Date.now() - statSync(lock, { throwIfNoEntry: false })!.mtimeMs > 300_000) {
        rmSync(lock, { recursive: true, force: true });
      }
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${lock}`);
      sleep(200);
      continue;
    }
    try {
      if (!existsSync(done)) {
        rmSync(dir, { recursive: true, force: true });
        mkdirSync(dir, { recursive: true });
        make();
        writeFileSync(done, '');
      }
    } finally {
      rmSync(lock, { recursive: true, force: true });
    }
  }
}

/** Installs that belong to older builds, kept an hour for runs that may still use them. */
function removeStaleInstalls(keep: string): void {
  if (!existsSync(CACHE_DIR)) return;
  for (const entry of readdirSync(CACHE_DIR)) {
    const path = join(CACHE_DIR, entry);
    if (entry === keep || entry.startsWith('node-')) continue;
    if (Date.now() - statSync(path).mtimeMs > 3_600_000) {
      rmSync(path, { recursive: true, force: true });
    }
  }
}

export function packedInstall(): PackedInstall {
  const packages = workspacePackages();
  const hash = contentHash(packages);
  const dir = join(CACHE_DIR, hash);
  const tarballs: Record<string, string> = {};
  const unpacked: Record<string, string> = {};
  for (const name of Object.keys(packages)) {
    const file = `${name.replace('@', '').replace('/', '-')}.tgz`;
    tarballs[name] = join(dir, 'tarballs', file);
    unpacked[name] = join(dir, 'node_modules', name);
  }
  onceAcrossWorkers(dir, () => {
    removeStaleInstalls(hash);
    writeFileSync(join(dir, 'package.json'), '{ "private": true }\n');
    for (const [name, from] of Object.entries(packages)) {
      const out = mkdtempSync(join(dir, '.pack-'));
      pnpm(['pack', '--pack-destination', out], from);
      const tarball = readdirSync(out).find((f) => f.endsWith('.tgz'));
      if (!tarball) throw new Error(`pnpm pack produced no tarball for ${name}`);
      mkdirSync(join(dir, 'tarballs'), { recursive: true });
      execFileSync('mv', [join(out, tarball), tarballs[name]!]);
      rmSync(out, { recursive: true });
      mkdirSync(unpacked[name]!, { recursive: true });
      execFileSync('tar', ['-xzf', tarballs[name]!, '-C', unpacked[name]!, '--strip-components=1']);
    }
    for (const [name, from] of Object.entries({ ...LINKS, ...dependencyLinks(packages) })) {
      const target = join(dir, 'node_modules', name);
      mkdirSync(dirname(target), { recursive: true });
      symlinkSync(realpathSync(join(REPO_ROOT, from)), target);
    }
  });
  return {
    dir,
    tarballs,
    unpacked,
    project(label, files = {}) {
      const projectDir = mkdtempSync(join(dir, `${label}-`));
      const project = makeProject(projectDir);
      for (const [file, source] of Object.entries(files)) project.write(file, source);
      return project;
    },
  };
}

function makeProject(dir: string): PackedProject {
  const exec: PackedProject['exec'] = (command, args, options = {}) => {
    try {
      return execFileSync(command, args, {
        cwd: dir,
        encoding: 'utf8',
        stdio: 'pipe',
        // Generous: the machine may be busy with the rest of the suite.
        timeout: 300_000,
        ...options,
      }) as string;
    } catch (error) {
      const { stdout, stderr } = error as { stdout?: string; stderr?: string };
      throw new Error(`${command} ${args.join(' ')} failed in ${dir}:\n${stdout}\n${stderr}`);
    }
  };
  return {
    dir,
    write(file, source) {
      mkdirSync(dirname(join(dir, file)), { recursive: true });
      writeFileSync(join(dir, file), source);
    },
    run(file, options = {}) {
      const out = exec(options.node ?? process.execPath, [...(options.nodeArgs ?? []), file], {
        timeout: 60_000,
      });
      return out.trim().split('\n').pop() ?? '';
    },
    exec,
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}

/**
 * A Node.js 22 binary from the npm registry: the `node-<platform>-<arch>` package that the
 * `node` package would fetch in an install script, installed directly (no install script runs),
 * once into .tmp/packed/node-22 and reused by later runs.
 */
export function node22(): string {
  const dir = join(CACHE_DIR, 'node-22');
  const name = `node-${process.platform}-${process.arch}`;
  onceAcrossWorkers(dir, () => {
    execFileSync(
      'npm',
      ['install', '--no-save', '--no-audit', '--no-fund', '--prefix', dir, `${name}@22`],
      { stdio: 'pipe', timeout: 180_000 },
    );
  });
  return join(dir, 'node_modules', name, 'bin', 'node');
}
