/**
 * "A new algorithm is three files" (CONTRIBUTING.md, "Adding an algorithm"), enforced: the
 * algorithm registry, the Lua files, the generated engine, the twins, the conformance cases,
 * the README's Policies table, docs/algorithms.md and the root exports all list the same
 * algorithms. Each failure says which list is missing what.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ALGORITHMS, REGISTRY } from '../../src/algorithms/index';
import * as root from '../../src/index';
import { combinedScriptFor, scriptFor } from '../../src/stores/scripts';
import { ALGORITHM_CASES } from '../conformance/algorithms';

const repo = join(__dirname, '../../../..');
const read = (path: string) => readFileSync(join(repo, path), 'utf8');
const sorted = (list: Iterable<string>) => [...list].sort();

/** Options each factory is called with to learn the kind of policy it makes. */
const EXAMPLE_OPTIONS: Record<string, object> = {
  fixedWindow: { limit: 1, window: '1s' },
  slidingLog: { limit: 1, window: '1s' },
  slidingWindow: { limit: 1, window: '1s' },
  tokenBucket: { limit: 1, window: '1s' },
  gcra: { limit: 1, window: '1s' },
  leakyBucket: { limit: 1, window: '1s' },
  smoothBursty: { limit: 1, window: '1s' },
  smoothWarmingUp: { limit: 1, window: '1s', warmup: '1s' },
};

const factories = sorted(Object.keys(REGISTRY));
const kinds = sorted(Object.values(REGISTRY).map((entry) => entry.twin.kind));

/** The factory names in the first table under `### Policies` in README.md (one table). */
function readmePolicies(): { names: string[]; oneTable: boolean } {
  const readme = read('README.md');
  const start = readme.indexOf('\n### Policies\n');
  const section = readme.slice(start, readme.indexOf('\n#', start + 1));
  const lines = section.split('\n');
  const first = lines.findIndex((line) => line.startsWith('|'));
  let end = first;
  while (end < lines.length && lines[end]!.startsWith('|')) end++;
  const rows = lines.filter((line) => /^\| `\w+\(/.test(line));
  const inTable = lines.slice(first, end).filter((line) => /^\| `\w+\(/.test(line));
  return {
    names: rows.map((line) => /^\| `(\w+)\(/.exec(line)![1]!),
    oneTable: inTable.length === rows.length,
  };
}

describe('the algorithm registry', () => {
  it('has a twin per kind, each with its own file named after the kind', () => {
    expect(new Set(kinds).size).toBe(kinds.length);
    expect(sorted(Object.keys(ALGORITHMS))).toEqual(kinds);
    for (const kind of kinds) {
      expect(existsSync(join(__dirname, `../../src/algorithms/${kind}.ts`))).toBe(true);
    }
  });

  it.each(factories)('%s makes policies of its twin’s kind', (name) => {
    const options = EXAMPLE_OPTIONS[name];
    if (options === undefined)
      throw new Error(`add example options for ${name} to EXAMPLE_OPTIONS`);
    expect(REGISTRY[name]!.factory(options).kind).toBe(REGISTRY[name]!.twin.kind);
  });

  it('lists the same kinds as lua/*.lua and the generated engine script', () => {
    const lua = readdirSync(join(repo, 'lua'))
      .filter((file) => file.endsWith('.lua'))
      .map((file) => file.slice(0, -'.lua'.length));
    expect(sorted(lua)).toEqual(kinds);
    const engine = scriptFor(kinds);
    expect(engine.name).toBe('engine');
    expect(sorted(engine.algorithms)).toEqual(kinds);
  });

  it("declares where a kind's state lives once per side: `--- @own-key` in Lua, `sharesKey` in its twin", () => {
    const declared = (kind: string) => /^--- @own-key\b/m.test(read(`lua/${kind}.lua`));
    for (const [name, { factory, twin }] of Object.entries(REGISTRY)) {
      const policy = factory(EXAMPLE_OPTIONS[name]!);
      const shares = twin.sharesKey?.(policy.params as never) !== false;
      expect({ kind: twin.kind, ownKey: declared(twin.kind) }).toEqual({
        kind: twin.kind,
        ownKey: !shares,
      });
      // The store asks the assembler for a combined script only of kinds it can make one of.
      if (shares) expect(combinedScriptFor([twin.kind]).combined).toBe(true);
      else expect(() => combinedScriptFor([twin.kind])).toThrow(/no combined layout/);
    }
  });

  it('lists the same kinds as the conformance cases (one <kind>.cases.ts each)', () => {
    expect(sorted(ALGORITHM_CASES.map((cases) => cases.kind))).toEqual(kinds);
    const files = readdirSync(join(__dirname, '../conformance/algorithms'))
      .filter((file) => file.endsWith('.cases.ts') && file !== 'multi.cases.ts')
      .map((file) => file.slice(0, -'.cases.ts'.length));
    expect(sorted(files)).toEqual(kinds);
  });

  it('lists the same factories as the README Policies table, which is one table', () => {
    const { names, oneTable } = readmePolicies();
    expect(sorted(names)).toEqual(factories);
    expect(oneTable).toBe(true);
  });

  it('lists the same factories as the sections of docs/algorithms.md', () => {
    const headings = [...read('docs/algorithms.md').matchAll(/^## (\w+)$/gm)].map((m) => m[1]!);
    const policySections = headings.filter((h) => /^[a-z]/.test(h));
    expect(sorted(policySections)).toEqual(factories);
  });

  it('lists the same factories as the root entry exports', () => {
    const exported = Object.entries(root)
      .filter(([, value]) => Object.values(REGISTRY).some((entry) => entry.factory === value))
      .map(([name]) => name);
    expect(sorted(exported)).toEqual(factories);
  });
});
