/**
 * Keys the docs teach are built from the client address as the 'ip' key source builds it
 * (`normalizeIp`: IPv4-mapped IPv6 folded, IPv6 grouped by /56), never from a raw `req.ip`: an
 * IPv6 client rotating addresses inside its /56 would get a fresh budget per address (20
 * guesses per username instead of 5 against a login limit). Every code block of the READMEs and
 * docs/, and every example source.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { allSnippets, REPO_ROOT } from './snippets';

// `${req.ip}`, `${request.ip}`, `${ctx.ip}`, `${ctx.request.ip}` inside a template string.
const RAW_IP_IN_KEY = /\$\{\s*(?:req|request|ctx|ctx\.request)\.ip\s*\}/;

/** The example sources, as `[path, text]`. */
function exampleSources(dir = join(REPO_ROOT, 'examples')): [string, string][] {
  return readdirSync(dir).flatMap((name): [string, string][] => {
    const path = join(dir, name);
    if (name === 'node_modules' || name === 'dist') return [];
    if (statSync(path).isDirectory()) return exampleSources(path);
    if (!/\.(c|m)?(t|j)s$/.test(name)) return [];
    return [[relative(REPO_ROOT, path), readFileSync(path, 'utf8')]];
  });
}

it('no README, docs/ code block or example keys a limit on a raw request address', () => {
  const offenders = [
    ...allSnippets()
      .filter((snippet) => RAW_IP_IN_KEY.test(snippet.code))
      .map((snippet) => snippet.where),
    ...exampleSources()
      .filter(([, text]) => RAW_IP_IN_KEY.test(text))
      .map(([path]) => path),
  ];
  expect(offenders).toEqual([]);
});

it('the check sees a raw address in a key', () => {
  // biome-ignore lint/suspicious/noTemplateCurlyInString: source text under test
  const raw = 'key: (req) => `login:${req.ip}:${name}`';
  // biome-ignore lint/suspicious/noTemplateCurlyInString: source text under test
  const normalized = '`${normalizeIp(request.ip) ?? "unknown"}:${name}`';
  expect(RAW_IP_IN_KEY.test(raw)).toBe(true);
  expect(RAW_IP_IN_KEY.test(normalized)).toBe(false);
});
