/**
 * Every code Floodgate reports (error codes and warning codes, in any package's sources) has
 * an entry in docs/troubleshooting.md, and errors and warnings link to it.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  fixedWindow,
  RateLimitArgumentError,
  RateLimitConfigError,
  RateLimitStoreError,
} from '@floodgate/core';
import { emitWarning, helpUrl } from '@floodgate/core/http';
import { configErrorOf } from '../config-error';
import { packageSources } from './package-sources';

const repo = join(__dirname, '../../../..');

/** Every `'FLOODGATE_…'` string literal in the packages' sources. */
const codes = [
  ...new Set(
    packageSources().flatMap((file) =>
      [...readFileSync(file, 'utf8').matchAll(/['"`](FLOODGATE_[A-Z0-9_]+)['"`]/g)].map(
        (m) => m[1]!,
      ),
    ),
  ),
].sort();

const page = 'docs/troubleshooting.md';
const troubleshooting = readFileSync(join(repo, page), 'utf8');
/** GitHub's anchor of a heading "## `CODE`": the code in lower case. */
const anchors = new Set(
  [...troubleshooting.matchAll(/^## `([A-Z0-9_]+)`$/gm)].map((m) => m[1]!.toLowerCase()),
);

describe('docs/troubleshooting.md', () => {
  it('exists and the sources report codes', () => {
    expect(troubleshooting.startsWith('# Troubleshooting\n')).toBe(true);
    expect(codes).toEqual(
      expect.arrayContaining(['FLOODGATE_INVALID_OPTION', 'FLOODGATE_HOOK_ERROR']),
    );
  });

  it.each(codes)('has an entry for %s', (code) => {
    expect(anchors.has(code.toLowerCase())).toBe(true);
    expect(helpUrl(code)).toBe(
      `https://github.com/floodgate-js/floodgate/blob/main/${page}#${code.toLowerCase()}`,
    );
  });
});

describe('help links', () => {
  it('configuration errors end with their code’s link and carry it as `help`', () => {
    const error = configErrorOf(() => fixedWindow({ limit: -1, window: '1s' }));
    expect(error.help).toBe(helpUrl('FLOODGATE_INVALID_OPTION'));
    expect(error.message.endsWith(`(help: ${error.help})`)).toBe(true);
    const custom = new RateLimitConfigError('FLOODGATE_NO_POLICIES', 'x', undefined, 'x needs one');
    expect(custom.message).toBe(`x needs one (help: ${helpUrl('FLOODGATE_NO_POLICIES')})`);
  });

  it('argument and store errors link to theirs', () => {
    const argument = new RateLimitArgumentError('cost', -1, 'cost must be a non-negative integer');
    expect(argument.help).toBe(helpUrl('FLOODGATE_INVALID_ARGUMENT'));
    expect(argument.message).toContain(argument.help);
    const store = new RateLimitStoreError('the store failed: ECONNREFUSED');
    expect(store.help).toBe(helpUrl('FLOODGATE_STORE_ERROR'));
    expect(store.message).toContain(store.help);
  });

  it('warnings carry the link as their detail', () => {
    const warn = jest.spyOn(process, 'emitWarning').mockImplementation(() => undefined);
    try {
      emitWarning('FLOODGATE_HOOK_ERROR', 'a hook threw');
      expect(warn).toHaveBeenCalledWith('a hook threw', {
        code: 'FLOODGATE_HOOK_ERROR',
        detail: `See ${helpUrl('FLOODGATE_HOOK_ERROR')}`,
      });
    } finally {
      warn.mockRestore();
    }
  });
});
