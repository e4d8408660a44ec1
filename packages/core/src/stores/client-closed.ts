/**
 * A Redis client closed by the app (`quit()`, `disconnect()`, `close()`, `destroy()`) while
 * decisions were pending: what the store had not sent yet (a decision held for the next batch,
 * or made after the close) is refused by the client. Said as such, with its own code, so the
 * failure policy's answer and FLOODGATE_STORE_UNAVAILABLE do not read as a Redis outage.
 */
import { CLIENT_CLOSED } from '../errors.js';

/** The refusal `cause` of a client described as `description`, said as a closed client. */
export function clientClosedError(description: string, cause: unknown): Error {
  const error = new Error(
    `the ${description} client was closed (quit(), disconnect(), close() or destroy()) before this call was sent: await every decision, refund and release before closing the client (docs/recipes.md, "Short-lived processes")`,
    { cause },
  );
  return Object.assign(error, { code: CLIENT_CLOSED });
}

/**
 * ioredis: a command refused by a client whose status is `end` (after `quit()` or
 * `disconnect()`, or once it stopped reconnecting) is a closed client's refusal.
 */
export function ioredisClosed(
  client: { readonly status?: unknown },
  description: string,
): (error: unknown) => never {
  return (error) => {
    if (client.status === 'end') throw clientClosedError(description, error);
    throw error;
  };
}

/**
 * node-redis: whether the client has been ready (so a refusal now that it is not open means it
 * was closed, not that nobody connected it).
 */
export function nodeRedisBeenReady(client: {
  readonly isReady?: unknown;
  once?: (event: 'ready', listener: () => void) => unknown;
}): () => boolean {
  let ready = client.isReady === true;
  if (!ready && typeof client.once === 'function') {
    client.once('ready', () => {
      ready = true;
    });
  }
  return () => ready || client.isReady === true;
}
