/**
 * What recipes.test.ts and recipes-plans.test.ts share: the check that docs/recipes.md shows each
 * file of test/recipes/ exactly (so the page cannot drift from the tested code), and serving a
 * recipe's app for one test.
 */
import { readFileSync } from 'node:fs';
import type { Server } from 'node:http';
import { join } from 'node:path';

/** One test per file: docs/recipes.md holds test/recipes/<file> as a ts block, to the byte. */
export function itShowsRecipesExactly(files: readonly string[]): void {
  it.each(files)('docs/recipes.md shows test/recipes/%s exactly', (file) => {
    const page = readFileSync(join(__dirname, '../../../docs/recipes.md'), 'utf8');
    const source = readFileSync(join(__dirname, 'recipes', file), 'utf8');
    expect(page).toContain(`\`\`\`ts\n${source}\`\`\`\n`);
  });
}

/**
 * For a describe block: `serve(app)` listens on a free port of 127.0.0.1 and answers the server;
 * the one served last is closed after each test.
 */
export function useRecipeServer(): (app: { listen(port: number, host: string): Server }) => Server {
  let server: Server | undefined;
  afterEach(() => {
    server?.close();
    server = undefined;
  });
  return (app) => {
    server = app.listen(0, '127.0.0.1');
    return server;
  };
}
