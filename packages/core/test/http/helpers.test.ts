import { type Decision, fixedWindow, memoryStore, RateLimiter } from '@floodgate/core';
import {
  appendHeaderValue,
  applyRateLimitHeaders,
  formatRateLimit,
  formatRateLimitPolicy,
  type HeaderTarget,
  normalizeIp,
  parseHeaderOptions,
  parseIpv6Subnet,
  QUOTA_EXCEEDED_TYPE,
  quotaExceededProblem,
  retryAfterSeconds,
  serializeSfString,
} from '@floodgate/core/http';

function decision(partial: Partial<Decision> & Pick<Decision, 'policies'>): Decision {
  const first = partial.policies[0]!;
  return {
    allowed: true,
    limit: first.limit,
    quota: first.quota,
    remaining: first.remaining,
    resetAfter: first.resetAfter,
    retryAfter: 0,
    delay: 0,
    window: first.window,
    policy: first.name,
    ...partial,
  };
}

const policy = (over: Partial<Decision['policies'][number]> = {}) => ({
  name: 'burst',
  allowed: true,
  limit: 10,
  quota: over.limit ?? 10,
  remaining: 9,
  resetAfter: 1000,
  retryAfter: 0,
  delay: 0,
  window: 1000,
  ...over,
});

/** A header map that behaves like Node's (case-insensitive names). */
function headerMap(initial: Record<string, string> = {}): HeaderTarget & {
  all: Map<string, string>;
} {
  const all = new Map(Object.entries(initial).map(([k, v]) => [k.toLowerCase(), v]));
  return {
    all,
    get: (name) => all.get(name.toLowerCase()),
    set: (name, value) => void all.set(name.toLowerCase(), value),
  };
}

describe('normalizeIp', () => {
  it.each([
    ['203.0.113.7', '203.0.113.7'],
    ['::ffff:203.0.113.7', '203.0.113.7'],
    ['::FFFF:203.0.113.7', '203.0.113.7'],
    ['::ffff:cb00:7107', '203.0.113.7'],
    ['0:0:0:0:0:ffff:203.0.113.7', '203.0.113.7'],
    ['2001:db8:1234:5678:9abc:def0:1234:5678', '2001:db8:1234:5600::/56'],
    ['2001:db8:1234:56ff::1', '2001:db8:1234:5600::/56'],
    ['2001:0DB8:0000:0000:0000:0000:0000:0001', '2001:db8::/56'],
    ['fe80::1%eth0', 'fe80::/56'],
    ['::1', '::/56'],
    ['::', '::/56'],
  ])('%s → %s', (input, expected) => {
    expect(normalizeIp(input)).toBe(expected);
  });

  it('groups by the configured subnet', () => {
    const ip = '2001:db8:abcd:ef12:3456:789a:bcde:f012';
    expect(normalizeIp(ip, 32)).toBe('2001:db8::/32');
    expect(normalizeIp(ip, 48)).toBe('2001:db8:abcd::/48');
    expect(normalizeIp(ip, 60)).toBe('2001:db8:abcd:ef10::/60');
    expect(normalizeIp(ip, 64)).toBe('2001:db8:abcd:ef12::/64');
  });

  it('puts two hosts of one /56 under one key and neighbouring /56s under two', () => {
    expect(normalizeIp('2001:db8:0:1::a')).toBe(normalizeIp('2001:db8:0:ff::b'));
    expect(normalizeIp('2001:db8:0:100::a')).not.toBe(normalizeIp('2001:db8:0:ff::a'));
  });

  it.each([
    '',
    'localhost',
    '1.2.3',
    '1.2.3.4.5',
    '256.1.1.1',
    '01.2.3.4',
    '1::2::3',
    '12345::',
    '1:2:3:4:5:6:7:8:9',
    '1:2:3:4:5:6:7::8',
    '1.2.3.4::',
    'g::1',
  ])('%j is not an address', (input) => {
    expect(normalizeIp(input)).toBeUndefined();
  });

  it('answers undefined for a missing address', () => {
    expect(normalizeIp(undefined)).toBeUndefined();
    expect(normalizeIp(null)).toBeUndefined();
  });
});

describe('parseIpv6Subnet', () => {
  it('defaults to 56 and accepts 32..64', () => {
    expect(parseIpv6Subnet(undefined, 'x')).toBe(56);
    expect(parseIpv6Subnet(32, 'x')).toBe(32);
    expect(parseIpv6Subnet(64, 'x')).toBe(64);
  });
  it.each([31, 65, 0, 128, 48.5, '56', null])('rejects %p', (value) => {
    expect(() => parseIpv6Subnet(value, 'rateLimit.ipv6Subnet')).toThrow(
      expect.objectContaining({
        name: 'RateLimitConfigError',
        code: 'FLOODGATE_INVALID_OPTION',
        field: 'rateLimit.ipv6Subnet',
      }),
    );
  });
});

describe('structured-field serialisation', () => {
  it('quotes and escapes Strings', () => {
    expect(serializeSfString('burst')).toBe('"burst"');
    expect(serializeSfString('a"b\\c')).toBe('"a\\"b\\\\c"');
    expect(serializeSfString('caf\u00e9%')).toBe('"caf%C3%A9%25"');
  });

  it('writes one item per policy with q and w (seconds, at least 1)', () => {
    const d = decision({
      policies: [
        policy({ name: 'per-second', limit: 5, window: 1000 }),
        policy({ name: 'per-day', limit: 1000, window: 86_400_000 }),
        policy({ name: 'tiny', limit: 2, window: 250 }),
      ],
    });
    expect(formatRateLimitPolicy(d)).toBe(
      '"per-second";q=5;w=1, "per-day";q=1000;w=86400, "tiny";q=2;w=1',
    );
  });

  it('one name with another quota or window gets its own item (items are remembered by name)', () => {
    const items = [
      [5, 1000],
      [5, 2000],
      [7, 2000],
    ].map(([limit, window]) =>
      formatRateLimitPolicy(decision({ policies: [policy({ name: 'plan', limit, window })] })),
    );
    expect(items).toEqual(['"plan";q=5;w=1', '"plan";q=5;w=2', '"plan";q=7;w=2']);
  });

  it('a quota unit replaces the window (concurrent requests)', () => {
    const d = decision({ policies: [policy({ name: 'concurrency-5', limit: 5 })] });
    expect(formatRateLimitPolicy(d, 'concurrent-requests')).toBe(
      '"concurrency-5";q=5;qu="concurrent-requests"',
    );
  });

  it('writes r and t, t rounded up, a denying policy using its retryAfter', () => {
    const d = decision({
      allowed: false,
      policies: [
        policy({ name: 'a', remaining: 3, resetAfter: 1500 }),
        policy({ name: 'b', allowed: false, remaining: 0, resetAfter: 60_000, retryAfter: 2001 }),
      ],
    });
    expect(formatRateLimit(d)).toBe('"a";r=3;t=2, "b";r=0;t=3');
  });

  it('a cost that can never be admitted reports the full reset as t', () => {
    const d = decision({
      allowed: false,
      retryAfter: -1,
      policies: [policy({ allowed: false, remaining: 10, resetAfter: 0, retryAfter: -1 })],
    });
    expect(formatRateLimit(d)).toBe('"burst";r=10;t=0');
    // Retrying cannot help: no Retry-After at all (a client honouring 1 s would retry forever).
    expect(retryAfterSeconds(d)).toBeUndefined();
  });

  it('matches the draft grammar (sf-list of sf-string items with integer params)', () => {
    const item = /^"[^"\\]*";q=\d{1,15};w=[1-9]\d{0,14}$/;
    const limiter = new RateLimiter({
      store: memoryStore(),
      policies: [
        fixedWindow({ limit: 3, window: '1s' }),
        fixedWindow({ limit: 100, window: '1h' }),
      ],
    });
    return limiter.consume('k').then((d) => {
      for (const part of formatRateLimitPolicy(d).split(', ')) expect(part).toMatch(item);
      for (const part of formatRateLimit(d).split(', ')) {
        expect(part).toMatch(/^"[^"\\]*";r=\d{1,15};t=\d{1,15}$/);
      }
    });
  });
});

describe('Retry-After', () => {
  it('is undefined when allowed', () => {
    expect(retryAfterSeconds(decision({ policies: [policy()] }))).toBeUndefined();
  });
  it('is whole seconds rounded up, never earlier than any denying policy t', () => {
    const d = decision({
      allowed: false,
      retryAfter: 1200,
      policies: [
        policy({ name: 'a', allowed: false, retryAfter: 1200, remaining: 0 }),
        policy({ name: 'b', allowed: false, retryAfter: 4000.5, remaining: 0 }),
        policy({ name: 'c', allowed: true, resetAfter: 90_000 }),
      ],
    });
    expect(retryAfterSeconds(d)).toBe(5);
    const t = formatRateLimit(d)
      .split(', ')
      .filter((item) => !item.startsWith('"c"'))
      .map((item) => Number(/t=(\d+)/.exec(item)![1]));
    for (const seconds of t) expect(retryAfterSeconds(d)!).toBeGreaterThanOrEqual(seconds);
  });
});

describe('applyRateLimitHeaders', () => {
  const allowed = decision({ policies: [policy({ name: 'one', remaining: 4, resetAfter: 800 })] });
  const denied = decision({
    allowed: false,
    retryAfter: 2500,
    remaining: 0,
    policy: 'two',
    policies: [policy({ name: 'two', allowed: false, remaining: 0, retryAfter: 2500 })],
  });

  it('sets the IETF headers by default, no legacy ones', () => {
    const h = headerMap();
    applyRateLimitHeaders(h, allowed);
    expect(Object.fromEntries(h.all)).toEqual({
      'ratelimit-policy': '"one";q=10;w=1',
      ratelimit: '"one";r=4;t=1',
    });
  });

  it('adds Retry-After on a denial', () => {
    const h = headerMap();
    applyRateLimitHeaders(h, denied);
    expect(h.all.get('retry-after')).toBe('3');
  });

  it('stacked limiters append list items and keep the larger Retry-After', () => {
    const h = headerMap({ 'Retry-After': '7' });
    applyRateLimitHeaders(h, allowed);
    applyRateLimitHeaders(h, denied);
    expect(h.all.get('ratelimit-policy')).toBe('"one";q=10;w=1, "two";q=10;w=1');
    expect(h.all.get('ratelimit')).toBe('"one";r=4;t=1, "two";r=0;t=3');
    expect(h.all.get('retry-after')).toBe('7');
  });

  it('legacy headers: limit, remaining, reset in epoch seconds; the tighter limiter wins', () => {
    const h = headerMap();
    const now = 1_700_000_000_250;
    applyRateLimitHeaders(h, allowed, parseHeaderOptions({ legacy: true }, 'h'), { now });
    expect(h.all.get('x-ratelimit-limit')).toBe('10');
    expect(h.all.get('x-ratelimit-remaining')).toBe('4');
    expect(h.all.get('x-ratelimit-reset')).toBe(String(1_700_000_001 + 1));
    applyRateLimitHeaders(h, denied, parseHeaderOptions({ legacy: true }, 'h'), { now });
    expect(h.all.get('x-ratelimit-remaining')).toBe('0');
    applyRateLimitHeaders(h, allowed, parseHeaderOptions({ legacy: true }, 'h'), { now });
    expect(h.all.get('x-ratelimit-remaining')).toBe('0');
  });

  it('each group can be switched off', () => {
    const h = headerMap();
    applyRateLimitHeaders(h, denied, parseHeaderOptions(false, 'h'));
    expect(h.all.size).toBe(0);
    applyRateLimitHeaders(h, denied, parseHeaderOptions({ standard: false }, 'h'));
    expect([...h.all.keys()]).toEqual(['retry-after']);
  });

  it('appendHeaderValue joins arrays and strings', () => {
    expect(appendHeaderValue(undefined, 'a')).toBe('a');
    expect(appendHeaderValue('', 'a')).toBe('a');
    expect(appendHeaderValue(['x', 'y'], 'a')).toBe('x, y, a');
    expect(appendHeaderValue('x', 'a')).toBe('x, a');
  });

  it('rejects bad header options', () => {
    expect(() => parseHeaderOptions('yes', 'rateLimit.headers')).toThrow(/rateLimit\.headers/);
    expect(() => parseHeaderOptions({ draft: true }, 'rateLimit.headers')).toThrow(
      expect.objectContaining({ code: 'FLOODGATE_UNKNOWN_OPTION' }),
    );
    expect(() => parseHeaderOptions({ legacy: 1 }, 'rateLimit.headers')).toThrow(
      expect.objectContaining({ field: 'rateLimit.headers.legacy' }),
    );
  });
});

describe('quotaExceededProblem', () => {
  it('is an RFC 9457 body naming the violated policies', () => {
    const d = decision({
      allowed: false,
      retryAfter: 1500,
      policy: 'b',
      policies: [
        policy({ name: 'a', allowed: true }),
        policy({ name: 'b', allowed: false, remaining: 0, retryAfter: 1500 }),
      ],
    });
    expect(quotaExceededProblem(d)).toEqual({
      type: QUOTA_EXCEEDED_TYPE,
      title: 'Quota Exceeded',
      status: 429,
      detail: 'Too many requests under policy "b"; retry in 2 s.',
      'violated-policies': ['b'],
    });
    expect(QUOTA_EXCEEDED_TYPE).toBe(
      'https://iana.org/assignments/http-problem-types#quota-exceeded',
    );
  });
});
