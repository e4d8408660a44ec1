/**
 * The adaptive limit algorithms against hand-computed traces: each expected limit below is
 * worked out from the formula (integer thousandths of a request, integer microseconds), so a
 * change to a formula, a default or a rounding fails here.
 */
import { AimdLimit } from '../../src/overload/aimd';
import { Gradient2Limit, LongAverage } from '../../src/overload/gradient2';
import { log10Root, VegasLimit } from '../../src/overload/vegas';

const MS = 1000;

describe('AIMD', () => {
  it('halves the limit on each drop with backoffRatio 0.5, down to minLimit', () => {
    const aimd = new AimdLimit(
      { initialLimit: 40, minLimit: 1, maxLimit: 50, backoffRatio: 0.5 },
      'aimd',
    );
    const limits: number[] = [];
    for (let i = 0; i < 7; i++) {
      aimd.update({ rtt: 10 * MS, inFlight: 40, dropped: true });
      limits.push(aimd.limit);
    }
    expect(limits).toEqual([20, 10, 5, 2, 1, 1, 1]);
  });

  it("backs off by Netflix's default 0.9, rounding down", () => {
    const aimd = new AimdLimit({ initialLimit: 40, minLimit: 1 }, 'aimd');
    const limits: number[] = [];
    for (let i = 0; i < 6; i++) {
      aimd.update({ rtt: 10 * MS, inFlight: 1, dropped: true });
      limits.push(aimd.limit);
    }
    // 40 × 0.9 = 36, 32.4, 28.8, 25.2, 22.5, 19.8
    expect(limits).toEqual([36, 32, 28, 25, 22, 19]);
  });

  it('grows by one only while half the limit is in use, and treats latency over timeout as a drop', () => {
    const aimd = new AimdLimit({ initialLimit: 10, minLimit: 1, timeout: '100ms' }, 'aimd');
    aimd.update({ rtt: 10 * MS, inFlight: 4, dropped: false }); // 8 < 10: app-limited
    expect(aimd.limit).toBe(10);
    aimd.update({ rtt: 10 * MS, inFlight: 5, dropped: false });
    expect(aimd.limit).toBe(11);
    aimd.update({ rtt: 100 * MS, inFlight: 6, dropped: false }); // not above the timeout
    expect(aimd.limit).toBe(12);
    aimd.update({ rtt: 100 * MS + 1, inFlight: 6, dropped: false });
    expect(aimd.limit).toBe(10); // 12 × 0.9 = 10.8
  });

  it('never exceeds maxLimit (Netflix defaults: 20 to 200)', () => {
    const aimd = new AimdLimit({}, 'aimd');
    expect(aimd.limit).toBe(20);
    for (let i = 0; i < 300; i++) aimd.update({ rtt: MS, inFlight: 200, dropped: false });
    expect(aimd.limit).toBe(200);
    aimd.update({ rtt: MS, inFlight: 200, dropped: true });
    expect(aimd.limit).toBe(180);
  });
});

describe('Vegas', () => {
  const never = () => 0.999; // jitter 0.999: probes as late as possible

  it('estimates the queue as ceil(limit × (1 − rttNoLoad / rtt)) and moves the limit by it', () => {
    const vegas = new VegasLimit({ random: never }, 'vegas');
    vegas.update({ rtt: 10 * MS, inFlight: 10, dropped: false }); // first sample: rttNoLoad
    expect(vegas.rttNoLoadMicros).toBe(10 * MS);
    expect(vegas.limit).toBe(20);
    // queue 0 ≤ threshold 1: grow by beta (6 × log10Root(20) = 6)
    vegas.update({ rtt: 10 * MS, inFlight: 10, dropped: false });
    expect(vegas.limit).toBe(26);
    // queue = ceil(26 × (1 − 10/20)) = 13 > beta 6: shrink by 1
    expect(vegas.queueSize(20 * MS)).toBe(13);
    vegas.update({ rtt: 20 * MS, inFlight: 13, dropped: false });
    expect(vegas.limit).toBe(25);
    // queue = ceil(25 × (1 − 10/12.5)) = 5: between alpha 3 and beta 6, hold
    expect(vegas.queueSize(12.5 * MS)).toBe(5);
    vegas.update({ rtt: 12.5 * MS, inFlight: 13, dropped: false });
    expect(vegas.limit).toBe(25);
    // queue = ceil(25 × 0.5 / 10.5) = ceil(1.19) = 2 < alpha 3: grow by log10Root = 1
    expect(vegas.queueSize(10.5 * MS)).toBe(2);
    vegas.update({ rtt: 10.5 * MS, inFlight: 13, dropped: false });
    expect(vegas.limit).toBe(26);
    // a drop shrinks by log10Root whatever the queue
    vegas.update({ rtt: 10 * MS, inFlight: 1, dropped: true });
    expect(vegas.limit).toBe(25);
    // under half the limit in use (12 × 2 < 25): no change
    vegas.update({ rtt: 10 * MS, inFlight: 12, dropped: false });
    expect(vegas.limit).toBe(25);
  });

  it('smooths each step when smoothing < 1', () => {
    const vegas = new VegasLimit({ random: never, smoothing: 0.5 }, 'vegas');
    vegas.update({ rtt: 10 * MS, inFlight: 10, dropped: false });
    vegas.update({ rtt: 10 * MS, inFlight: 10, dropped: false });
    // 20 × 0.5 + 26 × 0.5 = 23
    expect(vegas.limit).toBe(23);
  });

  it('re-probes rttNoLoad after probeMultiplier × limit × jitter samples', () => {
    // limit 4, jitter 0.5, multiplier 1: a probe when 0.5 × 4 ≤ samples since the last one
    const vegas = new VegasLimit(
      { initialLimit: 4, maxLimit: 4, probeMultiplier: 1, random: () => 0 },
      'vegas',
    );
    vegas.update({ rtt: 10 * MS, inFlight: 4, dropped: false });
    expect(vegas.rttNoLoadMicros).toBe(10 * MS);
    vegas.update({ rtt: 30 * MS, inFlight: 4, dropped: false }); // the probe takes it as is
    expect(vegas.rttNoLoadMicros).toBe(30 * MS);
    vegas.update({ rtt: 40 * MS, inFlight: 4, dropped: false });
    expect(vegas.rttNoLoadMicros).toBe(30 * MS);
  });

  it("uses Netflix's log10 root: log10 rounded down, at least 1, exact at powers of ten", () => {
    expect([1, 20, 99, 100, 999, 1000, 1500, 9999, 10_000, 1e15].map(log10Root)).toEqual([
      1, 1, 1, 2, 2, 3, 3, 3, 4, 15,
    ]);
  });
});

describe('Gradient2', () => {
  it('smooths the gradient of the long-term to the latest latency into the limit', () => {
    const g = new Gradient2Limit({ initialLimit: 20, minLimit: 1 }, 'gradient2');
    const step = (rtt: number, inFlight = 20) => {
      g.update({ rtt, inFlight, dropped: false });
      return [g.longRttMicros, g.limit];
    };
    // gradient 1 (capped): 20 × 0.8 + (20 + 4) × 0.2 = 20.8
    expect(step(10 * MS)).toEqual([10_000, 20]);
    // 20.8 × 0.8 + 24.8 × 0.2 = 21.6
    expect(step(10 * MS)).toEqual([10_000, 21]);
    // long = 50000 / 3 = 16666; gradient = 1.5 × 16666 / 30000 = 0.833;
    // 21.6 × 0.8 + (17.992 + 4) × 0.2 = 21.678
    expect(step(30 * MS)).toEqual([16_666, 21]);
    // long = 27500; gradient 0.687; 21.678 × 0.8 + (14.892 + 4) × 0.2 = 21.120
    expect(step(60 * MS)).toEqual([27_500, 21]);
    // long = 62000; gradient 0.465, held at 0.5; 21.120 × 0.8 + (10.560 + 4) × 0.2 = 19.808
    expect(step(200 * MS)).toEqual([62_000, 19]);
    // app-limited (5 × 2 < 19.8): the limit holds; latency back to normal: long 53333 > 2 × 10000,
    // so it decays by 5 % at once (50666)
    expect(step(10 * MS, 5)).toEqual([50_666, 19]);
  });

  it('smooths by the given share: smoothing 0.5, queueSize 2, rttTolerance 1, the gradient held at 0.5', () => {
    const g = new Gradient2Limit(
      {
        initialLimit: 10,
        minLimit: 1,
        maxLimit: 100,
        smoothing: 0.5,
        queueSize: 2,
        rttTolerance: 1,
      },
      'gradient2',
    );
    const trace = (
      [
        [10, 10],
        [20, 11],
        [40, 10],
        [100, 9],
      ] as const
    ).map(([rtt, inFlight]) => {
      g.update({ rtt: rtt * MS, inFlight, dropped: false });
      return [g.longRttMicros, g.limit];
    });
    expect(trace).toEqual([
      // gradient 1: 10 × 0.5 + (10 + 2) × 0.5 = 11
      [10_000, 11],
      // long 15000, gradient 0.75: 11 × 0.5 + (8.25 + 2) × 0.5 = 10.625
      [15_000, 10],
      // long 23333, gradient 0.583: 10.625 × 0.5 + (6.194 + 2) × 0.5 = 9.409
      [23_333, 9],
      // long 42500, gradient 0.425 held at 0.5: 9.409 × 0.5 + (4.704 + 2) × 0.5 = 8.056
      [42_500, 8],
    ]);
  });

  it('averages the first 10 samples, then exponentially with factor 2 / (longWindow + 1)', () => {
    const long = new LongAverage(600);
    for (let i = 0; i < 10; i++) long.add(10 * MS);
    expect(long.value).toBe(10 * MS);
    // (10000 × 599 + 70000 × 2) / 601 = 10199.67
    expect(long.add(70 * MS)).toBe(10_199);
  });

  it("keeps Netflix's defaults: limit 20 within [20, 200], growing by queueSize 4 × 0.2 per sample", () => {
    const g = new Gradient2Limit({}, 'gradient2');
    for (let i = 0; i < 5; i++) g.update({ rtt: 10 * MS, inFlight: 200, dropped: false });
    expect(g.limit).toBe(24);
    // Latency × 50: the limit falls to minLimit, never below, then the long-term average catches up
    const limits: number[] = [];
    for (let i = 0; i < 50; i++) {
      g.update({ rtt: 500 * MS, inFlight: 200, dropped: false });
      limits.push(g.limit);
    }
    expect(Math.min(...limits)).toBe(20);
    expect(limits.at(-1)).toBeGreaterThan(20);
  });
});

describe('Gradient2 in a sustained overload', () => {
  /**
   * A service of `slots` slots × `serviceMs`, kept full by the limit: every sample is taken with
   * the limit in flight, while requests are refused, and waits its turn in the service's queue
   * (latency = service time × in flight / slots, at least the service time).
   */
  const overloaded = (g: Gradient2Limit, samples: number, slots: number, serviceMs: number) => {
    const limits: number[] = [];
    for (let i = 0; i < samples; i++) {
      const inFlight = g.limit;
      const rtt = Math.floor((serviceMs * MS * Math.max(slots, inFlight)) / slots);
      g.update({ rtt, inFlight, dropped: false, saturated: true });
      limits.push(g.limit);
    }
    return limits;
  };
  /** The harness's service: 8 slots × 40 ms; its Gradient2 settings (bounds 1 to 32, tolerance 1.1). */
  const harness = () => {
    const g = new Gradient2Limit(
      { initialLimit: 8, minLimit: 1, maxLimit: 32, rttTolerance: 1.1 },
      'gradient2',
    );
    // Unloaded: 4 in flight, 40 ms, nothing refused: the long-term RTT learns 40 ms at 4 in flight.
    for (let i = 0; i < 20; i++) g.update({ rtt: 40 * MS, inFlight: 4, dropped: false });
    return g;
  };

  it('does not let the long-term RTT follow the queue: the limit settles at slots × rttTolerance + queueSize', () => {
    const g = harness();
    expect([g.longRttMicros, g.baselineInFlightCount]).toEqual([40 * MS, 4]);
    const limits = overloaded(g, 3000, 8, 40);
    expect(g.longRttMicros).toBe(40 * MS);
    // The fixed point of limit = limit × gradient + queueSize with gradient = 1.1 × 40 / (5 × limit)
    // is 8 × 1.1 + 4 = 12.8: the limit (whole requests) never passes 13 and ends between 12 and 13.
    expect(Math.max(...limits)).toBe(13);
    expect(new Set(limits.slice(-100))).toEqual(new Set([12, 13]));
  });

  it("creeps up to maxLimit when fed as Netflix's Gradient2 is, without the saturation signal", () => {
    // The regression the saturation signal fixes: the long-term RTT follows latency up as the queue
    // builds, the gradient returns to 1, and the limit grows by queueSize × smoothing per sample.
    const g = harness();
    const limits: number[] = [];
    for (let i = 0; i < 3000; i++) {
      const inFlight = g.limit;
      const rtt = Math.floor((40 * MS * Math.max(8, inFlight)) / 8);
      g.update({ rtt, inFlight, dropped: false });
      limits.push(g.limit);
    }
    expect(limits.at(-1)).toBe(32);
    expect(g.longRttMicros).toBeGreaterThan(150 * MS);
  });

  it('still learns a slower service: latency at no more in flight than the baseline was learnt at is taken', () => {
    // 100 slots × 10 ms, Netflix's defaults; the baseline learnt at 60 in flight, unsaturated.
    const g = new Gradient2Limit({ rttTolerance: 1.1 }, 'gradient2');
    for (let i = 0; i < 20; i++) g.update({ rtt: 10 * MS, inFlight: 60, dropped: false });
    expect(Math.max(...overloaded(g, 2000, 100, 10))).toBe(114); // 100 × 1.1 + 4
    // The service itself halves its speed during the overload: the limit first falls (its queue
    // cannot explain the latency, but it cannot tell yet); once under the 60 in flight the baseline
    // was learnt at, the latency is taken, and the limit recovers.
    const limits = overloaded(g, 6000, 100, 20);
    expect(Math.min(...limits)).toBeLessThan(30);
    // Back to the service's 100 slots, the baseline raised towards the new 20 ms (taken while
    // the limit was under 60, held once it passed 60 again).
    expect(limits.at(-1)).toBe(100);
    expect(g.longRttMicros).toBeGreaterThan(15 * MS);
    expect(g.longRttMicros).toBeLessThan(20 * MS);
  });

  it('lets a saturated sample lower the long-term RTT, never raise it past the queue', () => {
    const g = new Gradient2Limit({ initialLimit: 10, minLimit: 1, maxLimit: 10 }, 'gradient2');
    for (let i = 0; i < 10; i++) g.update({ rtt: 20 * MS, inFlight: 5, dropped: false });
    expect([g.longRttMicros, g.baselineInFlightCount]).toEqual([20 * MS, 5]);
    // saturated, 10 in flight (over the baseline's 5), slower: not taken
    g.update({ rtt: 40 * MS, inFlight: 10, dropped: false, saturated: true });
    expect(g.longRttMicros).toBe(20 * MS);
    // saturated but faster: taken, (20000 × 599 + 10000 × 2) / 601 = 19966.7
    g.update({ rtt: 10 * MS, inFlight: 10, dropped: false, saturated: true });
    expect(g.longRttMicros).toBe(19_966);
    // saturated, slower, at 5 in flight (no more than the baseline's): taken,
    // (19966 × 599 + 40000 × 2) / 601 = 20032.6
    g.update({ rtt: 40 * MS, inFlight: 5, dropped: false, saturated: true });
    expect(g.longRttMicros).toBe(20_032);
    // not saturated: taken as in Netflix's, (20032 × 599 + 40000 × 2) / 601 = 20098.4
    g.update({ rtt: 40 * MS, inFlight: 10, dropped: false });
    expect(g.longRttMicros).toBe(20_098);
  });
});

/**
 * Netflix concurrency-limits' own unit tests (VegasLimitTest, AIMDLimitTest), replayed: the
 * published sequences, with Netflix's parameters mapped onto ours (maxConcurrency → maxLimit;
 * alpha 3 and beta 6 are what log10Root gives below 100). Their samples are
 * `onSample(start, rtt, inflight, didDrop)`.
 */
describe("Netflix's published traces", () => {
  const never = () => 0.999;
  /** VegasLimitTest.create(): alpha 3, beta 6, smoothing 1, initialLimit 10, maxConcurrency 20. */
  const vegas = () =>
    new VegasLimit({ initialLimit: 10, maxLimit: 20, smoothing: 1, random: never }, 'vegas');
  const sample = (rtt: number, inFlight: number, dropped = false) => ({ rtt, inFlight, dropped });

  it('VegasLimitTest.increaseLimit: 10 → 10 (first rttNoLoad) → 16 (no queue: + beta)', () => {
    const limit = vegas();
    limit.update(sample(10 * MS, 10));
    expect(limit.limit).toBe(10);
    limit.update(sample(10 * MS, 11));
    expect(limit.limit).toBe(16);
  });

  it('VegasLimitTest.decreaseLimit: 50 ms against 10 ms is a queue of 8 > beta: 10 → 9', () => {
    const limit = vegas();
    limit.update(sample(10 * MS, 10));
    limit.update(sample(50 * MS, 11));
    expect(limit.limit).toBe(9);
  });

  it('VegasLimitTest.noChangeIfWithinThresholds: a queue of 3 (alpha) holds the limit at 10', () => {
    const limit = vegas();
    limit.update(sample(10 * MS, 10));
    expect(limit.queueSize(14 * MS)).toBe(3);
    limit.update(sample(14 * MS, 14));
    expect(limit.limit).toBe(10);
  });

  it('VegasLimitTest.largeLimitIncrease: 10 000 grows by beta = 6 × log10(10 000) = 24', () => {
    const limit = new VegasLimit(
      { initialLimit: 10_000, maxLimit: 20_000, random: never },
      'vegas',
    );
    limit.update(sample(10_000 * MS, 5000));
    expect(limit.limit).toBe(10_000);
    limit.update(sample(10_000 * MS, 6000));
    expect(limit.limit).toBe(10_024);
  });

  it('AIMDLimitTest: +1 on success at half the limit in use, × 0.9 on a drop, capped at maxLimit', () => {
    const grows = new AimdLimit({ initialLimit: 20 }, 'aimd');
    grows.update(sample(1 * MS, 10));
    expect(grows.limit).toBe(21);
    const drops = new AimdLimit({ initialLimit: 30 }, 'aimd');
    drops.update(sample(1, 0, true));
    expect(drops.limit).toBe(27);
    const capped = new AimdLimit({ initialLimit: 21, maxLimit: 21, minLimit: 1 }, 'aimd');
    capped.update(sample(1 * MS, 10));
    expect(capped.limit).toBe(21);
  });
});
