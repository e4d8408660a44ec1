/**
 * The middleware's types import Koa's and Express's own: TypeScript users need the framework's
 * types installed, which the package declares as an optional peer and says in its
 * README. JavaScript users are not asked for them.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

const root = join(__dirname, '..');
const manifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));

it('declares @types/koa as an optional peer dependency', () => {
  expect(manifest.peerDependencies['@types/koa']).toBeDefined();
  expect(manifest.peerDependenciesMeta?.['@types/koa']).toEqual({ optional: true });
});

it('says so in its README', () => {
  expect(readFileSync(join(root, 'README.md'), 'utf8')).toContain('npm install -D @types/koa');
});
