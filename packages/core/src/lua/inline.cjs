// Inline steps for src/lua/assemble.cjs. A `local function` in lua/include/<name>.lua whose
// comment ends with the line `--- @inline` is written out where an algorithm calls it, with the
// call's arguments in place of its parameters, and defined nowhere: a script body runs on every
// EVALSHA, so a `local function` costs Redis a closure on every call (~400 instructions and
// more with upvalues) plus ~340 per call, which a few lines pasted in place do not. The step's
// source stays in one place (lua/include/); only the generated scripts repeat it.
//
// A call must be a statement of one of two shapes:
//   `[local] x, y = step(a, b, …)`  the body runs in `do … end`, its last line `return e, f`
//                                   becomes `x, y = e, f` (no other return allowed)
//   `return step(a, b, …)`          the body is pasted as it is (its returns return)
// Arguments are names. A parameter the body assigns must be given a name the call assigns
// anyway (`x, y = step(x, y)`), and the body's own locals must not hide the call's names: the
// generator fails on anything else rather than write a script that decides otherwise.

const MACRO =
  /(?:^--(?!- @inline).*\n)*^--- @inline\nlocal function (\w+)\(([^)]*)\)\n([\s\S]*?)^end$\n?/gm;
const names = (list) =>
  list
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);

/**
 * The include's text without its inline steps, and those steps by name; `file` (e.g.
 * `lua/include/refill.lua`) is named by the marker that opens each pasted copy.
 */
function takeInline(text, file) {
  const steps = new Map();
  const rest = text.replace(MACRO, (all, name, params, body, offset) => {
    const header = offset + all.indexOf(`local function ${name}(`);
    const line = text.slice(0, header).split('\n').length + 1;
    const lines = body
      .trimEnd()
      .split('\n')
      .map((l) => l.replace(/^ {2}/, ''))
      .filter((l) => !/^\s*--/.test(l));
    const locals = new Set();
    for (const m of lines.join('\n').matchAll(/\blocal\s+([\w\s,]+?)\s*(?:=|$)/gm))
      for (const n of names(m[1])) locals.add(n);
    for (const m of lines.join('\n').matchAll(/\bfor\s+([\w\s,]+?)\s*(?:=|\bin\b)/g))
      for (const n of names(m[1])) locals.add(n);
    const assigned = new Set();
    for (const m of lines
      .join('\n')
      .matchAll(/(?:^|\bthen\s|\belse\s|\bdo\s)\s*(\w+(?:\s*,\s*\w+)*)\s*=(?!=)/gm))
      for (const n of names(m[1])) assigned.add(n);
    steps.set(name, { name, params: names(params), lines, locals, assigned, file, line });
    return '';
  });
  return { rest: rest.replace(/\n{3,}/g, '\n\n').trim(), steps };
}

// Replaces each whole-word parameter by its argument, outside strings and after no `.` or `:`.
function substitute(line, map) {
  return line
    .split(/('[^']*'|"[^"]*")/)
    .map((part, i) =>
      i % 2 === 1 ? part : part.replace(/(?<![.:\w])[A-Za-z_]\w*/g, (w) => map.get(w) ?? w),
    )
    .join('');
}

/**
 * `source` (an algorithm file) with every call of these inline steps written out in place, each
 * copy between `-- >>> <its file>:<line>` and `-- <<<` (so an error's line leads to the step).
 */
function expandInline(source, steps, file) {
  let text = source;
  for (const step of steps.values()) {
    const fail = (why) => {
      throw new Error(`lua/${file}: inline step ${step.name}: ${why}`);
    };
    const call = new RegExp(
      `^( *)(?:(return)|(local +)?(\\w+(?: *, *\\w+)*) *=) *${step.name}\\(([^)]*)\\) *$`,
      'gm',
    );
    text = text.replace(call, (_, indent, ret, local, lhs, args) => {
      const targets = ret ? [] : names(lhs);
      const values = names(args);
      if (values.length !== step.params.length || values.some((v) => !/^\w+$/.test(v)))
        fail(`takes ${step.params.length} names as arguments: ${args}`);
      for (const n of [...values, ...targets])
        if (step.locals.has(n)) fail(`its local ${n} would hide the caller's`);
      const map = new Map(step.params.map((p, i) => [p, values[i]]));
      for (const p of step.assigned)
        if (map.has(p) && !targets.includes(map.get(p)))
          fail(`assigns its parameter ${p}, so the call must assign ${map.get(p)} too`);
      let body = step.lines.map((l) => substitute(l, map));
      if (!ret) {
        const last = body.pop() ?? '';
        const result = /^return (.*)$/.exec(last);
        if (!result || body.some((l) => /\breturn\b/.test(l)))
          fail('used as a value, so it must end with its only `return`');
        if (result[1].replace(/\s/g, '') !== targets.join(','))
          body.push(`${targets.join(', ')} = ${result[1]}`);
      }
      if (step.locals.size > 0) body = ['do', ...body.map((l) => `  ${l}`), 'end'];
      if (local) body.unshift(`local ${targets.join(', ')}`);
      body = [`-- >>> ${step.file}:${step.line} (inline ${step.name})`, ...body, '-- <<<'];
      return body.map((l) => `${indent}${l}`).join('\n');
    });
    if (new RegExp(`(?<![.:\\w])${step.name}\\b`).test(text.replace(/--.*$/gm, '')))
      fail('is used other than as `[local] x, … = step(…)` or `return step(…)`');
  }
  return text;
}

module.exports = { takeInline, expandInline };
