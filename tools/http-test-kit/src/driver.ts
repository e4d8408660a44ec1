/**
 * What the shared HTTP tests (scenarios.ts here, core's test/http/) need from each framework: an
 * app with the given limiters mounted, served on a real port. express.ts, koa.ts and fastify.ts
 * implement it.
 */
import type { Server } from 'node:http';

/** How to build the app under test: the limiters to mount and the framework settings. */
export interface TestAppOptions {
  /** Options of each `rateLimit(...)` to mount, in order (several = stacked limiters). */
  limiters: readonly Record<string, unknown>[];
  /**
   * Express `trust proxy` / Koa `app.proxy` (+ `app.maxIpsCount` when a number): a number is
   * the count of trusted proxy hops, `true` trusts every hop.
   */
  trustProxy?: boolean | number;
  /** Builds each limiter inside a handler, per request (the mistake a diagnostic reports). */
  perRequest?: boolean;
  /** Called by the `/hold` route with a function that finishes the response. */
  onHold?: (finish: () => void, req: unknown) => void;
  /**
   * Called by every other route when the request reaches the handler; those routes answer with
   * the status in `?status=` (200 without it).
   */
  onHandler?: (req: unknown) => void;
  /**
   * Receives each mounted middleware's handle, in order (Fastify then mounts each with
   * `rateLimitHook` as an onRequest hook instead of registering the plugin).
   */
  onMounted?: (handles: readonly MountedLimiter[]) => void;
}

/** What a mounted middleware exposes besides itself (RateLimitControl, framework-free). */
export interface MountedLimiter {
  resetKey(req: unknown): Promise<void>;
  readonly limiter: unknown;
  limiterFor(req: unknown): Promise<unknown>;
}

/** A served app: its base URL and the server behind it. */
export interface TestApp {
  readonly server: Server;
  readonly url: string;
  close(): Promise<void>;
}

/** Serves an app with one framework. */
export type Serve = (options: TestAppOptions) => Promise<TestApp>;

/**
 * One app at a time for a describe block: `start(options)` serves it and answers its URL, and it
 * is closed after each test; `close()` closes it earlier, within a test.
 */
export function useTestApp(serve: Serve): {
  start: (options: TestAppOptions) => Promise<string>;
  close: () => Promise<void>;
} {
  let app: TestApp | undefined;
  const close = async () => {
    const open = app;
    app = undefined;
    await open?.close();
  };
  afterEach(close);
  return {
    start: async (options) => {
      app = await serve(options);
      return app.url;
    },
    close,
  };
}

/**
 * The test's side of the `/hold` route: pass `onHold` to `start`; `reached` resolves when the
 * first held request is in its handler, and `finish()` then answers the latest one held.
 */
export function holdRequests(): {
  onHold: (finish: () => void) => void;
  reached: Promise<void>;
  finish: () => void;
} {
  let held: (() => void) | undefined;
  let reach!: () => void;
  const reached = new Promise<void>((resolve) => {
    reach = resolve;
  });
  return {
    onHold: (finish) => {
      held = finish;
      reach();
    },
    reached,
    finish: () => {
      if (!held) throw new Error('holdRequests(): no request is held');
      held();
    },
  };
}
