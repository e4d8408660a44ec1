/**
 * What npm will publish: each tarball holds its built entry points (CommonJS + ESM wrapper,
 * types for each), LICENSE, README and CHANGELOG, no sources, tests or source maps; its
 * metadata points at the repository; its README links work on the npm page (absolute); and
 * publint and arethetypeswrong find nothing to report.
 */
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { type PackedInstall, packedInstall, REPO_ROOT } from '../harness/packed';

let install: PackedInstall;

beforeAll(() => {
  install = packedInstall();
}, 240_000);

const names = () => Object.keys(install.tarballs);

function tarballFiles(name: string): string[] {
  return execFileSync('tar', ['-tzf', install.tarballs[name]!], { encoding: 'utf8' })
    .trim()
    .split('\n')
    .map((line) => line.replace(/^package\//, ''));
}

function manifest(name: string): Record<string, unknown> {
  return JSON.parse(
    execFileSync('tar', ['-xzOf', install.tarballs[name]!, 'package/package.json'], {
      encoding: 'utf8',
    }),
  );
}

test('every public package is packed', () => {
  expect(names()).toEqual(
    expect.arrayContaining([
      '@floodgate/core',
      '@floodgate/express',
      '@floodgate/fastify',
      '@floodgate/koa',
      '@floodgate/nestjs',
      '@floodgate/opentelemetry',
    ]),
  );
});

// 738 KB before the bundled build; 471 KB with the declarations' every doc comment, 452 KB
// without the ones no hover shows (docs/benchmarks.md, "Load time and weight"). The declarations
// keep the others (editor hovers): without them the package would still weigh ~350 KB, over a
// 300 KB target the JavaScript alone (220 KB minified, 428 KB not) leaves no room for. This
// bound keeps the package from growing unseen.
test('@floodgate/core weighs at most 484 KiB unpacked (one minified CommonJS build, Lua without comments)', () => {
  const listing = execFileSync('tar', ['-tvzf', install.tarballs['@floodgate/core']!], {
    encoding: 'utf8',
  });
  // `tar -tv`: permissions, owner, size, date, time, name.
  const unpacked = listing
    .trim()
    .split('\n')
    .reduce((sum, line) => sum + Number(line.trim().split(/\s+/)[2]), 0);
  expect(unpacked).toBeGreaterThan(50_000);
  expect(unpacked).toBeLessThanOrEqual(484 * 1024);
  // No file per module: the entries, their shared chunks and the Lua assembler's files.
  const js = tarballFiles('@floodgate/core').filter((f) => /\.(c|m)?js$/.test(f));
  expect(js.length).toBeLessThan(20);
});

test("@floodgate/core's declarations keep the doc comments a hover shows, each on the line above its declaration", () => {
  const declarations = tarballFiles('@floodgate/core')
    .filter((f) => f.endsWith('.d.ts'))
    .map((f) =>
      execFileSync('tar', ['-xzOf', install.tarballs['@floodgate/core']!, `package/${f}`], {
        encoding: 'utf8',
      }),
    )
    .join('\n');
  // A public class, function and options type of each entry, with its own comment.
  for (const name of [
    'class RateLimiter',
    'class ConcurrencyLimiter',
    'function gcra',
    'function memoryStore',
    'function redisStore',
    'interface RateLimitHeaderOptions',
    'function parseKeyOptions',
    'function runDifferential',
  ]) {
    expect(declarations).toMatch(new RegExp(`\\*/\\n(export )?(declare )?${name}\\b`));
  }
  // No comment left detached (a blank line before its declaration, which a hover would show
  // all the same, as that declaration's doc), none on a private member.
  expect(declarations).not.toMatch(/\*\/\n[ \t]*\n/);
  expect(declarations).not.toMatch(/\*\/\n[ \t]*private /);
});

describe.each([
  '@floodgate/core',
  '@floodgate/express',
  '@floodgate/fastify',
  '@floodgate/koa',
  '@floodgate/nestjs',
  '@floodgate/opentelemetry',
])('%s', (name) => {
  test('ships both builds with their types, LICENSE, README and CHANGELOG; no sources, tests or maps', () => {
    const files = tarballFiles(name);
    for (const file of [
      'LICENSE',
      'README.md',
      'CHANGELOG.md',
      'package.json',
      'dist/index.js',
      'dist/index.d.ts',
      'dist/index.mjs',
      'dist/index.d.mts',
    ]) {
      expect(files).toContain(file);
    }
    expect(files.filter((f) => f.endsWith('.map'))).toEqual([]);
    expect(files.filter((f) => /^(src|test)\//.test(f) || f.endsWith('.tsbuildinfo'))).toEqual([]);
  });

  test('metadata: repository with directory, homepage, bugs, keywords, license; no workspace: ranges', () => {
    const m = manifest(name) as {
      repository: { url: string; directory: string };
      homepage: string;
      bugs: { url: string };
      keywords: string[];
      license: string;
      dependencies?: Record<string, string>;
    };
    const directory = `packages/${name.split('/')[1]}`;
    expect(m.repository).toEqual({
      type: 'git',
      url: expect.stringMatching(/^git\+https:\/\/.+\.git$/),
      directory,
    });
    const repo = m.repository.url.replace(/^git\+/, '').replace(/\.git$/, '');
    expect(m.homepage).toBe(`${repo}/tree/main/${directory}#readme`);
    expect(m.bugs.url).toBe(`${repo}/issues`);
    expect(m.keywords.length).toBeGreaterThan(3);
    expect(m.license).toBe('MIT');
    expect(JSON.stringify(m.dependencies ?? {})).not.toMatch(/workspace:/);
  });

  test('README links are absolute (relative links break on the npm page)', () => {
    const readme = execFileSync('tar', ['-xzOf', install.tarballs[name]!, 'package/README.md'], {
      encoding: 'utf8',
    });
    const links = [...readme.matchAll(/\]\(([^)\s]+)/g)].map((m) => m[1]!);
    expect(links.length).toBeGreaterThan(0);
    expect(links.filter((link) => !/^(https?:\/\/|#)/.test(link))).toEqual([]);
  });

  test('publint reports nothing', () => {
    const out = execFileSync(
      process.execPath,
      [publintBin(), 'run', '--strict', install.tarballs[name]!],
      { encoding: 'utf8', cwd: REPO_ROOT },
    );
    expect(out).toContain('All good!');
  });

  test('arethetypeswrong reports nothing (node10, node16 from CJS and ESM, bundler)', () => {
    const out = execFileSync(
      process.execPath,
      [attwBin(), install.tarballs[name]!, '--format', 'json'],
      { encoding: 'utf8', cwd: REPO_ROOT },
    );
    const result = JSON.parse(out) as { analysis: { problems: unknown[] } };
    expect(result.analysis.problems).toEqual([]);
  });
});

function publintBin(): string {
  return join(REPO_ROOT, 'node_modules/publint/src/cli.js');
}

function attwBin(): string {
  return join(REPO_ROOT, 'node_modules/@arethetypeswrong/cli/dist/index.js');
}
