/**
 * Runs a TypeScript script of this repo with plain node (no loader installed): `.ts` files are
 * compiled to CommonJS by swc on require, and `./x.js` specifiers resolve to `./x.ts`.
 * Usage: node packages/core/test/resilience/run-ts.cjs <script.ts>
 */
const Module = require('node:module');
const { readFileSync } = require('node:fs');
const path = require('node:path');
const { transformSync } = require('@swc/core');

// Workspace packages the scripts import by name, as jest.config.ts and tsconfig.json map them.
const ALIASES = {
  '@floodgate/redis-server': path.resolve(__dirname, '../../../../tools/redis-server/src/index.ts'),
};

const resolve = Module._resolveFilename;
Module._resolveFilename = function (request, parent, ...rest) {
  if (Object.hasOwn(ALIASES, request)) return ALIASES[request];
  try {
    return resolve.call(this, request, parent, ...rest);
  } catch (error) {
    if ((request.startsWith('.') || request.startsWith('/')) && request.endsWith('.js')) {
      return resolve.call(this, `${request.slice(0, -3)}.ts`, parent, ...rest);
    }
    throw error;
  }
};
Module._extensions['.ts'] = (module, filename) => {
  const { code } = transformSync(readFileSync(filename, 'utf8'), {
    filename,
    jsc: { parser: { syntax: 'typescript' }, target: 'es2022' },
    module: { type: 'commonjs' },
  });
  module._compile(code, filename);
};

require(path.resolve(process.argv[2]));
