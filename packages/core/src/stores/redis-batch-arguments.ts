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
    for (const key of call.keys) keys.push(key);
  }
  head[0] = shapeId(shapes.size);
  if (shapes.size > 1) for (const id of entries) head.push(id);
}
