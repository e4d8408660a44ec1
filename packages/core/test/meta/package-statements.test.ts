/**
 * Statements about the package that must stay true: the README says what core depends on (its
 * package.json has `ipaddr.js`), and the unsupported-client error does not tie ioredis to one
 * major version (ioredis 6 works as 5 does).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { redisStore } from '@floodgate/core';

const core = join(__dirname, '../..');

describe('package statements', () => {
  it('the README names every runtime dependency and never claims there are none', () => {
    const readme = readFileSync(join(core, 'README.md'), 'utf8');
    const pkg = JSON.parse(readFileSync(join(core, 'package.json'), 'utf8')) as {
      dependencies?: Record<string, string>;
    };
    const dependencies = Object.keys(pkg.dependencies ?? {});
    expect(dependencies.length).toBeGreaterThan(0);
    expect(readme).not.toMatch(/\bno (runtime )?dependencies\b/i);
    for (const name of dependencies) expect(readme).toContain(name);
  });

  it('the unknown-client error names ioredis without pinning its major version', () => {
    let message = '';
    try {
      redisStore({ client: { evalsha: 1 } as never });
    } catch (error) {
      message = (error as Error).message;
    }
    expect(message).toMatch(/ioredis or iovalkey Redis or Cluster/);
    expect(message).not.toMatch(/Cluster \(v5\)/);
    expect(message).toMatch(/Redis or Cluster \(v5\+\)/);
  });
});
