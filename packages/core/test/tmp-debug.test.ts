import { fixedWindow, memoryStore, RateLimiter } from '../src/index';

test('x', async () => {
  let now = 1_700_000_000_000;
  const l = new RateLimiter({
    store: memoryStore({ clock: () => now }),
    policies: fixedWindow({ limit: 1, window: 100, extendWindow: 'on-denial' }),
  });
  const out = [];
  out.push((await l.consume('k')).allowed);
  now += 50;
  out.push((await l.consume('k')).allowed);
  now += 60;
  out.push((await l.consume('k')).allowed);
  console.log(out);
});
