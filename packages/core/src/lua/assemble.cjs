// The one assembler of Floodgate's Redis scripts, for the store at run time (the first time a
// limiter needs a script) and for `pnpm generate` (lua/build/ and the SHA1s in lua/scripts.sha1).
// A script is a list of lua/ files joined by blank lines, each opening with a marker naming it
// (`-- >>> lua/gcra.lua`). Every change to a file is asked for by a directive in the Lua (`--- @…`
// lines, kept in the script; docs/engine.md lists them) and keeps its lines where they are, so
// `sourceLine` traces a line of a script Redis ran to its file and line: `--- @if <flags>` …
// `--- @else` … `--- @end` keep lines for some variants only (blank in the others); `--- @include`
// puts a step before the algorithms, or pastes its `--- @inline` steps where they are called
// (between `-- >>> <file>:<line>` and `-- <<<`); `--- @offsets` names numbers; `--- @respell`
// spells a token sequence otherwise in one variant. All of it works on Lua tokens, never inside a
// string or a comment. The package ships lua/ with comments' text removed (`stripComments`).
'use strict';

const { createHash } = require('node:crypto');

/** How the assembler names itself in a marker, for the few lines it writes (live scripts). */
const ASSEMBLER = 'packages/core/src/lua/assemble.cjs';
const MARKER = /^\s*-- >>> (\S+?)(?::(\d+))?(?: .*)?$/;
const END_MARKER = /^\s*-- <<</;
const DIRECTIVE = /^\s*--- @([\w-]+) ?(.*)$/;
// Lua's tokens, as far as the assembler needs them: space, comment, string, name, number, `$name`
// (a respelling's placeholder), and operators.
const TOKEN =
  /\s+|--.*|'(?:\\.|[^'\\])*'|"(?:\\.|[^"\\])*"|[A-Za-z_]\w*|\$\w+|\d[\w.]*|\.\.\.?|[=~<>]=|./g;
const tokens = (line) => line.match(TOKEN) ?? [];
const isCode = (t) => !/^\s|^--/.test(t);
const codeOf = (text) => tokens(text).filter(isCode);

/** `text` with each comment line's text removed (the line stays, as `--`); directives kept. */
function stripComments(text) {
  return text
    .split('\n')
    .map((line) => {
      const trimmed = line.trimStart();
      if (!trimmed.startsWith('--')) return line;
      if (trimmed.startsWith('--- @') || MARKER.test(line) || END_MARKER.test(line)) return line;
      return '--';
    })
    .join('\n');
}

const marker = (file, line = 1) => `-- >>> ${file}${line > 1 ? `:${line}` : ''}`;
const mapLines = (text, f) => text.split('\n').map(f).join('\n');
const directives = (text, name) =>
  text
    .split('\n')
    .map((l) => DIRECTIVE.exec(l))
    .filter((d) => d?.[1] === name)
    .map((d) => d[2]);

/** The lines of `text` for a variant (`flags`: a Set): `--- @if` blocks it is not in are blanked. */
function select(text, flags, file) {
  const open = [];
  const on = () => open.every((o) => o);
  const holds = (cond) =>
    cond.split(/\s+/).every((f) => (f[0] === '!') !== flags.has(f.replace('!', '')));
  const out = mapLines(text, (line) => {
    const [, what, arg] = DIRECTIVE.exec(line) ?? [];
    if (what === 'if') open.push(holds(arg));
    else if (what === 'else') open.push(!open.pop());
    else if (what === 'end') open.pop();
    else return on() ? line : '';
    return line;
  });
  if (open.length > 0) throw new Error(`${file}: a \`--- @if\` has no \`--- @end\``);
  return out;
}

/**
 * `line` with each run of code tokens that spells `from` written as `to`: `$x` in `from` stands for
 * one token, or for a balanced run up to the token that follows it; `to` repeats it.
 */
function respell(line, from, to) {
  const t = tokens(line);
  const p = codeOf(from);
  for (let s = 0; s < t.length; s++) {
    if (!isCode(t[s])) continue;
    const got = {};
    let j = s;
    const ok = p.every((want, k) => {
      while (j < t.length && !isCode(t[j])) j++;
      if (!want.startsWith('$')) return t[j++] === want;
      const start = j;
      for (let depth = 0; j < t.length; j++) {
        if (depth === 0 && (k === p.length - 1 ? j > start : t[j] === p[k + 1])) break;
        if ('([{'.includes(t[j])) depth++;
        if (')]}'.includes(t[j])) depth--;
      }
      got[want] = t.slice(start, j).join('').trim();
      return j > start;
    });
    if (ok) {
      const text = tokens(to)
        .map((x) => got[x] ?? x)
        .join('');
      t.splice(s, j - s, text);
    }
  }
  return t.join('');
}

/** `line` with each name in `map` (not a field: after no `.` or `:`) written as its value. */
function rename(line, map) {
  let before = '';
  return tokens(line)
    .map((t) => {
      const out = before !== '.' && before !== ':' && map.has(t) ? map.get(t) : t;
      if (isCode(t)) before = t;
      return out;
    })
    .join('');
}

// A `--- @inline` step of an include: `local function name(params)` … `end`, defined nowhere and
// written out where it is called (a `local function` costs Redis a closure on every EVALSHA).
const INLINE =
  /(?:^--(?!- @inline).*\n)*^--- @inline\nlocal function (\w+)\(([^)]*)\)\n([\s\S]*?)^end$/gm;
const names = (list) => codeOf(list).filter((t) => t !== ',');

/** An include's inline steps by name, and the rest of its text (blank where a step was). */
function takeInline(text, file) {
  const steps = new Map();
  for (const m of text.matchAll(INLINE)) {
    const line = text.slice(0, m.index + m[0].indexOf('\nlocal function')).split('\n').length + 2;
    const lines = m[3]
      .trimEnd()
      .split('\n')
      .filter((l) => !/^\s*--/.test(l));
    const code = lines.flatMap(codeOf);
    // Its locals (`local a, b`, `for i`) and the names it assigns (`a, b =`).
    const locals = new Set();
    const assigned = new Set();
    code.forEach((t, i) => {
      if (t !== 'local' && t !== 'for' && t !== '=') return;
      const list = t === '=' ? code.slice(0, i).reverse() : code.slice(i + 1);
      const end = list.findIndex((x, k) => (k % 2 ? x !== ',' : !/^\w+$/.test(x)));
      const run = end < 0 ? list : list.slice(0, end);
      for (const n of run.filter((x) => x !== ',')) (t === '=' ? assigned : locals).add(n);
    });
    steps.set(m[1], { name: m[1], params: names(m[2]), lines, locals, assigned, file, line });
  }
  return {
    steps,
    rest: text
      .replace(INLINE, '')
      .replace(/\n{3,}/g, '\n\n')
      .trim(),
  };
}

/**
 * `source` with each statement `[local] x, y = step(a, b)` or `return step(a, b)` of an inline
 * step written out: its body with the call's names for its parameters, in `do … end` when it has
 * locals, its last line `return e, f` as `x, y = e, f` (a `return step(…)` keeps its returns).
 */
function expandInline(source, steps, file) {
  return mapLines(source, (line) => {
    const c = codeOf(line);
    const at = c.findIndex((t) => steps.has(t));
    if (at < 0) return line;
    const step = steps.get(c[at]);
    const fail = (why) => {
      throw new Error(`lua/${file}: inline step ${step.name}: ${why}`);
    };
    const ret = at === 1 && c[0] === 'return';
    const targets = ret ? [] : names(c.slice(c[0] === 'local' ? 1 : 0, at - 1).join(' '));
    const args = names(c.slice(at + 2, -1).join(' '));
    if ((!ret && c[at - 1] !== '=') || c[at + 1] !== '(' || c.at(-1) !== ')')
      fail('is used other than as `[local] x, … = step(…)` or `return step(…)`');
    if (args.length !== step.params.length || c.slice(at + 2, -1).some((t) => /[^\w,]/.test(t)))
      fail(`takes ${step.params.length} names as arguments: ${/\((.*)\)\s*$/.exec(line)[1]}`);
    for (const n of [...args, ...targets])
      if (step.locals.has(n)) fail(`its local ${n} would hide the caller's`);
    const map = new Map(step.params.map((p, i) => [p, args[i]]));
    for (const p of step.assigned)
      if (map.has(p) && !targets.includes(map.get(p)))
        fail(`assigns its parameter ${p}, so the call must assign ${map.get(p)} too`);
    let body = step.lines.map((l) => rename(l.replace(/^ {2}/, ''), map));
    if (!ret) {
      const result = /^return (.*)$/.exec(body.pop() ?? '');
      if (!result || body.some((l) => codeOf(l).includes('return')))
        fail('used as a value, so it must end with its only `return`');
      if (result[1].replace(/\s/g, '') !== targets.join(','))
        body.push(`${targets.join(', ')} = ${result[1]}`);
    }
    if (step.locals.size > 0) body = ['do', ...body.map((l) => `  ${l}`), 'end'];
    if (c[0] === 'local' && !ret) body.unshift(`local ${targets.join(', ')}`);
    const indent = /^ */.exec(line)[0];
    return [`-- >>> ${step.file}:${step.line} (inline ${step.name})`, ...body, '-- <<<']
      .map((l) => `${indent}${l}`)
      .join('\n');
  });
}

const part = (file, text) => ({ file, text });

/**
 * An assembler over one copy of lua/: `read(path)` answers the text of lua/<path>, `list(dir)`
 * the `.lua` file names in lua/<dir> ('' for lua/ itself). Everything is made when first asked
 * for, and kept.
 */
class Assembler {
  constructor(files) {
    this.files = files;
    this.cache = new Map();
  }

  once(key, make) {
    if (!this.cache.has(key)) this.cache.set(key, make());
    return this.cache.get(key);
  }

  read(file) {
    return this.once(`file:${file}`, () => this.files.read(file).trimEnd());
  }

  /** The algorithm kinds: one lua/<kind>.lua each. */
  kinds() {
    return this.once('kinds', () =>
      this.files
        .list('')
        .map((f) => f.slice(0, -'.lua'.length))
        .sort(),
    );
  }

  // lua/include/<name>.lua: its inline steps, and the rest ('' when it holds nothing else).
  include(name) {
    return this.once(`include:${name}`, () => {
      const { steps, rest } = takeInline(
        this.read(`include/${name}.lua`),
        `lua/include/${name}.lua`,
      );
      return { steps, rest: rest.replace(/^--.*$/gm, '').trim() === '' ? '' : rest };
    });
  }

  // lua/<name>.lua with its inline steps written out, and the includes whose rest it needs.
  algorithm(name) {
    return this.once(`algorithm:${name}`, () => {
      if (!this.kinds().includes(name)) throw new Error(`unknown algorithm: ${name}`);
      const file = `${name}.lua`;
      const source = this.read(file);
      const includes = directives(source, 'include').map((n) => JSON.parse(n));
      const steps = new Map(includes.flatMap((n) => [...this.include(n).steps]));
      if (!select(source, new Set(['mixed']), file).includes(`ALG['${name}'] = {`))
        throw new Error(`lua/${file} must add ALG['${name}'] (its file name) outside \`@if solo\``);
      const uses = includes.filter((n) => this.include(n).rest !== '');
      const text = expandInline(source, steps, file);
      return { name, uses, part: { file: `lua/${file}`, text, scope: 'algorithms' } };
    });
  }

  /** Whether an algorithm's states can be entries of the combined key (no `--- @own-key`). */
  combines(kind) {
    this.algorithm(kind);
    return directives(this.read(`${kind}.lua`), 'own-key').length === 0;
  }

  /**
   * The script for these algorithm kinds (any order, repeats allowed): `batch` for its batch
   * variant (include/batch.lua), `combined` for the combined layout, `live` for per-key overrides.
   */
  script(kindList, { batch = false, combined = false, live = false, node = false } = {}) {
    const names = [...new Set(kindList)].sort();
    if (names.length === 0) throw new Error('a script needs at least one algorithm');
    if (live && combined) throw new Error('a live script keeps one key per policy');
    if (node && !batch) throw new Error('a per-node script is a batch script');
    let name = names.length === 1 ? names[0] : names.join('+');
    if (!combined && names.length === this.kinds().length) name = 'engine';
    if (combined) name = `${name}-combined`;
    if (batch) name = `${name}-batch`;
    if (node) name = `${name}-node`;
    if (live) name = `${name}-live`;
    return this.once(`script:${name}`, () => {
      const algorithms = names.map((n) => this.algorithm(n));
      const refused = combined ? names.filter((n) => !this.combines(n)) : [];
      if (refused.length > 0) throw new Error(`no combined layout for ${refused.join(', ')}`);
      const flags = new Set([names.length === 1 ? 'solo' : 'mixed']);
      for (const [flag, on] of Object.entries({ batch, combined, live, node }))
        if (on) flags.add(flag);
      return finish(name, names, this.parts(algorithms, flags), combined, live);
    });
  }

  // A script's files in order, each with the lines of the variant (`flags`), then the names its
  // `--- @offsets` line gives numbers and the respellings the variant's files declare for its
  // scope (`algorithms`: steps and algorithm files; `engine`: blocks, engine and several).
  parts(algorithms, flags) {
    const has = (flag) => flags.has(flag);
    const file = (f, scope) => ({ file: `lua/${f}`, text: this.read(f), scope });
    const [engine, several] = [
      file('include/engine.lua', 'engine'),
      file('include/several.lua', 'engine'),
    ];
    let tail = has('batch') ? [several, engine] : [engine, several];
    if (has('combined')) {
      const [open, close] = [file('include/combined-decide.lua'), file('include/combined-end.lua')];
      tail = has('batch') ? [several, open, engine, close] : [open, engine, several, close];
    }
    // A live batch runs include/live.lua after the engine, as decide_live() (include/batch.lua).
    if (has('live'))
      tail = has('batch') ? [...tail, file('include/live.lua')] : this.withLive(tail);
    const steps = [...new Set(algorithms.flatMap((a) => a.uses))].sort();
    const parts = [
      file('include/prelude.lua'),
      ...(has('combined') ? [file('include/combined.lua')] : []),
      ...steps.map((s) => ({
        ...file(`include/${s}.lua`, 'algorithms'),
        text: this.include(s).rest,
      })),
      ...algorithms.map((a) => a.part),
      file('include/blocks.lua', 'engine'),
      ...tail,
      ...(has('batch') ? [file('include/batch.lua')] : []),
    ].map((p) => ({ ...p, text: select(p.text, flags, p.file) }));
    const rules = parts.flatMap((p) =>
      directives(p.text, 'respell').map((r) => {
        const rule = /^(\S+) (algorithms|engine): (.+) => (.+)$/.exec(r);
        if (!rule)
          throw new Error(`${p.file}: \`--- @respell <flag> algorithms|engine: a => b\`: ${r}`);
        return rule;
      }),
    );
    return parts.map((p) => {
      const names = directives(p.text, 'offsets').flatMap((o) => o.split(', '));
      const map = new Map(names.map((o) => o.split(' ')));
      const mine = rules.filter(([, flag, scope]) => has(flag) && scope === p.scope);
      const text = mapLines(p.text, (line) =>
        /^\s*(--|$)/.test(line)
          ? line
          : mine.reduce((l, [, , , from, to]) => respell(l, from, to), rename(line, map)),
      );
      return part(p.file, text);
    });
  }

  // A live script (include/live.lua, per-key overrides): its first half before the engine, which
  // becomes `run_engine()`, and its second half (from `--- @engine`) after it.
  withLive(engine) {
    const file = 'lua/include/live.lua';
    const text = this.read('include/live.lua');
    const at = text.search(/^--- @engine\n/m);
    if (at < 0) throw new Error(`${file} no longer holds a \`--- @engine\` line`);
    return [
      part(file, text.slice(0, at).trimEnd()),
      part(ASSEMBLER, 'local function run_engine()'),
      ...engine,
      part(ASSEMBLER, 'end'),
      part(`${file}:${text.slice(0, at).split('\n').length}`, text.slice(at)),
    ];
  }

  /** A lease script (lua/leases/<name>.lua, after the prelude of a single call). */
  lease(name) {
    if (!this.leases().includes(name)) throw new Error(`unknown lease script: ${name}`);
    const prelude = select(this.read('include/prelude.lua'), new Set(['solo']), 'prelude');
    const lease = part(`lua/leases/${name}.lua`, this.read(`leases/${name}.lua`));
    return this.once(`lease:${name}`, () =>
      finish(`lease-${name}`, [], [part('lua/include/prelude.lua', prelude), lease]),
    );
  }

  /** The store's clock probe (lua/probes/clock.lua): the file alone, without the prelude. */
  clockProbe() {
    const probe = part('lua/probes/clock.lua', this.read('probes/clock.lua'));
    return this.once('clock-probe', () => finish('clock-probe', [], [probe]));
  }

  /** The compare-and-set of a limiter's record for every key (lua/global/change.lua), alone. */
  globalChange() {
    const change = part('lua/global/change.lua', this.read('global/change.lua'));
    return this.once('global-change', () => finish('global-change', [], [change]));
  }

  /** The lease scripts' names (lua/leases/<name>.lua). */
  leases() {
    return this.files.list('leases').map((f) => f.slice(0, -'.lua'.length));
  }

  /**
   * Where line `line` (1-based, as Redis's `user_script:<line>` counts) of an assembled script
   * comes from: the source file and its line. `exact` is false where the line is not a copy of a
   * source line (a parameter pasted in, a line the assembler wrote): then it is the best guess.
   */
  sourceLine(source, line) {
    const lines = source.split('\n');
    let depth = 0;
    let offset = 0;
    for (let i = line - 2; i >= 0; i--) {
      const text = lines[i] ?? '';
      if (END_MARKER.test(text)) {
        depth++;
        continue;
      }
      const found = MARKER.exec(text);
      if (found) {
        if (depth > 0) {
          depth--;
          if (depth === 0) offset++; // the pasted text stands for the one line that called it
          continue;
        }
        return this.locate(found[1], Number(found[2] ?? 1) + offset, lines[line - 1] ?? '');
      }
      if (depth === 0) offset++;
    }
    return { file: ASSEMBLER, line, exact: false };
  }

  // The source line nearest to `expected` whose text is the script's line, else `expected`.
  locate(file, expected, text) {
    const wanted = text.trim();
    if (!file.startsWith('lua/') || wanted === '' || wanted === '--') {
      return { file, line: expected, exact: false };
    }
    let best;
    this.read(file.slice('lua/'.length))
      .split('\n')
      .forEach((l, i) => {
        const closer = best === undefined || Math.abs(i + 1 - expected) < Math.abs(best - expected);
        if (l.trim() === wanted && closer) best = i + 1;
      });
    return best === undefined
      ? { file, line: expected, exact: false }
      : { file, line: best, exact: true };
  }
}

/** An assembler over one copy of lua/ (see Assembler). */
function createAssembler(files) {
  return new Assembler(files);
}

function finish(name, algorithms, parts, combined = false, live = false) {
  const source = `${parts.map((p) => `${marker(p.file)}\n${p.text}`).join('\n\n')}\n`;
  return Object.freeze({
    name,
    sha1: createHash('sha1').update(source).digest('hex'),
    algorithms: Object.freeze(algorithms),
    keysPerPolicy: 1,
    ...(combined ? { combined: true } : {}),
    ...(live ? { live: true } : {}),
    source,
  });
}

/**
 * Every script `pnpm generate` writes and pins: per algorithm its single and batch scripts, the
 * combined ones where its state can share the key, `engine` (all algorithms), the leases, the
 * clock probe and the change of a record for every key.
 */
function fixedScripts(assembler) {
  const out = [];
  const kinds = assembler.kinds();
  for (const batch of [false, true]) {
    for (const k of kinds) out.push(assembler.script([k], { batch }));
    out.push(assembler.script(kinds, { batch }));
    for (const k of kinds.filter((kind) => assembler.combines(kind)))
      out.push(assembler.script([k], { batch, combined: true }));
  }
  for (const l of assembler.leases()) out.push(assembler.lease(l));
  out.push(assembler.clockProbe(), assembler.globalChange());
  return out;
}

module.exports = {
  ASSEMBLER,
  createAssembler,
  expandInline,
  fixedScripts,
  stripComments,
  takeInline,
};
