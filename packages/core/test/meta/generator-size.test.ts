/**
 * The script generator stays small, and every change it makes to the Lua is asked for in the Lua:
 * its code lines and its text replacements are counted here, so neither can grow back unnoticed.
 * Raising a limit is a decision to write down in the commit that does it.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

const root = join(__dirname, '../../../..');
const read = (path: string) => readFileSync(join(root, path), 'utf8');
const GENERATOR = [
  ...readdirSync(join(root, 'packages/core/src/lua'))
    .filter((f) => f.endsWith('.cjs'))
    .map((f) => `packages/core/src/lua/${f}`),
  'scripts/generate-lua.mjs',
];
const luaFiles = (dir: string): string[] =>
  readdirSync(join(root, dir), { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() && e.name !== 'build'
      ? luaFiles(`${dir}/${e.name}`)
      : e.name.endsWith('.lua')
        ? [`${dir}/${e.name}`]
        : [],
  );

test('the generator is one assembler file and the command around it, under 540 lines', () => {
  expect(GENERATOR).toEqual(['packages/core/src/lua/assemble.cjs', 'scripts/generate-lua.mjs']);
  const lines = GENERATOR.map((f) => read(f).trimEnd().split('\n').length);
  expect(lines.reduce((a, b) => a + b, 0)).toBeLessThanOrEqual(540);
});

test('it replaces text in six places, none of them a rewrite of Lua code it was not asked for', () => {
  // Each `.replace(` of the assembler: a flag's `!`, an inline step's definition taken out of its
  // include (and the blank lines it leaves), its body's indent, a comparison that ignores spaces,
  // and an include's comments when deciding whether it holds anything else.
  const replaces = GENERATOR.flatMap((f) => read(f).match(/\.replace(All)?\(/g) ?? []);
  expect(replaces).toHaveLength(6);
});

test('the Lua declares at most ten respellings, each for one variant and one scope', () => {
  const rules = luaFiles('lua').flatMap((f) => read(f).match(/^--- @respell .*$/gm) ?? []);
  expect(rules.length).toBeGreaterThan(0);
  expect(rules.length).toBeLessThanOrEqual(10);
  for (const rule of rules)
    expect(rule).toMatch(/^--- @respell \w+ (algorithms|engine): .+ => .+$/);
});
