/**
 * What every cell of the client matrix must pass, on a standalone server or a cluster: the
 * conformance table (one call at a time, and batched; by EVALSHA and as Redis Functions), leases, the failure policy on a real
 * Redis error reply, and the client's key prefix (kept in front of the hash tag, or refused).
 */
import {
  ConcurrencyLimiter,
  fixedWindow,
  RateLimitConfigError,
  RateLimiter,
  redisStore,
} from '../../src/index.js';
import { SCENARIOS } from '../conformance/algorithms/index.js';
import { describeConformance } from '../conformance/table.js';
import { type MatrixClient, type MatrixRow, rowName, type Target } from './matrix.js';

/**
 * The matrix checks answers, not latency: its limiters wait up to 10 s, so that a machine busy
 * with the rest of the suite (a cluster's six nodes, other workers) never turns a slow answer into
 * a failure (`reason: 'timeout'`). The timeout itself is tested elsewhere.
 */
const ANSWER_TIMEOUT_MS = 10_000;

/** A raw command on the target, through a plain connection the test owns. */
export type Admin = (args: string[]) => Promise<unknown>;

/**
 * Defines the matrix tests for `row` on `target()`; `admin` runs commands for the checks (on a
 * cluster it must route by the first key).
 */
export function matrixTests(row: MatrixRow, target: () => Target, admin: () => Admin): void {
  const name = rowName(row);
  const cluster = () => target().topology === 'cluster';
  let connected: MatrixClient;
  let prefixes = 0;
  const prefix = (what: string) =>
    `${what}-${process.pid}-${name.replace(/\W+/g, '-')}-${prefixes++}`;
  beforeAll(async () => {
    connected = await row.connect(target());
  });
  afterAll(async () => {
    await connected?.close();
  });
  beforeEach(async () => {
    await connected.flushScripts();
  });

  describeConformance(name, SCENARIOS, (clock) =>
    redisStore({ client: connected.client, clock, batch: false }),
  );
  describeConformance(
    `${name}, batched`,
    SCENARIOS,
    (clock) => redisStore({ client: connected.client, clock, batch: { maxDecisions: 4 } }),
    'at once',
  );

  // scripts: 'functions': the same table through FCALL, each library loaded by the store.
  describeConformance(`${name}, functions`, SCENARIOS, (clock) =>
    redisStore({ client: connected.client, clock, batch: false, scripts: 'functions' }),
  );
  describeConformance(
    `${name}, functions, batched`,
    SCENARIOS,
    (clock) =>
      redisStore({
        client: connected.client,
        clock,
        batch: { maxDecisions: 4 },
        scripts: 'functions',
      }),
    'at once',
  );

  test('functions: libraries flushed on every primary mid-run are loaded again, each decision charged once', async () => {
    const limiter = new RateLimiter({
      store: redisStore({ client: connected.client, batch: !cluster(), scripts: 'functions' }),
      policies: [fixedWindow({ limit: 25, window: '1h' })],
      prefix: prefix('functions'),
      onStoreError: 'closed',
      timeout: ANSWER_TIMEOUT_MS,
    });
    const first = await Promise.all(Array.from({ length: 20 }, () => limiter.consume('k')));
    await connected.flushScripts();
    const then = await Promise.all(Array.from({ length: 20 }, () => limiter.consume('k')));
    const decisions = [...first, ...then];
    expect(decisions.filter((d) => d.reason !== undefined)).toEqual([]);
    expect(decisions.filter((d) => d.allowed)).toHaveLength(25);
    expect(then.filter((d) => d.allowed)).toHaveLength(5);
  });

  test('many concurrent decisions on one key, batched, on Redis TIME, admit exactly the limit', async () => {
    const limiter = new RateLimiter({
      store: redisStore({ client: connected.client, batch: true }),
      policies: [fixedWindow({ limit: 25, window: '1m' })],
      prefix: prefix('concurrent'),
      onStoreError: 'closed',
      timeout: ANSWER_TIMEOUT_MS,
    });
    const decisions = await Promise.all(Array.from({ length: 200 }, () => limiter.consume('k')));
    expect(decisions.filter((d) => d.reason !== undefined)).toEqual([]);
    expect(decisions.filter((d) => d.allowed)).toHaveLength(25);
  });

  test('leases: at most `limit` held at once under contention; release and renew work', async () => {
    const limiter = new ConcurrencyLimiter({
      store: redisStore({ client: connected.client }),
      limit: 3,
      leaseTtl: '30s',
      prefix: prefix('leases'),
      onStoreError: 'closed',
      timeout: ANSWER_TIMEOUT_MS,
    });
    const first = await Promise.all(Array.from({ length: 20 }, () => limiter.acquire('k')));
    expect(first.filter((d) => d.reason !== undefined)).toEqual([]);
    const held = first.filter((d) => d.allowed);
    expect(held).toHaveLength(3);
    expect(await held[0]!.lease!.renew()).toBe(true);
    expect(await held[0]!.lease!.release()).toBe(true);
    expect(await held[0]!.lease!.release()).toBe(false);
    expect(await held[0]!.lease!.renew()).toBe(false);
    const again = await limiter.acquire('k');
    expect(again).toMatchObject({ allowed: true, remaining: 0 });
    expect(await limiter.acquire('k')).toMatchObject({ allowed: false });
  });

  test.each([
    ['open', true],
    ['closed', false],
  ] as const)(
    'a Redis error reply (WRONGTYPE) is answered by the failure policy (%s)',
    async (policy, allowed) => {
      const limiter = new RateLimiter({
        store: redisStore({ client: connected.client, batch: false }),
        policies: [fixedWindow({ limit: 5, window: '1m' })],
        prefix: prefix('wrongtype'),
        onStoreError: policy,
        circuitBreaker: false,
        timeout: ANSWER_TIMEOUT_MS,
      });
      const [key] = limiter.storageKeys('k');
      // A list where the script expects a string: every decision on it fails inside Redis.
      await admin()(['RPUSH', key!, 'not-a-counter']);
      const d = await limiter.consume('k');
      expect(d).toMatchObject({ allowed, reason: 'store-error' });
      const peek = await limiter.peek('k');
      expect(peek).toMatchObject({ allowed, reason: 'store-error' });
      // A key of its own still decides: the client's connection is fine.
      expect(await limiter.consume('other')).toMatchObject({ allowed: true, remaining: 4 });
    },
  );

  if (!row.keyPrefix) return;

  test("the client's key prefix goes before the hash tag: keys land prefixed, calls stay in one slot", async () => {
    const withPrefix = await row.connect(target(), { keyPrefix: 'app:' });
    try {
      const limiter = new RateLimiter({
        store: redisStore({ client: withPrefix.client, batch: !cluster() }),
        policies: [
          fixedWindow({ limit: 2, window: '1m' }),
          fixedWindow({ limit: 5, window: '1h' }),
        ],
        prefix: prefix('keyprefix'),
        onStoreError: 'closed',
        timeout: ANSWER_TIMEOUT_MS,
      });
      const decisions = await Promise.all([1, 2, 3].map(() => limiter.consume('k')));
      expect(decisions.map((d) => [d.allowed, d.reason])).toEqual([
        [true, undefined],
        [true, undefined],
        [false, undefined],
      ]);
      // The policies' state (the block state key exists only once something is blocked).
      let prefixed = 0;
      for (const key of limiter.storageKeys('k')) {
        prefixed += Number(await admin()(['EXISTS', `app:${key}`]));
        expect(await admin()(['EXISTS', key])).toBe(0);
      }
      expect(prefixed).toBeGreaterThan(0);
    } finally {
      await withPrefix.close();
    }
  });

  test('a key prefix with a brace is refused at redisStore(): it would move the hash tag', async () => {
    const withBrace = await row.connect(target(), { keyPrefix: 'app{x}:' });
    try {
      let caught: unknown;
      try {
        redisStore({ client: withBrace.client });
      } catch (error) {
        caught = error;
      }
      expect(caught).toBeInstanceOf(RateLimitConfigError);
      expect(caught).toMatchObject({
        code: 'FLOODGATE_INVALID_OPTION',
        field: 'redisStore.client.keyPrefix',
        value: 'app{x}:',
      });
    } finally {
      await withBrace.close();
    }
  });
}
