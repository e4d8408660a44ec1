// The one assembler of Floodgate's Redis scripts: builds each script from lua/, for the store at
// run time (lazily, the first time a limiter needs it) and for `pnpm generate` (which writes every
// fixed variant as a readable file to lua/build/ and pins their SHA1s in lua/scripts.sha1).
//
// A script is a list of parts joined by blank lines, each opening with a marker naming where it
// comes from (`-- >>> lua/gcra.lua`): the prelude, the shared steps its algorithms include, the
// algorithm file(s), the block steps and the engine; a batch variant wraps the engine and ends
// with include/batch.lua. Text the assembler writes itself (an inline step pasted in place, the
// engine's written-out paths) sits between `-- >>> <source>` and `-- <<<`, so `sourceLine` can
// trace any line of a script Redis ran back to a source file and line.
//
// The package ships lua/ with its comments' text removed (`stripComments`: each comment line
// becomes `--`), and the store assembles from those files; the repository's files assemble into
// the same lines with their comments. `--- @…` lines are directives and are kept.
'use strict';

const { createHash } = require('node:crypto');
const { combinedVariant } = require('./combined.cjs');
const { expandInline, takeInline } = require('./inline.cjs');
const {
  batchReply,
  singleEngine,
  splitEngine,
  unrollEngine,
  unrollState,
} = require('./unroll.cjs');

/** How the assembler names itself in a marker, for the text it writes. */
const ASSEMBLER = 'packages/core/src/lua/assemble.cjs';
const MARKER = /^\s*-- >>> (\S+?)(?::(\d+))?(?: .*)?$/;
const END_MARKER = /^\s*-- <<</;

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

/** A part's opening marker: the source file, and its line when the part does not start at 1. */
function marker(file, line = 1) {
  return `-- >>> ${file}${line > 1 ? `:${line}` : ''}`;
}

// include/prelude.lua defines `local function read_call() … end`, which reads one call's ARGV.
// A batch script calls it once per shape of calls; a single-call script runs its body in place
// (`do … end`, same lines), so no closure is made for it on every EVALSHA.
const READ_CALL = /^local function read_call\(\)\n([\s\S]*?)^end$/m;
// A batch script's algorithms and engine read the KEYS and ARGV of the call being decided:
// these locals, which include/batch.lua points at each call's own.
const BATCH_KEYS_ARGV = 'local BATCH_KEYS, BATCH_ARGV, SLOT_GROUPS = KEYS, ARGV, nil';
const BATCH_HEADER =
  `-- Floodgate batch script (include/batch.lua says how it runs).\n${BATCH_KEYS_ARGV}\n` +
  'local KEYS, ARGV, NUMS, OUT, OUTN, LONE\n' +
  '-- Read on every decision: an upvalue costs less than a global (forBatch: redis_pcall).\n' +
  'local tonumber, redis_pcall = tonumber, redis.pcall';
// The per-node batch variant (the store's `batch: 'node'` on a cluster): its calls span several
// slots of one master, and Redis refuses a command whose declared keys span slots, so KEYS holds
// one key (the node's route) and ARGV carries the rest: the number of slot groups G and of keys
// N, each group's number of calls (calls come sorted by slot), the N keys, then what a batch
// script's ARGV holds. include/batch.lua checks each group's keys are this node's (SLOT_GROUPS).
const NODE_HEADER = BATCH_HEADER.replace(
  BATCH_KEYS_ARGV,
  [
    '-- Per-node batch: ARGV = G, N, G slot groups (calls each), N keys, then the batch ARGV.',
    'local BATCH_KEYS, BATCH_ARGV, SLOT_GROUPS',
    'do',
    '  local g, n = ARGV[1] + 0, ARGV[2] + 0',
    '  SLOT_GROUPS = { unpack(ARGV, 3, 2 + g) }',
    '  BATCH_KEYS, BATCH_ARGV = { unpack(ARGV, 3 + g, 2 + g + n) }, { unpack(ARGV, 3 + g + n) }',
    'end',
  ].join('\n'),
);
// Every algorithm file ends with `register('<name>', check, commit, clear|nil, refund, nargs[,
// lone])`. That line is not Lua the script runs: it is replaced, so that no table or closure is
// made on each call to bind an algorithm (a script body runs on every EVALSHA).
//   one-algorithm script: local CHECK, COMMIT, CLEAR, REFUND, NARGS, ALG = check, …, nil
//                         and in its batch variant also `LONE = lone` (BATCH_HEADER declares it)
//   mixed script:         ALG['<name>'] = { check, commit, clear, refund, nargs }, between
//                         MIXED_HEADER and MIXED_FOOTER
// lone (optional) makes a batch's decider for a shape of lone consumes (include/batch.lua). It is
// defined between the lines `--- @batch` and `--- @end batch`, which only a one-algorithm batch
// script keeps (other scripts get blank lines there, so lines stay where they are).
const REGISTER = /^register\('([a-z-]+)', (\w+), (\w+), (\w+), (\w+), (\d+)(?:, (\w+))?\)$/m;
const BATCH_ONLY = /^--- @batch\n([\s\S]*?)^--- @end batch\n/m;
const MIXED_HEADER = 'local ALG = {}';
const MIXED_FOOTER = 'local CHECK, COMMIT, CLEAR, REFUND, NARGS';
// Shared steps (lua/include/<name>.lua) come in through a line `--- @include "<name>"` in an
// algorithm file; the step is put once, before every algorithm, in each script whose algorithms
// ask for it. A step marked `--- @inline` is pasted where it is called (inline.cjs); an include
// that holds nothing else is put in no script.
const INCLUDE = /^--- @include "([a-z-]+)"$/gm;
// An algorithm whose state is not a string (a sorted set) declares it in its own file: its
// policies keep a key of their own, never an entry of the combined key.
const OWN_KEY = /^--- @own-key\b/m;
// include/engine.lua names the offsets of a policy's values in the multi-policy table V on one
// line, `--- @offsets STRIDE 13, ALLOWED 1, …`; its code lines get each name's number in place,
// since Lua 5.1 has no constants (a local would cost every call an instruction and a register).
const OFFSETS = /^ *--- @offsets ((?:[A-Z_0-9]+ \d+)(?:, [A-Z_0-9]+ \d+)*)$/m;
// In a batch script the algorithms read their numbers from NUMS, parsed once per shape of calls
// (include/batch.lua), where a single script parses each on every call (a tonumber() costs Redis
// about as much as a GET), and redis.pcall from a local the batch header makes.
const forBatch = (text) =>
  text.replaceAll('tonumber(ARGV[', '(NUMS[').replaceAll('redis.pcall(', 'redis_pcall(');

const part = (file, text) => ({ file, text });
const own = (text) => part(ASSEMBLER, text);

/**
 * An assembler over one copy of lua/: `read(path)` answers the text of lua/<path>, `list(dir)`
 * the `.lua` file names in lua/<dir> ('' for lua/ itself). Everything is made when first asked
 * for, and kept.
 */
class Assembler {
  constructor(files) {
    this.files = files;
    this.cache = new Map();
    // Per include: the steps it pastes (`--- @inline`) and the rest it defines, if anything.
    this.inline = {};
    this.rest = {};
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
        .filter((f) => f.endsWith('.lua'))
        .map((f) => f.slice(0, -'.lua'.length))
        .sort(),
    );
  }

  prelude() {
    return this.once('prelude', () => {
      const text = this.read('include/prelude.lua');
      if (!READ_CALL.test(text)) {
        throw new Error('lua/include/prelude.lua must define `local function read_call()` … `end`');
      }
      return {
        batch: text,
        single: text.replace(READ_CALL, (_, body) => `do -- read_call()\n${body}end`),
      };
    });
  }

  // include/engine.lua with its named offsets written as numbers (OFFSETS).
  engine() {
    return this.once('engineText', () => {
      const text = this.read('include/engine.lua');
      const found = OFFSETS.exec(text);
      if (!found) throw new Error('lua/include/engine.lua no longer holds a `--- @offsets` line');
      const offsets = new Map(found[1].split(', ').map((pair) => pair.split(' ')));
      const name = new RegExp(`\\b(${[...offsets.keys()].join('|')})\\b`, 'g');
      return text.replace(/^(?!\s*--).*$/gm, (line) => line.replace(name, (n) => offsets.get(n)));
    });
  }

  // The engine with its paths for two to four policies written out (unroll.cjs), in its two parts.
  engineParts() {
    return this.once('engine', () => splitEngine(unrollEngine(this.engine(), (i) => `KEYS[${i}]`)));
  }

  // include/blocks.lua: before the engine. Its `--- @engine-state` line starts what a batch script
  // makes in make_engine() (its state), so a batch of lone consumes never makes it.
  blocks() {
    return this.once('blocks', () => {
      const ENGINE_STATE = /^--- @engine-state\n/m;
      const text = unrollState(this.read('include/blocks.lua'));
      const at = text.search(ENGINE_STATE);
      if (at < 0)
        throw new Error('lua/include/blocks.lua no longer holds a `--- @engine-state` line');
      return {
        single: text.replace(ENGINE_STATE, '--\n'),
        batch: text.slice(0, at).trimEnd(),
        state: text.slice(at).replace(ENGINE_STATE, ''),
        stateLine: text.slice(0, at).split('\n').length + 1,
      };
    });
  }

  // The engine of a batch script, made by make_engine() for the first call of a batch that needs
  // it: its state, decide_several and decide() (the per-call part). At the script's top they would
  // be closures and upvalue objects made on every EVALSHA (~500 instructions per decision in a
  // fixedWindow batch of 32 that never uses them, ~1 000 in a gcra one: docs/benchmarks.md).
  batchEngine() {
    return this.once('batchEngine', () => {
      const { defined, perCall } = this.engineParts();
      const b = this.blocks();
      return [
        'local decide',
        'local function make_engine()',
        marker('lua/include/blocks.lua', b.stateLine),
        b.state.trimEnd(),
        '',
        marker('lua/include/engine.lua'),
        batchReply(defined),
        '',
        marker(ASSEMBLER),
        'return function()',
        marker('lua/include/engine.lua'),
        perCall,
        marker(ASSEMBLER),
        'end',
        'end',
      ].join('\n');
    });
  }

  // Reads lua/include/<name>.lua once: its inline steps and the rest.
  include(name) {
    if (!(name in this.inline)) {
      const file = `include/${name}.lua`;
      const { rest, steps } = takeInline(this.read(file), `lua/${file}`);
      this.inline[name] = steps;
      if (rest.replace(/^--.*$/gm, '').trim() !== '') this.rest[name] = rest;
    }
  }

  // lua/<name>.lua with its includes taken in and its inline steps pasted, and the three ways a
  // script binds it (the `register` line replaced): alone, mixed, alone in a batch script.
  algorithm(name) {
    return this.once(`algorithm:${name}`, () => {
      if (!this.kinds().includes(name)) throw new Error(`unknown algorithm: ${name}`);
      const file = `${name}.lua`;
      const uses = [];
      const steps = new Map();
      let source = this.read(file).replace(INCLUDE, (line, include) => {
        this.include(include);
        for (const [step, body] of this.inline[include]) steps.set(step, body);
        if (include in this.rest) uses.push(include);
        return line;
      });
      source = expandInline(source, steps, file);
      const match = REGISTER.exec(source);
      if (!match || match[1] !== name) {
        throw new Error(
          `lua/${file} must end with register('${name}', check, commit, clear or nil, refund, nargs[, lone]) (the file name is the algorithm name)`,
        );
      }
      return { name, uses, ...bindings(`lua/${file}`, source, match) };
    });
  }

  // The shared steps these algorithms use, each once, in name order.
  stepsFor(algorithms) {
    return [...new Set(algorithms.flatMap((a) => a.uses))]
      .sort()
      .map((name) => part(`lua/include/${name}.lua`, this.rest[name]));
  }

  // The combined layout (one key per caller: include/combined.lua, combined.cjs).
  combined() {
    return this.once('combined', () =>
      combinedVariant(this.engine(), this.blocks().single, this.read('include/combined.lua')),
    );
  }

  /**
   * Whether an algorithm's states can be entries of the combined key: all but those whose file
   * declares `--- @own-key` (a state that is not a string).
   */
  combines(kind) {
    this.algorithm(kind);
    return !OWN_KEY.test(this.read(`${kind}.lua`));
  }

  /**
   * The script for these algorithm kinds (any order, repeats allowed): `batch` for its batch
   * variant (include/batch.lua), `combined` for the combined layout.
   */
  script(kindList, { batch = false, combined = false, live = false, node = false } = {}) {
    const names = [...new Set(kindList)].sort();
    if (names.length === 0) throw new Error('a script needs at least one algorithm');
    if (live && (batch || combined)) throw new Error('a live script is a single call, per policy');
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
      const parts = this.parts(algorithms, batch, combined ? this.combined() : undefined);
      if (node) parts[0] = own(NODE_HEADER);
      return finish(name, names, live ? this.withLive(parts) : parts, combined);
    });
  }

  // A single-call script's parts with include/live.lua (per-key overrides): its first half
  // before the engine, which becomes `run_engine()`, and its second half (from `--- @engine`)
  // after it.
  withLive(parts) {
    const file = 'lua/include/live.lua';
    const text = this.read('include/live.lua');
    const at = text.search(/^--- @engine\n/m);
    if (at < 0) throw new Error(`${file} no longer holds a \`--- @engine\` line`);
    const engine = parts[parts.length - 1];
    return [
      ...parts.slice(0, -1),
      part(file, text.slice(0, at).trimEnd()),
      own('local function run_engine()'),
      engine,
      own('end'),
      { file: `${file}:${text.slice(0, at).split('\n').length}`, text: text.slice(at) },
    ];
  }

  // A script's parts: the prelude (and the combined layout's), the steps and algorithms, the
  // block steps and the engine (and the batch loop).
  parts(algorithms, batch, c) {
    const one = algorithms.length === 1;
    let body = [
      ...this.stepsFor(algorithms),
      ...(one
        ? [batch && !c ? algorithms[0].soloBatch : algorithms[0].solo]
        : [own(MIXED_HEADER), ...algorithms.map((a) => a.mixed), own(MIXED_FOOTER)]),
    ];
    if (c) body = body.map((p) => part(p.file, c.toCall(p.text)));
    if (batch) body = body.map((p) => part(p.file, forBatch(p.text)));
    const prelude = this.prelude();
    const head = [part('lua/include/prelude.lua', batch ? prelude.batch : prelude.single)];
    if (batch) head.unshift(own(BATCH_HEADER));
    if (c) head.push(part('lua/include/combined.lua', c.part));
    const tail = c
      ? [part('lua/include/blocks.lua', c.blocks), own(batch ? c.batchEngine : c.engine)]
      : batch
        ? [part('lua/include/blocks.lua', this.blocks().batch), own(this.batchEngine())]
        : [
            part('lua/include/blocks.lua', this.blocks().single),
            part('lua/include/engine.lua', singleEngine(this.engineParts())),
          ];
    if (batch) tail.push(part('lua/include/batch.lua', this.read('include/batch.lua')));
    return [...head, ...body, ...tail];
  }

  /** A standalone script of lua/leases/ (ConcurrencyLimiter's leases): the prelude and the file. */
  lease(name) {
    return this.once(`lease:${name}`, () => {
      const file = `leases/${name}.lua`;
      if (!this.leases().includes(name)) throw new Error(`unknown lease script: ${name}`);
      const parts = [
        part('lua/include/prelude.lua', this.prelude().single),
        part(`lua/${file}`, this.read(file)),
      ];
      return finish(`lease-${name}`, [], parts, false);
    });
  }

  /**
   * The store's clock probe (lua/probes/clock.lua): the file alone, without the prelude (it reads
   * no ARGV and decides nothing).
   */
  clockProbe() {
    return this.once('clock-probe', () =>
      finish(
        'clock-probe',
        [],
        [part('lua/probes/clock.lua', this.read('probes/clock.lua'))],
        false,
      ),
    );
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

// How a script binds an algorithm, in place of its `register(…)` line (`match`): alone (locals
// CHECK, COMMIT, …), mixed (an entry of ALG), and alone in a batch script (with its lone decider,
// the lines between `--- @batch` and `--- @end batch`, which the others get as blank lines).
function bindings(file, source, match) {
  const [line, , check, commit, clear, refund, nargs, lone] = match;
  const single = source.replace(BATCH_ONLY, (all) => all.replace(/[^\n]+/g, ''));
  const inBatch = source.replace(BATCH_ONLY, (_, body) => `--\n${body}--\n`);
  if ((single !== source) !== (lone !== undefined))
    throw new Error(
      `${file}: a lone decider is registered and defined under --- @batch, or neither`,
    );
  const solo = `local CHECK, COMMIT, CLEAR, REFUND, NARGS, ALG = ${check}, ${commit}, ${clear}, ${refund}, ${nargs}, nil`;
  const entry = `ALG['${match[1]}'] = { ${check}, ${commit}, ${clear}, ${refund}, ${nargs} }`;
  return {
    solo: part(file, single.replace(line, solo)),
    mixed: part(file, single.replace(line, entry)),
    soloBatch: part(file, inBatch.replace(line, lone ? `${solo}; LONE = ${lone}` : solo)),
  };
}

/** An assembler over one copy of lua/ (see Assembler). */
function createAssembler(files) {
  return new Assembler(files);
}

function finish(name, algorithms, parts, combined) {
  const source = `${parts.map((p) => `${marker(p.file)}\n${p.text}`).join('\n\n')}\n`;
  return Object.freeze({
    name,
    sha1: createHash('sha1').update(source).digest('hex'),
    algorithms: Object.freeze(algorithms),
    keysPerPolicy: 1,
    ...(combined ? { combined: true } : {}),
    source,
  });
}

/**
 * Every script `pnpm generate` writes and pins: per algorithm its single and batch scripts, the
 * combined ones where its state can share the key, `engine` (all algorithms), the leases and the
 * clock probe.
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
  out.push(assembler.clockProbe());
  return out;
}

module.exports = { ASSEMBLER, createAssembler, fixedScripts, stripComments };
