/**
 * One Fastify server per process for the overload harness (overload.ts): its handler calls a
 * simulated dependency with `C` slots and a service time (a FIFO queue in front of the slots,
 * like a connection pool), behind one of the protections compared. The parent process sets the
 * service time over IPC (`{ serviceMs }`) and reads the protection's state (`{ state: true }`).
 *
 *   node dist/overload-server.js <subject> <C> <serviceMs>
 */
import { writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import {
  adaptiveConcurrency,
  ConcurrencyLimiter,
  type Criticality,
  memoryStore,
} from '@floodgate/core';
import { loadShedder } from '@floodgate/fastify';
import Fastify, { type FastifyPluginAsync, type FastifyRequest } from 'fastify';

/**
 * A dependency with `slots` concurrent slots; excess calls wait in FIFO order. It keeps its true
 * capacity whatever this process's event loop does: a call holds its slot for exactly
 * `serviceMs` from the moment it got the slot, and a waiting call gets the slot at the moment
 * the previous call was due to finish, not when this process's timer got round to it. (With
 * plain timers, every millisecond a busy machine delays a timer was a millisecond the slot sat
 * idle: the simulated dependency lost up to a third of its capacity on a loaded machine, and
 * every protection was measured against a C the dependency no longer had.) Late timers still
 * delay the responses, as they would a real server's.
 */
class Dependency {
  private busy = 0;
  private readonly waiting: { arrivedAt: number; start: (at: number) => void }[] = [];
  constructor(
    private readonly slots: number,
    public serviceMs: number,
  ) {}

  async call(): Promise<void> {
    const arrivedAt = performance.now();
    let startedAt = arrivedAt;
    if (this.busy >= this.slots) {
      startedAt = await new Promise<number>((start) => this.waiting.push({ arrivedAt, start }));
    } else this.busy += 1;
    const dueAt = startedAt + this.serviceMs;
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, dueAt - performance.now())));
    const next = this.waiting.shift();
    // The next call's service starts when this one was due to end, or when it arrived if later.
    if (next) next.start(Math.max(dueAt, next.arrivedAt));
    else this.busy -= 1;
  }
}

// Loaded untyped: its type declarations augment every FastifyInstance of the program, which then
// no longer matches other plugins' signatures.
const underPressure = createRequire(import.meta.url)(
  '@fastify/under-pressure',
) as FastifyPluginAsync<Record<string, unknown>>;

const criticalityOf = (request: FastifyRequest): Criticality =>
  request.headers['x-criticality'] === 'critical' ? 'critical' : 'default';

/**
 * OVERLOAD_TRACE=<file>: every sample the estimator learns from, written as JSON lines when the
 * server exits: time (ms since start), the sample's latency (the short RTT) and in-flight count,
 * the limit after it, the long-term RTT (Gradient2) or the no-load RTT (Vegas), and the requests
 * in flight at that moment. For finding out why a limit moves; the harness's figures do not use it.
 */
function traceEstimator(limiter: ReturnType<typeof adaptiveConcurrency>, file: string): void {
  const estimator = limiter.estimator as typeof limiter.estimator & {
    longRttMicros?: number;
    rttNoLoadMicros?: number;
  };
  const update = estimator.update.bind(estimator);
  const lines: string[] = [];
  const start = performance.now();
  estimator.update = (sample) => {
    update(sample);
    lines.push(
      JSON.stringify({
        t: Math.round(performance.now() - start),
        rtt: sample.rtt,
        sampleInFlight: sample.inFlight,
        limit: estimator.limit,
        baseline: estimator.longRttMicros ?? estimator.rttNoLoadMicros,
        inFlight: limiter.inFlight,
      }),
    );
  };
  process.once('exit', () => writeFileSync(file, `${lines.join('\n')}\n`));
}

async function main(): Promise<void> {
  const [subject, slotsArg, serviceArg] = process.argv.slice(2) as [string, string, string];
  const slots = Number(slotsArg);
  const dependency = new Dependency(slots, Number(serviceArg));
  const app = Fastify();
  let state = (): { limit: number; inFlight: number } => ({ limit: 0, inFlight: 0 });

  if (subject === 'floodgate') {
    // Gradient2 with Netflix's parameters except these: bounds for a service of C slots (start at
    // C, between 1 and 4 × C; Netflix's 20 to 200 suit bigger services), rttTolerance 1.1 (shrink
    // as soon as latency is 10 % over its long-term average, not 50 %), and the critical reserve
    // sized to the critical demand at 3 × C (0.2 × 3 = 0.6 of capacity; no sheddable traffic
    // here, so no default reserve). OVERLOAD_FLOODGATE (JSON) replaces them to try other settings.
    const limiter = adaptiveConcurrency(
      JSON.parse(
        process.env.OVERLOAD_FLOODGATE ??
          JSON.stringify({
            algorithm: 'gradient2',
            initialLimit: slots,
            minLimit: 1,
            maxLimit: slots * 4,
            rttTolerance: 1.1,
            criticalReserve: 0.6,
            defaultReserve: 0,
          }),
      ),
    );
    await app.register(loadShedder, { limiter, criticality: criticalityOf });
    state = () => ({ limit: limiter.limit, inFlight: limiter.inFlight });
    if (process.env.OVERLOAD_TRACE !== undefined)
      traceEstimator(limiter, process.env.OVERLOAD_TRACE);
  } else if (subject === 'under-pressure') {
    await app.register(underPressure, {
      maxEventLoopDelay: 50,
      maxEventLoopUtilization: 0.9,
      sampleInterval: 100,
      retryAfter: 1,
    });
  } else {
    // Tuned by hand: exactly the dependency's slots.
    const fixed = new ConcurrencyLimiter({ store: memoryStore(), limit: slots, leaseTtl: '30s' });
    let held = 0;
    app.addHook('onRequest', async (_request, reply) => {
      const d = await fixed.acquire('all');
      if (!d.allowed || !d.lease) {
        reply.code(503).header('Retry-After', '1').send('overloaded');
        return reply;
      }
      held += 1;
      const lease = d.lease;
      reply.raw.once('close', () => {
        held -= 1;
        void lease.release();
      });
    });
    state = () => ({ limit: slots, inFlight: held });
  }

  app.get('/work', async () => {
    await dependency.call();
    return 'ok';
  });
  await app.listen({ port: 0, host: '127.0.0.1' });
  process.on('message', (message: { serviceMs?: number; state?: boolean; exit?: boolean }) => {
    if (message.serviceMs !== undefined) dependency.serviceMs = message.serviceMs;
    if (message.state) process.send?.({ state: state() });
    if (message.exit) void app.close().then(() => process.exit(0));
  });
  process.send?.({ port: (app.server.address() as AddressInfo).port });
}

void main();
