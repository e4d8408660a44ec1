/**
 * Which budget a middleware spends, and the diagnostics about it: two middlewares that spend one
 * budget without meaning to (FLOODGATE_SHARED_BUDGET), one request charged twice to the same
 * budget (FLOODGATE_DOUBLE_COUNT), and middlewares built per request (FLOODGATE_LIMITER_PER_REQUEST).
 *
 * A budget is the storage a limiter reads and writes: its store (for Redis, the client: two
 * `redisStore({ client })` on one client share keys), its prefix and its policy ids. Sharing a
 * budget on purpose means passing the same `limiter` to both middlewares. A `concurrency`
 * limit's slot pool is a budget too: its store and its prefix.
 */
import type { ConcurrencyLimiter } from '../concurrency-limiter.js';
import type { RateLimiter } from '../rate-limiter.js';
import type { Diagnostics } from './diagnostics.js';

const serials = new WeakMap<object, number>();
let nextSerial = 0;

/**
 * The object whose state a store reads: the connection it was given (a Redis store's client,
 * shared by every `redisStore({ client })` on that client), else the store itself.
 */
function stateOwner(store: object): object {
  const connection = (store as { connection?: unknown }).connection;
  return connection !== null && typeof connection === 'object' ? connection : store;
}

/** The serial number of a state owner, for budget strings. */
function serialOf(owner: object): number {
  let serial = serials.get(owner);
  if (serial === undefined) {
    serial = nextSerial++;
    serials.set(owner, serial);
  }
  return serial;
}

/** `<store serial>|<prefix>|<sorted policy ids>`: equal for limiters that share state. */
export function budgetOf(limiter: Pick<RateLimiter, 'store' | 'prefix' | 'policies'>): string {
  const serial = serialOf(stateOwner(limiter.store));
  const ids = limiter.policies.map((p) => p.id).sort();
  return `${serial}|${limiter.prefix}|${ids.join(',')}`;
}

/** Per state owner: the live limiter of each budget, and the budgets already reported. */
const budgets = new WeakMap<
  object,
  { limiters: Map<string, WeakRef<object>>; reported: Set<string> }
>();

/**
 * Records a middleware's limiter; reports FLOODGATE_SHARED_BUDGET (once per budget) when another
 * live spender already spends the same budget. The spender is the limiter, or for a policies
 * function the middleware's PolicySets (its limiters are rebuilt after eviction).
 */
export function noteBudget(
  diagnostics: Diagnostics,
  limiter: RateLimiter,
  where: string,
  spender: object = limiter,
): void {
  if (!firstSharer(diagnostics, limiter.store, budgetOf(limiter), spender)) return;
  diagnostics.warn(
    'FLOODGATE_SHARED_BUDGET',
    `${where}: another middleware already uses the same store, prefix ("${limiter.prefix}") and ` +
      `policies (${limiter.policies.map((p) => `"${p.name}"`).join(', ')}), so both spend one ` +
      'budget: requests to one route use up the other. Give each its own prefix or policy names; ' +
      'to share a budget on purpose, pass one `limiter` to both middlewares.',
  );
}

/**
 * Records `spender` as spending `budget` of `store`'s state: true (once per budget) when another
 * live spender already spends it and the diagnostic is still to be reported.
 */
function firstSharer(
  diagnostics: Diagnostics,
  store: object,
  budget: string,
  spender: object,
): boolean {
  const owner = stateOwner(store);
  let entry = budgets.get(owner);
  if (entry === undefined) {
    entry = { limiters: new Map(), reported: new Set() };
    budgets.set(owner, entry);
  }
  const other = entry.limiters.get(budget)?.deref();
  entry.limiters.set(budget, new WeakRef(spender));
  if (other === undefined || other === spender || entry.reported.has(budget)) return false;
  if (!diagnostics.pending('FLOODGATE_SHARED_BUDGET')) return false;
  entry.reported.add(budget);
  return true;
}

/**
 * Records a middleware's concurrency limiter; reports FLOODGATE_SHARED_BUDGET (once per pool)
 * when another live ConcurrencyLimiter holds its slots under the same store and prefix: a slow
 * request on one route would then take the other route's slots.
 */
export function noteLeaseBudget(
  diagnostics: Diagnostics,
  concurrency: Pick<ConcurrencyLimiter, 'store' | 'prefix' | 'limit'>,
  where: string,
): void {
  const budget = `${serialOf(stateOwner(concurrency.store))}|leases|${concurrency.prefix}`;
  if (!firstSharer(diagnostics, concurrency.store, budget, concurrency)) return;
  diagnostics.warn(
    'FLOODGATE_SHARED_BUDGET',
    `${where}.concurrency: another middleware's concurrency limit already keeps its slots on the ` +
      `same store under the prefix "${concurrency.prefix}", so both take slots from one pool: a ` +
      'slow request on one route makes the other answer 429. Give each its own prefix; to share ' +
      'one pool on purpose, pass one ConcurrencyLimiter to both middlewares.',
  );
}

/**
 * The budgets each request was charged to (keyed by Node's request object): the first as a
 * string, a Set only once there are two, as nearly every request is charged once. (A symbol
 * property on the request instead turned Node's request object into a dictionary-mode object:
 * more garbage per request, and slower property reads after it.)
 */
const charged = new WeakMap<object, string | Set<string>>();

/** Records that `request` was charged to `budget`; reports FLOODGATE_DOUBLE_COUNT the second time. */
export function noteCharge(
  diagnostics: Diagnostics,
  request: object | undefined,
  budget: string,
): void {
  if (request === undefined) return;
  const seen = charged.get(request);
  if (seen === undefined) {
    charged.set(request, budget);
    return;
  }
  if (typeof seen === 'string' ? seen !== budget : !seen.has(budget)) {
    if (typeof seen === 'string') charged.set(request, new Set([seen, budget]));
    else seen.add(budget);
    return;
  }
  diagnostics.warn(
    'FLOODGATE_DOUBLE_COUNT',
    'One request was charged twice to the same limiter (the middleware is mounted twice, or ' +
      'globally and on a route), so it counts double. Mount it once.',
  );
}

/** Middlewares whose first request came in the same event-loop turn as their construction. */
let builtPerRequest = 0;
/** Two such middlewares are taken as a pattern (one may be a lazily built middleware). */
const PER_REQUEST_THRESHOLD = 2;

/**
 * Tracks one middleware's first request: a middleware built per request (inside a handler) sees
 * its first request in the same turn of the event loop as its construction, and never limits
 * anything (a new memory store each time) or pays construction on every request.
 */
export class FirstRequestWatch {
  private sameTurn = true;
  private seen = false;

  constructor() {
    setImmediate(() => {
      this.sameTurn = false;
    }).unref();
  }

  /** Call at the start of every request (synchronously). */
  check(diagnostics: Diagnostics): void {
    if (this.seen) return;
    this.seen = true;
    if (!this.sameTurn || ++builtPerRequest < PER_REQUEST_THRESHOLD) return;
    diagnostics.warn(
      'FLOODGATE_LIMITER_PER_REQUEST',
      'Rate-limit middlewares are being created per request (inside a handler): each has a new ' +
        'budget, so nothing is limited. Create the middleware once, at startup, and mount it.',
    );
  }
}
