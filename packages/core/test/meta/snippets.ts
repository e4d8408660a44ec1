/**
 * Extracts the TypeScript and JavaScript code blocks of the repository's Markdown and
 * type-checks them with the TypeScript compiler against the workspace sources, as a user would
 * compile them (see docs-snippets.test.ts, and CONTRIBUTING.md "Code blocks in the docs").
 *
 * - Every ```ts / ```typescript / ```js / ```javascript (also tsx, jsx, mjs, cjs) block is a
 *   module of its own and must type-check (strict, as the workspace is).
 * - ```ts fragment: an intentional excerpt (a signature list, a line out of context). It must
 *   still parse; it is not type-checked.
 * - An HTML comment right above the fence, `<!-- snippet: declare const app: Express; -->`,
 *   is code compiled before the block (invisible on GitHub): the place to declare what the
 *   surrounding text assumes (an `app`, a `client`).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import ts from 'typescript';

export const REPO_ROOT = join(__dirname, '../../../..');

/** Markdown files whose blocks are checked: the READMEs, CONTRIBUTING.md and docs/. */
export function markdownFiles(root = REPO_ROOT): string[] {
  const files = ['README.md', 'CONTRIBUTING.md'];
  for (const dir of ['packages', 'examples']) {
    for (const name of readdirSync(join(root, dir)).sort()) {
      const readme = join(dir, name, 'README.md');
      if (exists(join(root, readme))) files.push(readme);
    }
  }
  for (const name of readdirSync(join(root, 'docs')).sort()) {
    if (name.endsWith('.md')) files.push(join('docs', name));
  }
  return files;
}

function exists(path: string): boolean {
  try {
    readFileSync(path);
    return true;
  } catch {
    return false;
  }
}

const LANGUAGES: Record<string, 'ts' | 'tsx' | 'js' | 'jsx'> = {
  ts: 'ts',
  typescript: 'ts',
  mts: 'ts',
  cts: 'ts',
  tsx: 'tsx',
  js: 'js',
  javascript: 'js',
  mjs: 'js',
  cjs: 'js',
  jsx: 'jsx',
};

/**
 * The reference pages: every TypeScript/JavaScript block in them is compiled, none is a
 * fragment (parsed only), so what they show is what the sources accept.
 */
export const REFERENCE_PAGES = [
  'docs/core.md',
  'docs/adapters.md',
  'docs/architecture.md',
  'docs/troubleshooting.md',
  'docs/benchmarks.md',
];

/** One code block of a Markdown file. */
export interface Snippet {
  /** e.g. `README.md:43` (the line of the opening fence). */
  readonly where: string;
  readonly file: string;
  /** 1-based line of the opening fence. */
  readonly line: number;
  readonly language: 'ts' | 'tsx' | 'js' | 'jsx';
  /** `fragment`: parsed only. */
  readonly fragment: boolean;
  /** Code from a `<!-- snippet: … -->` comment right above the fence. */
  readonly prelude: string;
  readonly code: string;
}

const FENCE = /^( {0,3})(`{3,}|~{3,})\s*([^\s`]*)(.*)$/;
const PRELUDE = /^\s*<!--\s*snippet:\s*([\s\S]*?)\s*-->\s*$/;

/** The TypeScript/JavaScript blocks of one Markdown text. */
export function extractSnippets(file: string, markdown: string): Snippet[] {
  const lines = markdown.split('\n');
  const out: Snippet[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = FENCE.exec(lines[i]!);
    if (!open) continue;
    const [, indent, fence, info, rest] = open;
    let end = i + 1;
    while (end < lines.length) {
      const close = /^ {0,3}(`{3,}|~{3,})\s*$/.exec(lines[end]!);
      if (close && close[1]![0] === fence![0] && close[1]!.length >= fence!.length) break;
      end++;
    }
    const language = LANGUAGES[info!.toLowerCase()];
    if (language !== undefined) {
      const words = rest!.trim().split(/\s+/).filter(Boolean);
      const above = i > 0 ? PRELUDE.exec(lines[i - 1]!) : null;
      const strip = (line: string) =>
        line.startsWith(indent!) ? line.slice(indent!.length) : line.trimStart();
      out.push({
        where: `${file}:${i + 1}`,
        file,
        line: i + 1,
        language,
        fragment: words.includes('fragment'),
        prelude: above ? above[1]! : '',
        code: lines
          .slice(i + 1, end)
          .map(strip)
          .join('\n'),
      });
    }
    i = end;
  }
  return out;
}

/** Every block of every checked Markdown file. */
export function allSnippets(root = REPO_ROOT): Snippet[] {
  return markdownFiles(root).flatMap((file) =>
    extractSnippets(file, readFileSync(join(root, file), 'utf8')),
  );
}

/** The problems found in one block, each as `file:line: message`. */
export type SnippetReport = Map<Snippet, string[]>;

/** Packages whose node_modules hold what snippets import (express, koa, @nestjs/*). */
const RESOLUTION_BASES = [
  'packages/express',
  'packages/koa',
  'packages/nestjs',
  'packages/fastify',
  'packages/opentelemetry',
  'examples/nestjs',
  'examples/express',
  'examples/koa',
];

/** Type-checks (or, for fragments, parses) every snippet in one TypeScript program. */
export function checkSnippets(snippets: readonly Snippet[], root = REPO_ROOT): SnippetReport {
  const options = compilerOptions(root);
  const virtual = new Map<string, { snippet: Snippet; text: string; offset: number }>();
  snippets.forEach((snippet, index) => {
    const base = join(root, '.snippets', snippet.file.replace(/[^\w.-]+/g, '_'));
    const name = `${base}.block${index}.line${snippet.line}.${snippet.language}`;
    const prelude = snippet.prelude ? `${snippet.prelude}\n` : '';
    // `export {}` makes every block a module (top-level await, no global name clashes).
    const text = `${prelude}${snippet.code}\nexport {};\n`;
    virtual.set(name, { snippet, text, offset: prelude.split('\n').length - 1 });
  });
  const host = ts.createCompilerHost(options, true);
  const readFile = host.readFile.bind(host);
  const fileExists = host.fileExists.bind(host);
  const getSourceFile = host.getSourceFile.bind(host);
  host.readFile = (name) => virtual.get(name)?.text ?? readFile(name);
  host.fileExists = (name) => virtual.has(name) || fileExists(name);
  host.getSourceFile = (name, language, onError, create) => {
    const v = virtual.get(name);
    if (v) return ts.createSourceFile(name, v.text, language, true);
    return getSourceFile(name, language, onError, create);
  };
  host.resolveModuleNameLiterals = (literals, containing, _redirect, opts) =>
    literals.map((literal) => resolveWithBases(literal.text, containing, opts, host, root));

  const report: SnippetReport = new Map(snippets.map((s) => [s, []]));
  const checked = [...virtual].filter(([, v]) => !v.snippet.fragment).map(([name]) => name);
  const program = ts.createProgram({ rootNames: checked, options, host });
  const locate = (fileName: string, start: number | undefined, text: string) => {
    const v = virtual.get(fileName);
    if (!v) return;
    const line =
      start === undefined
        ? 0
        : ts.getLineAndCharacterOfPosition(
            ts.createSourceFile(fileName, v.text, ts.ScriptTarget.Latest),
            start,
          ).line;
    const inBlock = line - v.offset;
    const at =
      inBlock < 0
        ? `${v.snippet.where} (in its <!-- snippet: --> prelude)`
        : `${v.snippet.file}:${v.snippet.line + 1 + inBlock}`;
    report.get(v.snippet)!.push(`${at}: ${text}`);
  };
  for (const diagnostic of [
    ...program.getSyntacticDiagnostics(),
    ...program.getSemanticDiagnostics(),
  ]) {
    if (!diagnostic.file) continue;
    locate(
      diagnostic.file.fileName,
      diagnostic.start,
      `TS${diagnostic.code} ${ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n')}`,
    );
  }
  // Fragments: syntax only.
  for (const [name, v] of virtual) {
    if (!v.snippet.fragment) continue;
    const kind = v.snippet.language.startsWith('t') ? ts.ScriptKind.TS : ts.ScriptKind.JS;
    const source = ts.createSourceFile(name, v.text, ts.ScriptTarget.Latest, true, kind);
    const parse = (source as unknown as { parseDiagnostics: ts.Diagnostic[] }).parseDiagnostics;
    for (const d of parse) {
      locate(name, d.start, `TS${d.code} ${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`);
    }
  }
  return report;
}

function compilerOptions(root: string): ts.CompilerOptions {
  const config = ts.readConfigFile(join(root, 'tsconfig.json'), ts.sys.readFile);
  const parsed = ts.parseJsonConfigFileContent(config.config, ts.sys, root);
  return {
    ...parsed.options,
    noEmit: true,
    allowJs: true,
    checkJs: true,
    jsx: ts.JsxEmit.Preserve,
    types: ['node'],
    // Snippets are short and read top to bottom: an unused name is not a defect there.
    noUnusedLocals: false,
    noUnusedParameters: false,
  };
}

function resolveWithBases(
  name: string,
  containing: string,
  options: ts.CompilerOptions,
  host: ts.CompilerHost,
  root: string,
): ts.ResolvedModuleWithFailedLookupLocations {
  const first = ts.resolveModuleName(name, containing, options, host);
  if (first.resolvedModule || !containing.includes(`${root}/.snippets`)) return first;
  for (const base of RESOLUTION_BASES) {
    const again = ts.resolveModuleName(name, join(root, base, 'index.ts'), options, host);
    if (again.resolvedModule) return again;
  }
  return first;
}
