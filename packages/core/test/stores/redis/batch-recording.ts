/**
 * What the batching tests share: a real Redis of their own, and ioredis clients whose every
 * script command is recorded as it is handed to the connection, with how many of that client's
 * script commands were then still unanswered (round trips in flight).
 */
import { Redis } from 'ioredis';
import { useOwnRedisServer } from '../../../../../test/harness/redis';
import { clockProbeScript, fixedScripts } from '../../../src/stores/scripts';

/** One script command as it was handed to the connection. */
export interface Sent {
  command: 'evalsha' | 'eval';
  /** The generated script's name, e.g. `fixed-window-batch`. */
  script: string;
  keys: number;
  /** This client's script commands written and not yet answered at that moment. */
  inFlight: number;
}

/**
 * Starts a redis-server for this test file (the script cache is server-wide and other jest
 * workers share the suite's server: a worker's SCRIPT FLUSH or LOAD would change which calls
 * meet NOSCRIPT), flushed before each test, and hands out recording clients.
 */
export function ownRedis() {
  const own = useOwnRedisServer();
  const opened: Redis[] = [];
  beforeEach(async () => {
    await own().client.flushdb();
    await own().client.script('FLUSH');
  });
  afterEach(() => {
    for (const c of opened.splice(0)) c.disconnect();
  });

  const scripts = fixedScripts();
  const nameOf = (sha1OrSource: string): string =>
    scripts.find((s) => s.sha1 === sha1OrSource || s.source === sha1OrSource)?.name ?? 'other';

  /** A real ioredis client of its own (the store sends its scripts through `sendCommand`). */
  const recording = () => {
    const sent: Sent[] = [];
    const wrapper = new Redis(own().server.port);
    opened.push(wrapper);
    const send = wrapper.sendCommand.bind(wrapper);
    // ioredis hands a command to sendCommand again when it leaves the offline queue: count once.
    const seen = new WeakSet<object>();
    let inFlight = 0;
    const answered = () => {
      inFlight--;
    };
    wrapper.sendCommand = (command, stream) => {
      const name = command.name.toLowerCase();
      const [script, keys] = command.args as [string, number];
      // The store's read of Redis TIME (stores/redis-time.ts) is no decision: not recorded.
      const clockRead = String(script) === clockProbeScript().source;
      if ((name === 'evalsha' || name === 'eval') && !clockRead && !seen.has(command)) {
        seen.add(command);
        sent.push({ command: name, script: nameOf(String(script)), keys: Number(keys), inFlight });
        inFlight++;
        command.promise.then(answered, answered);
      }
      return send(command, stream);
    };
    return { wrapper, sent };
  };

  /**
   * Holds every client's commands in Redis (`CLIENT PAUSE`, all commands) for `ms`: what is
   * written meanwhile stays in flight, unanswered, until the pause ends.
   */
  const pause = async (ms: number): Promise<void> => {
    await own().client.call('CLIENT', 'PAUSE', String(ms), 'ALL');
  };

  return { testRedis: (): Redis => own().client, recording, pause };
}

/** The next turn of the event loop (a later tick than the calls made before it). */
export const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));
