/**
 * One Redis command on a short-lived connection, with no client library: what the launchers need
 * to set a cluster up and watch it (CLUSTER NODES, INFO). The package stays free of a Redis
 * client, so the suites and the bench can import it from source without installing one here.
 */
import net from 'node:net';

/** A reply as the launchers read it: strings and integers, or an array of them. */
export type Reply = string | number | null | Reply[];

/** Parses one RESP2 reply from the start of `buffer`; `undefined` until it is complete. */
function parse(buffer: string, at = 0): { value: Reply; end: number } | undefined {
  const eol = buffer.indexOf('\r\n', at);
  if (eol === -1) return undefined;
  const head = buffer.slice(at + 1, eol);
  switch (buffer[at]) {
    case '+':
      return { value: head, end: eol + 2 };
    case '-':
      throw new Error(head);
    case ':':
      return { value: Number(head), end: eol + 2 };
    case '$': {
      const length = Number(head);
      if (length < 0) return { value: null, end: eol + 2 };
      // Bulk lengths count bytes: the socket decodes latin1, one character per byte.
      if (buffer.length < eol + 2 + length + 2) return undefined;
      return { value: buffer.slice(eol + 2, eol + 2 + length), end: eol + 2 + length + 2 };
    }
    case '*': {
      const count = Number(head);
      const items: Reply[] = [];
      let end = eol + 2;
      for (let i = 0; i < count; i++) {
        const item = parse(buffer, end);
        if (item === undefined) return undefined;
        items.push(item.value);
        end = item.end;
      }
      return { value: count < 0 ? null : items, end };
    }
    default:
      throw new Error(`unexpected reply from redis: ${JSON.stringify(buffer.slice(at, at + 40))}`);
  }
}

/**
 * Sends `args` to the server on 127.0.0.1:`port` and resolves with its reply; rejects on an
 * error reply, a refused connection or after `timeoutMs` (a dead node fails fast, never hangs).
 */
export function redisCommand(
  port: number,
  args: readonly string[],
  timeoutMs = 2000,
): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host: '127.0.0.1', port });
    let received = '';
    const finish = (error: Error | undefined, value?: Reply) => {
      socket.destroy();
      if (error) reject(error);
      else resolve(value ?? null);
    };
    socket.setEncoding('latin1');
    socket.setTimeout(timeoutMs, () =>
      finish(new Error(`redis on port ${port}: no reply in ${timeoutMs} ms`)),
    );
    socket.on('error', (error) => finish(error));
    socket.on('connect', () => {
      socket.write(
        `*${args.length}\r\n${args.map((a) => `$${Buffer.byteLength(a)}\r\n${a}\r\n`).join('')}`,
      );
    });
    socket.on('data', (chunk: string) => {
      received += chunk;
      try {
        const reply = parse(received);
        if (reply !== undefined) finish(undefined, reply.value);
      } catch (error) {
        finish(error as Error);
      }
    });
  });
}

/** `redisCommand` for a reply that is a string (CLUSTER NODES, INFO, CLUSTER MYID). */
export async function redisText(
  port: number,
  args: readonly string[],
  timeoutMs?: number,
): Promise<string> {
  const reply = await redisCommand(port, args, timeoutMs);
  if (typeof reply !== 'string') throw new Error(`${args.join(' ')}: expected a string reply`);
  return reply;
}
