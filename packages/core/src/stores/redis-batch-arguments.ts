/** The KEYS and ARGV of one batch script call (lua/include/batch.lua reads them). */

/** What a batched call contributes to its batch's arguments. */
export interface BatchedCall {
  readonly keys: readonly string[];
  readonly args: readonly string[];
}

/** Shape numbers as strings ('1', '2', …), made once. */
const SHAPE_IDS: string[] = [];
const shapeId = (n: number): string => (SHAPE_IDS[n] ??= String(n));

/**
 * Fills `keys` and `head` (emptied first) with one batch script call's KEYS and ARGV for
 * `calls`: the distinct ARGV arrays once each, then each call's shape number unless there is
 * one shape; KEYS in call order.
 */
export function batchArguments(
  calls: readonly BatchedCall[],
  keys: string[],
  head: string[],
): void {
  keys.length = 0;
  head.length = 0;
  head.push('');
  const shapes = new Map<readonly string[], string>();
  const entries: string[] = new Array(calls.length);
  for (let i = 0; i < calls.length; i++) {
    const call = calls[i]!;
    let id = shapes.get(call.args);
    if (id === undefined) {
      id = shapeId(shapes.size + 1);
      shapes.set(call.args, id);
      head.push(shapeId(call.keys.length), shapeId(call.args.length), ...call.args);
    }
    entries[i] = id;
    const own = call.keys;
    for (let j = 0; j < own.length; j++) keys.push(own[j]!);
  }
  head[0] = shapeId(shapes.size);
  if (shapes.size > 1) for (const id of entries) head.push(id);
}

/** A call of a per-node batch: its slot too. */
export interface NodeBatchedCall extends BatchedCall {
  readonly slot: number;
}

/**
 * Fills `keys` and `args` (emptied first) with one per-node batch script call's KEYS and ARGV
 * for `calls`, which come sorted by slot (the assembler's NODE_HEADER reads them): KEYS is the
 * first call's first key (the node's route; a command's declared keys must share a slot), ARGV
 * the number of slot groups and of keys, each group's number of calls, every key in call order,
 * then the batch script's own ARGV (batchArguments).
 */
export function nodeBatchArguments(
  calls: readonly NodeBatchedCall[],
  keys: string[],
  args: string[],
): void {
  const all: string[] = [];
  const head: string[] = [];
  batchArguments(calls, all, head);
  const groups: string[] = [];
  let run = 0;
  for (let i = 0; i < calls.length; i++) {
    run++;
    if (i + 1 === calls.length || calls[i + 1]!.slot !== calls[i]!.slot) {
      groups.push(shapeId(run));
      run = 0;
    }
  }
  keys.length = 0;
  keys.push(all[0] ?? '');
  args.length = 0;
  args.push(shapeId(groups.length), shapeId(all.length), ...groups, ...all, ...head);
}
