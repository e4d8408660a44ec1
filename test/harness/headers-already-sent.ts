/**
 * The shared case of each adapter's "headers already sent" test: an app whose early middleware
 * wrote the response's head (and `early;`) before the limiter (limit 1 a minute) ran. The
 * limiter must not throw into the error handler: no headers, still counted, and the denial
 * ends the response without running the handler.
 */
import { fixedWindow, memoryStore } from '@floodgate/core';
import request from 'supertest';

/** What an app reports: errors its error handler saw, and handler runs. */
export interface Seen {
  errors: unknown[];
  handled: number;
}

/** A served app. */
export interface EarlyApp {
  url: string;
  close(): Promise<void>;
}

/** The limiter options every adapter's early app mounts. */
export const earlyLimiterOptions = () => ({
  store: memoryStore({ clock: () => 1_700_000_055_000 }),
  policies: fixedWindow({ limit: 1, window: '1m', name: 'per-minute' }),
  headers: { legacy: true },
});

/** Registers the test for apps `build` serves (the handler answers `handler`). */
export function describeHeadersAlreadySent(
  label: string,
  build: (seen: Seen) => Promise<EarlyApp>,
): void {
  describe(`${label}: headers already sent`, () => {
    let app: EarlyApp | undefined;
    afterEach(async () => {
      await app?.close();
      app = undefined;
    });

    it('skips the headers, still counts, and refuses without an error', async () => {
      const seen: Seen = { errors: [], handled: 0 };
      app = await build(seen);
      const admitted = await request(app.url).get('/');
      expect(admitted.status).toBe(200);
      expect(admitted.text).toBe('early;handler');
      expect(admitted.headers.ratelimit).toBeUndefined();
      expect(admitted.headers['x-ratelimit-remaining']).toBeUndefined();
      expect(seen).toEqual({ errors: [], handled: 1 });

      // Counted: the second request is refused (it can only end what was started).
      const denied = await request(app.url).get('/');
      expect(denied.status).toBe(200);
      expect(denied.text).toBe('early;');
      expect(denied.headers['retry-after']).toBeUndefined();
      expect(seen).toEqual({ errors: [], handled: 1 });
    });
  });
}
